"""What `Optimizer.load_state_dict(sd)` restores from a checkpoint mapped onto the cpu, on a project optimizer.

torch's `load_state_dict` casts the per-parameter `state` (tensors, and dicts / lists of them) to each
parameter's device, but takes the saved `param_groups` as they were loaded: only `params` is replaced by the
live parameters. A tensor the optimizer keeps in its groups (Prodigy's running `d_numerator`, created on the
parameters' device by its first step) is therefore on the cpu after a resume from `torch.load(...,
map_location="cpu")`, and meets the gradients in the next `step()`.

Which entries a saved group holds is what the optimizer's own `step()` leaves there: the checkpoint was saved
by a run that stepped. That step is run once on copies of the groups, with its findings and memoised calls
discarded; each tensor it leaves in a group is then the checkpoint's cpu copy in the live group.
"""

from __future__ import annotations

import ast
import copy

from devflow.analysis import framework_api as FW
from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.walk import walk
from devflow.analysis.lattice import CPU
from devflow.analysis.values import Obj, Origin, Val
from devflow.analysis.interp.frames import FuncRef, span_of


def restore_saved_groups(interp, node, opt: Obj, ckpt: Obj, frame, receiver: str | None = None) -> None:
    """The project optimizer `opt` restored at `node` from the cpu-mapped checkpoint `ckpt`: its groups' tensors
    and the objects in its state are on the cpu from now on. `receiver`: the optimizer's name where the load is
    (by default the receiver of the `load_state_dict` call), "" where it has none there (no fix then)."""
    info = opt.cls
    step = info.method("step") if info is not None else None
    pg = opt.attrs.get("param_groups")
    if step is None or pg is None or pg.kind != "obj" or pg.obj is None or pg.obj.kind != "list" or pg.elem is not None:
        return
    groups = [g.obj for g in pg.obj.items if g.kind == "obj" and g.obj is not None and g.obj.kind == "dict"]
    if not groups or len(groups) != len(pg.obj.items):
        return
    saved, saved_state = _after_a_step(interp, node, opt, step, groups)
    why = f"restored onto the cpu by `{interp.text(node.func)}()` at line {node.lineno}" + \
          (f", from a checkpoint {ckpt.origin.reason}" if ckpt.origin is not None and ckpt.origin.span != span_of(node) else "") + \
          ": `Optimizer.load_state_dict` keeps param_groups entries on the device they were loaded on"
    stmt = frame.stmt_stack[-1] if frame.stmt_stack else None
    origin = Origin(span_of(stmt if stmt is not None else node), why, kind="restored")
    if receiver is None:
        receiver = interp.text(node.func.value) if isinstance(node.func, ast.Attribute) else ""
    fix = _move_groups_fix(interp, stmt, frame, receiver)
    if fix is not None:
        interp.__dict__.setdefault("restore_fixes", {})[(origin.span, origin.reason)] = fix
    for live, after in zip(groups, saved):
        for key, v in after.keys.items():
            if key != "params" and v.kind == "tensor":
                live.keys[key] = Val("tensor", CPU, origin, scalar=v.scalar, dims=v.dims)
    unpickled = Origin(origin.span, why.split(":")[0] + ": `Optimizer.load_state_dict` casts the state's tensors (also in "
                       "dicts, lists and tuples) to each parameter's device, not those an object in the state holds",
                       kind="restored")
    _restore_state_objects(interp, opt, {**getattr(opt, "init_state", {}), **saved_state}, unpickled)


def _restore_state_objects(interp, opt: Obj, saved: dict, origin: Origin) -> None:
    """The per-parameter state: `load_state_dict` casts its tensors (and those in dicts, lists and tuples) to the
    parameter's device, but an object kept there (Shampoo's `ShampooPreconditioner` with its factor matrices)
    is restored as it was unpickled, its tensors on the cpu. Only where the state holds such an object does the
    restored state replace what the analysis knew (the parameters' device must be one known device)."""
    devs = {m.dev for m in opt.modules if m.kind == "module"}
    dev = next(iter(devs)) if len(devs) == 1 and None not in devs and next(iter(devs)).known else None
    objects = {k: v for k, v in saved.items() if v.kind == "obj" and v.obj is not None and v.obj.kind == "instance"}
    if dev is None or not objects:
        return
    entry = Obj("dict")
    entry.exact = True  # type: ignore[attr-defined]  # a resumed parameter's state: every key the saving run had
    for key, v in saved.items():
        if v.kind == "tensor":
            entry.keys[key] = Val("tensor", dev, Origin(origin.span, f"cast to the parameter's device, {origin.reason.split(':')[0]}"),
                                  scalar=v.scalar, dims=v.dims)
        elif key in objects:
            entry.keys[key] = Val("obj", obj=_unpickled_on_cpu(v.obj, origin))
        elif v.kind == "const":
            entry.keys[key] = v
    opt.attrs["state"] = Val("obj", obj=Obj("dict"), elem=Val("obj", obj=entry))


