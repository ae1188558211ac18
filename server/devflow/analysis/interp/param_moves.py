"""A batch object a function moves in place is moved for its caller too.

`def _forward(self, batch): return self.model(batch.to(self.device))` moves the torch_geometric Batch (or
BatchEncoding) its caller passed: `Data.to` changes that object and returns it. After
`out = self._forward(batch)` the caller's `batch` is the moved batch (fairchem's OCPTrainer computes the loss
from it next). The callee notes each parameter it moved so (`note_param_moved`); the call rebinds the
caller's argument names (`rebind_moved_args`), also when the call's result comes from the memo.
"""

from __future__ import annotations

import ast

from devflow.analysis.values import Val


def note_param_moved(frame, name: str, val: Val) -> None:
    """`name`, a parameter of the function running in `frame`, was moved in place to `val`."""
    if name in frame.params and name not in frame.assigned:
        if frame.moved_params is None:
            frame.moved_params = {}
        frame.moved_params[name] = val


def moved_at_exit(frame) -> dict[str, Val] | None:
    """The parameters moved in place, each as the function leaves it: a move on one branch only (joined
    with the unmoved batch of the other path) gives the caller that join, not the moved batch."""
    if not frame.moved_params:
        return None
    return {p: frame.env.get(p, v) for p, v in frame.moved_params.items()}


def rebind_moved_args(caller, call_node, params: list[str], bound_self: bool, moved: dict[str, Val] | None) -> None:
    """Rebind, in the caller's frame, each plain name passed for a parameter the callee moved in place."""
    if not moved or caller is None or not isinstance(call_node, ast.Call):
        return
    offset = 1 if bound_self else 0
    passed: dict[str, ast.expr] = {}
    for i, a in enumerate(call_node.args):
        if isinstance(a, ast.Starred):
            break
        if i + offset < len(params):
            passed[params[i + offset]] = a
    for kw in call_node.keywords:
        if kw.arg is not None:
            passed[kw.arg] = kw.value
    for p, val in moved.items():
        arg = passed.get(p)
        if isinstance(arg, ast.Name) and arg.id in caller.env:
            caller.env[arg.id] = val.with_text(arg.id)
            note_param_moved(caller, arg.id, val)  # the caller's own parameter: moved for its caller in turn
