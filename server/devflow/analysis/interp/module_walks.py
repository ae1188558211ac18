"""`module.modules()` / `module.children()` of a module whose whole tree the engine built: the modules themselves.

`modules()` yields the module, then every submodule registered under it, depth first, each once; `children()`
the modules registered directly on it. When every module of the tree is of a project class or of torch.nn
(whose submodules are those its constructor or the project registered: all of them known), and there are
few of them, the loop over the call runs once per module: `for m in model.modules(): if isinstance(m,
QuantModuleBase): m.freeze_qparams()` freezes each wrapper (a quantizer's convert pass). Only when a project
module sits below the one walked (whose own methods a loop would run): a tree of torch layers keeps the
reading "some submodule of the model", under which the parameters a loop gathers from them (parameter
groups for an optimizer) are the model's, moved with it. Otherwise (a library model, whose submodules are
not known, a module checked on its own, or a large tree) None: the caller keeps "some submodule"."""

from __future__ import annotations

from devflow.analysis.values import Obj, Val

MAX_WALKED = 8  # as many as a loop runs its body for one by one (expressions.MAX_PER_ITEM)


def _registered(obj: Obj) -> list[Obj]:
    subs = [obj.attrs.get(name) for name in obj.children] + [*obj.items, *obj.keys.values()]
    out: list[Obj] = []
    for v in subs:
        if v is not None and v.kind == "module" and v.obj is not None and all(v.obj is not o for o in out):
            out.append(v.obj)
    return out


def _known_structure(obj: Obj) -> bool:
    return not getattr(obj, "standalone", False) and (
        obj.cls is not None or (obj.qual or "").startswith("torch.nn."))


def walked_modules(obj: Obj, name: str) -> Val | None:
    if name == "children":
        found = _registered(obj)
        if not _known_structure(obj) or not all(_known_structure(o) for o in found):
            return None
    else:
        found, seen, todo = [], set(), [obj]
        while todo:
            o = todo.pop(0)
            if id(o) in seen:
                continue
            if not _known_structure(o) or len(found) >= MAX_WALKED:
                return None
            seen.add(id(o))
            found.append(o)
            todo[:0] = _registered(o)  # depth first: a module's submodules before its next sibling
    if not found or len(found) > MAX_WALKED or not any(o.cls is not None for o in found if o is not obj):
        return None
    return Val("obj", obj=Obj("list", items=[Val("module", obj=o) for o in found]))
