"""`Tensor.to()` called with a dtype only (`t.to(q.dtype)`, `t.to(torch.float16)`, `t.to(dtype=d)`): a cast that
moves nothing. The tensor stays where it is, so the result keeps the receiver's device, and discarding it
(`t.to(q.dtype)` as a statement, a no-op cast) loses no move: no device rule concerns it."""

from __future__ import annotations

import ast

from devflow.analysis.interp.frames import DTYPES


def casts_only_dtype(call: ast.Call) -> bool:
    """`call` is `x.to(...)` whose arguments name a dtype and no device, tensor or device string."""
    if any(k.arg is None or k.arg == "device" for k in call.keywords):
        return False
    if any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if not call.args:
        return any(k.arg == "dtype" for k in call.keywords)
    return _names_dtype(call.args[0])


def _names_dtype(node) -> bool:
    """`q.dtype` (a tensor's dtype attribute) or `torch.float16` (a dtype constant of torch)."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr == "dtype":
        return True
    return isinstance(node.value, ast.Name) and node.value.id == "torch" and node.attr in DTYPES
