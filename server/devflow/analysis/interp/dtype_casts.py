"""`Tensor.to()` called with a dtype only (`t.to(q.dtype)`, `t.to(torch.float16)`, `t.to(dtype=d)`, or a name
the running function binds only to such values: `dtype = self.conv1.weight.dtype; t.to(dtype)`): a cast that
moves nothing. The tensor stays where it is, so the result keeps the receiver's device, and discarding it
(`t.to(q.dtype)` as a statement, a no-op cast) loses no move: no device rule concerns it."""

from __future__ import annotations

import ast

from devflow.analysis.interp.frames import DTYPES


def casts_only_dtype(call: ast.Call, frame=None) -> bool:
    """`call` is `x.to(...)` whose arguments name a dtype and no device, tensor or device string (`frame`: the
    running function's, for a name bound to a dtype)."""
    if any(k.arg is None or k.arg == "device" for k in call.keywords):
        return False
    if any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if not call.args:
        return any(k.arg == "dtype" for k in call.keywords)
    return _names_dtype(call.args[0], frame)


def _names_dtype(node, frame=None) -> bool:
    """`q.dtype` (a tensor's dtype attribute) or `torch.float16` (a dtype constant of torch), or a local name the
    running function binds only to those (never a parameter: its caller may pass anything)."""
    if isinstance(node, ast.Name):
        return frame is not None and _local_dtype_name(node.id, frame)
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr == "dtype":
        return True
    return isinstance(node.value, ast.Name) and node.value.id == "torch" and node.attr in DTYPES


def _local_dtype_name(name: str, frame) -> bool:
    fn = frame.node
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or name in frame.params:
        return False
    own = list(_own_statements(fn))
    values = [st.value for st in own if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                                           for t in st.targets)]
    other = [st for st in own if isinstance(st, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)) and any(
        isinstance(t, ast.Name) and t.id == name and isinstance(t.ctx, ast.Store) for t in ast.walk(st))]
    return bool(values) and not other and all(_names_dtype(v) for v in values)


def _own_statements(fn):
    """The statements of a function's body, nested blocks included, not those of functions defined in it."""
    todo = list(fn.body)
    while todo:
        st = todo.pop()
        yield st
        if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(n for n in ast.iter_child_nodes(st) if isinstance(n, ast.stmt))