def _unpickled_on_cpu(obj: Obj, origin: Origin) -> Obj:
    """A copy of the object whose tensor attributes (also in lists and tuples) are on the cpu."""
    twin = copy.copy(obj)
    twin.attrs = {}
    for name, v in obj.attrs.items():
        if v.kind == "tensor":
            v = Val("tensor", CPU, origin, scalar=v.scalar, dims=v.dims)
        elif v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple"):
            items = [Val("tensor", CPU, origin, scalar=i.scalar, dims=i.dims) if i.kind == "tensor" else i for i in v.obj.items]
            elem = Val("tensor", CPU, origin, scalar=v.elem.scalar, dims=v.elem.dims) if v.elem is not None and v.elem.kind == "tensor" else v.elem
            v = Val("obj", obj=Obj(v.obj.kind, items=items), elem=elem)
        twin.attrs[name] = v
    return twin


def _after_a_step(interp, node, opt: Obj, step, groups: list) -> tuple[list, dict]:
    """Copies of the groups, and the per-parameter state entry, as the optimizer's own step leaves them."""
    copies = []
    for g in groups:
        c = Obj("dict")
        c.keys = dict(g.keys)
        c.exact = getattr(g, "exact", False)  # type: ignore[attr-defined]
        copies.append(c)
    twin = copy.copy(opt)
    twin.attrs = dict(opt.attrs)
    twin.attrs["param_groups"] = Val("obj", obj=Obj("list", items=[Val("obj", obj=c) for c in copies]))
    entry = Obj("dict")
    entry.exact = True  # type: ignore[attr-defined]  # a parameter's state before its first step
    twin.attrs["state"] = Val("obj", obj=Obj("dict"), elem=Val("obj", obj=entry))
    entry.keys = dict(getattr(opt, "init_state", {}))
    # the saving run's step: nothing of it is reported, and nothing of it stands in for the real steps (memoised
    # calls, mixes already said, functions already visited all run or count again there)
    saved = interp.memo, interp.mix_origins, interp.visited
    interp.memo, interp.mix_origins, interp.visited = dict(saved[0]), set(saved[1]), set(saved[2])
    interp.add = _discard
    try:
        interp.call_function(FuncRef(step[0], None, step[1], "method"), [], {}, Val("obj", obj=twin), node)
    finally:
        interp.memo, interp.mix_origins, interp.visited = saved
        del interp.add
    st = twin.attrs.get("state")
    return copies, dict(st.elem.obj.keys) if st is not None and st.elem is not None and st.elem.obj is not None else {}


def _move_groups_fix(interp, stmt, frame, opt: str) -> FixPlan | None:
    """After the load: each group's tensors onto its parameters' device. Offered only where the loop's names
    are free in the function (a fix must not rebind the user's `group` or `value`)."""
    if stmt is None or not opt:
        return None
    names = {n.id for n in walk(frame.node) if isinstance(n, ast.Name)}
    if names & {"group", "key", "value"} or interp.index.aliases.get("torch") != "torch":
        return None
    loop = (f"for group in {opt}.param_groups:\n"
            f"    for key, value in group.items():\n"
            f"        if torch.is_tensor(value):\n"
            f"            group[key] = value.to(group[\"params\"][0].device)")
    return FixPlan("insert_after", span_of(stmt), text=loop,
                   title="Move the restored param_groups tensors to the parameters' device")


def _discard(f: Finding) -> Finding:
    return f


def restored_by_library(interp, node, q: str, args, kwargs, frame) -> None:
    """A library function that restores the optimizers it is given from a checkpoint it loads onto the cpu
    (generated: frameworks.json optimizer_restorers; timm's `resume_checkpoint(model, path, optimizer=opt)`)."""
    loaded = Obj("ckpt", qual=q, origin=Origin(span_of(node), f"loaded onto the cpu by `{interp.text(node.func)}()`"))
    for param, at in FW.OPTIMIZER_RESTORERS[q].items():
        given, expr = (kwargs[param], _keyword(node, param)) if param in kwargs else \
            (args[at], node.args[at]) if at < len(args) and at < len(node.args) else (None, None)
        if given is not None and given.kind == "obj" and given.obj is not None and getattr(given.obj, "project_optimizer", False):
            name = interp.text(expr) if expr is not None and isinstance(expr, (ast.Name, ast.Attribute)) else ""
            restore_saved_groups(interp, node, given.obj, loaded, frame, receiver=name)


def _keyword(node, name: str):
    return next((k.value for k in node.keywords if k.arg == name), None)
