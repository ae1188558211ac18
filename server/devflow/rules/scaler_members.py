"""DEV402 for a GradScaler kept on an object: `self.scaler = GradScaler()` in one method, used in another,
and the checkpoint written / restored in others. The scaler's state belongs to the object, so whether it is
saved or restored is a property of the whole class, not of the method that builds the checkpoint."""

from __future__ import annotations

import ast

from devflow.analysis import torch_api as T
from devflow.analysis.walk import walk
from devflow.rules.base import Context, Finding, FixPlan, span


def _self_name(method: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    pos = method.args.posonlyargs + method.args.args
    if not pos or any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
                      for d in method.decorator_list):
        return None
    return pos[0].arg


def _member(node: ast.AST, self_name: str) -> str | None:
    """`self.attr` -> "attr"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self_name:
        return node.attr
    return None


def _methods(cls: ast.ClassDef):
    for f in cls.body:
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and (s := _self_name(f)) is not None:
            yield f, s


def _bound_members(ctx: Context, cls: ast.ClassDef, is_kind) -> dict[str, ast.Assign]:
    """Members assigned, in some method of the class, a call whose qualified name satisfies `is_kind`."""
    out: dict[str, ast.Assign] = {}
    for f, s in _methods(cls):
        for n in walk(f):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Call) and \
                    (m := _member(n.targets[0], s)) is not None and is_kind(ctx.qual(n.value.func)):
                out.setdefault(m, n)
    return out


def _member_calls(cls: ast.ClassDef, member: str, method: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method and
               _member(n.func.value, s) == member for f, s in _methods(cls) for n in walk(f))


def _is_optimizer(qual: str) -> bool:
    return qual.startswith("torch.optim.") and qual.rsplit(".", 1)[-1] in T.OPTIMIZERS


def scaler_state_findings(ctx: Context, code: str, calls, scaler: str, created: ast.Assign, saved: bool,
                          restored: bool, is_optimizer) -> list[Finding]:
    """The checkpoints among `calls` that leave out the GradScaler `scaler` (its text: `scaler`, `self.scaler`):
    `torch.save({... .state_dict() ...})` where it is never saved, `<optimizer>.load_state_dict(ckpt[...])` (the
    receiver satisfying `is_optimizer`) where it is never restored."""
    out = []
    for n in calls:
        if not saved and ctx.qual(n.func) == "torch.save" and n.args and isinstance(n.args[0], ast.Dict) and \
                any(isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "state_dict"
                    for v in n.args[0].values):
            out.append(Finding(
                code, span(n),
                f"the checkpoint saves the model/optimizer but not the GradScaler `{scaler}` (line "
                f"{created.lineno}): a resumed run restarts the loss scale from its initial value",
                [(span(created), "GradScaler created here")],
                FixPlan("append", span(n.args[0].values[-1]), text=f', "scaler": {scaler}.state_dict()',
                        title=f'Save the scaler too: "scaler": {scaler}.state_dict()')))
        elif not restored and isinstance(n.func, ast.Attribute) and n.func.attr == "load_state_dict" and \
                is_optimizer(n.func.value) and n.args and isinstance(n.args[0], ast.Subscript) and \
                isinstance(n.args[0].value, ast.Name):
            ck = n.args[0].value.id
            out.append(Finding(
                code, span(n),
                f"the optimizer is resumed but the GradScaler `{scaler}` (line {created.lineno}) is not: "
                f"its scale and growth tracker restart on resume",
                [(span(created), "GradScaler created here")],
                FixPlan("insert_after", span(n), text=f'if "scaler" in {ck}:\n    {scaler}.load_state_dict({ck}["scaler"])',
                        title="Restore the scaler state when the checkpoint has it")))
    return out


def member_scaler_findings(ctx: Context, code: str) -> list[Finding]:
    out = []
    for cls in (n for n in ctx.index.nodes if isinstance(n, ast.ClassDef)):
        scalers = _bound_members(ctx, cls, lambda q: q.endswith("GradScaler"))
        if not scalers:
            continue
        name, created = next(iter(scalers.items()))
        saved = _member_calls(cls, name, "state_dict")
        restored = _member_calls(cls, name, "load_state_dict")
        if saved and restored:
            continue
        optimizers = set(_bound_members(ctx, cls, _is_optimizer))
        for f, s in _methods(cls):
            calls = [n for n in walk(f) if isinstance(n, ast.Call)]
            out += scaler_state_findings(ctx, code, calls, f"{s}.{name}", created, saved, restored,
                                         lambda recv, s=s: _member(recv, s) in optimizers)
    return out
