"""`device != next(model.parameters()).device`: two devices compared. When they can never be the same on a
GPU machine (the cpu and an accelerator) the comparison is decided, so the branch it guards is known
(timm's ModelEmaV3 moves its copy to `device='cpu'` only when that differs from the model's device).
Devices that may be equal (two cuda devices, a device of unknown index) stay undecided."""

from __future__ import annotations

import ast

from devflow.analysis.lattice import Dev, concrete, definitely_differ


def _device(v) -> Dev | None:
    if v.kind == "device":
        return v.dev
    if v.kind == "const" and isinstance(v.const, str):
        return concrete(v.const)
    return None


def compare_devices(node: ast.Compare, vals) -> bool | None:
    if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)) or len(vals) != 2:
        return None
    a, b = _device(vals[0]), _device(vals[1])
    if a is None or b is None or not (vals[0].kind == "device" or vals[1].kind == "device"):
        return None  # two strings are compared as strings elsewhere
    if definitely_differ(a, b):
        return isinstance(node.ops[0], ast.NotEq)
    return None
