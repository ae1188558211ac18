"""A same-file function given a tensor the object holds, which an explicit move put on the cpu (diffusers'
UniPC: `self._sigma_to_alpha_sigma_t(self.sigmas[si])` after `self.sigmas = self.sigmas.to("cpu")`), and
returning only what it computed from it (`return 1 - sigma, sigma`), does not choose the device of its result:
the result keeps the origin of that move, and a finding is anchored at the move rather than at the call."""

from __future__ import annotations

import ast

from devflow.analysis.values import Val


def _tensors(v: Val) -> list[Val]:
    if v.kind == "tensor":
        return [v]
    if v.kind == "obj" and v.obj is not None and v.obj.kind in ("tuple", "list"):
        return [i for i in v.obj.items if i.kind == "tensor"]
    return []


def _state_read(node: ast.AST) -> bool:
    """`self.sigmas`, `self.sigmas[i]`: a value read off an object, not computed at the call."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute)


def returns_its_arguments(call: ast.Call, out: Val, args) -> bool:
    """Every tensor `out` holds is on the cpu with the origin of an explicit move of a state argument."""
    given = {t.origin for a, n in zip(args, call.args) if a is not None and _state_read(n) for t in _tensors(a)
             if t.origin is not None and t.origin.kind == "placed"}
    returned = _tensors(out)
    return bool(given) and bool(returned) and all(
        t.origin in given and t.dev is not None and t.dev.is_cpu for t in returned)
