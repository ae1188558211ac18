"""Metric libraries (torchmetrics) -> frameworks.json `metrics`, an ast scan of the released wheels, never imported.

- `classes`: the library's torch.nn.Module classes (`torchmetrics.Accuracy`, `MetricCollection`, the Metric base
  users subclass), by defining module and by every re-export, relative or by the package's own full name. Built
  on the cpu, a metric's states move only with `.to()` (or with the module that holds it).
- `state_registrars`: methods of those classes that set on `self` an attribute named by one parameter to the value
  of another (`add_state(name, default)` does `setattr(self, name, default)`): a project metric's states.
- `syncing_methods`: public methods that gather the metric's states over a torch.distributed process group when
  one is initialised: those whose calls (through the class's own methods, the library's functions, and a
  function a parameter defaults to) reach a collective, and those `__init__` wraps in such a method
  (`self.compute = self._wrap_compute(self.compute)`). A path into a wrapped method from another method is not
  counted: the wrapper syncs only when its own caller asks (forward computes the batch value with the sync flag
  set to `dist_sync_on_step`, off by default).
- `forward_runs`: the public methods a metric's call (`forward(*args, **kwargs)`) hands its arguments to, through
  the class's own methods (`update`): a project metric called as `metric(preds, target)` runs its `update` on them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from knowledge.frameworks import _class_bases, _imports, _modules, _reexports, torch_module_subclasses


def _follow(alias: dict[str, str]) -> dict[str, str]:
    """Re-export chains to where each name is defined (`torchmetrics.Accuracy` -> `torchmetrics.classification.Accuracy`
    -> `torchmetrics.classification.accuracy.Accuracy`); a cycle stops."""
    out = {}
    for a, q in alias.items():
        seen = {a}
        while q in alias and q not in seen:
            seen.add(q)
            q = alias[q]
        out[a] = q
    return out


def _module_classes(trees: dict, alias: dict[str, str]) -> set[str]:
    return torch_module_subclasses(_class_bases(trees), alias)  # Module, ModuleDict (MetricCollection) ...


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _state_registrars(classes: dict[str, ast.ClassDef]) -> dict[str, dict]:
    """method -> {"name": i, "value": j, "value_kw": parameter} (positions after self)."""
    out = {}
    for cls in classes.values():
        for name, f in _methods(cls).items():
            params = [a.arg for a in f.args.args[1:]]
            for c in ast.walk(f):
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "setattr" and len(c.args) == 3 \
                        and isinstance(c.args[0], ast.Name) and c.args[0].id == "self" \
                        and all(isinstance(a, ast.Name) and a.id in params for a in c.args[1:]):
                    out[name] = {"name": params.index(c.args[1].id), "value": params.index(c.args[2].id),
                                 "value_kw": c.args[2].id}
    return dict(sorted(out.items()))


def _syncing(trees: dict, classes: dict[str, ast.ClassDef], collectives: set[str]) -> list[str]:
    # library functions (module level) that reach a collective, through other library functions
    funcs: dict[str, ast.FunctionDef] = {}
    imports: dict[str, dict[str, str]] = {}
    for mod, tree in trees.items():
        m = mod.removesuffix(".__init__")
        imports[m] = _imports(mod, tree)
        for f in tree.body:
            if isinstance(f, ast.FunctionDef):
                funcs[f"{m}.{f.name}"] = f

    def names(node: ast.AST, mod: str) -> set[str]:
        """Qualified names a definition mentions (calls, references, parameter defaults)."""
        out = set()
        for n in ast.walk(node):
            if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(getattr(n, "ctx", None), ast.Load):
                text = ast.unparse(n)
                head, _, rest = text.partition(".")
                imp = imports[mod]
                out.add(f"{imp[head]}.{rest}".rstrip(".") if head in imp else f"{mod}.{text}")
        return out

    def is_collective(q: str) -> bool:
        return q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in collectives

    reach: set[str] = set()
    changed = True
    while changed:
        changed = False
        for q, f in funcs.items():
            if q not in reach and any(is_collective(n) or n in reach for n in names(f, q.rsplit(".", 1)[0])):
                reach.add(q)
                changed = True
    out: set[str] = set()
    for cq, cls in classes.items():
        mod = cq.rsplit(".", 1)[0]
        methods = _methods(cls)
        init = methods.get("__init__")
        wrapped = set()
        if init is not None:  # `self.compute = self._wrap_compute(self.compute)`
            for st in ast.walk(init):
                if isinstance(st, (ast.Assign, ast.AnnAssign)) and isinstance(st.value, ast.Call):
                    target = st.targets[0] if isinstance(st, ast.Assign) else st.target
                    call = st.value
                    if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self" and \
                            isinstance(call.func, ast.Attribute) and ast.unparse(call.func.value) == "self" and \
                            any(ast.unparse(a) == f"self.{target.attr}" for a in call.args):
                        wrapped.add((target.attr, call.func.attr))
        syncs: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, f in methods.items():
                if name in syncs:
                    continue
                called = {n.func.attr for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                          and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"}
                if called & {w for w, _ in wrapped}:
                    continue  # into a wrapped method: synced only when that caller asks
                if any(is_collective(n) or n in reach for n in names(f, mod)) or called & syncs:
                    syncs.add(name)
                    changed = True
        out |= {n for n in syncs if not n.startswith("_")}
        out |= {w for w, wrapper in wrapped if wrapper in syncs}
    return sorted(out)


def _forward_runs(classes: dict[str, ast.ClassDef]) -> list[str]:
    """The public methods a metric's call runs with the call's arguments: `forward(*args, **kwargs)` and the
    class's own methods it hands them to (`self._forward_full_state_update(*args, **kwargs)`) call
    `self.update(*args, **kwargs)`. A project metric defines `update`; calling it (`metric(preds, target)`)
    runs its `update` on those arguments."""
    out: set[str] = set()
    defined = {name for cls in classes.values() for name in _methods(cls)}  # not `self.metric(*args)`, a submodule
    for cls in classes.values():
        methods = _methods(cls)
        todo, seen = ["forward"], set()
        while todo:
            f = methods.get(todo.pop())
            if f is None or f.name in seen or f.args.vararg is None:
                continue
            seen.add(f.name)
            star, kw = f.args.vararg.arg, f.args.kwarg.arg if f.args.kwarg is not None else None
            for c in ast.walk(f):
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name) \
                        and c.func.value.id == "self" and any(isinstance(a, ast.Starred) and ast.unparse(a.value) == star
                                                              for a in c.args) \
                        and (kw is None or any(k.arg is None and ast.unparse(k.value) == kw for k in c.keywords)):
                    (out.add if not c.func.attr.startswith("_") else todo.append)(c.func.attr)
    return sorted(out & defined)


def metrics(wheel: Path, package: str, collectives: set[str]) -> dict:
    trees = _modules(wheel, f"{package}/")
    alias = _follow(_reexports(trees, absolute=True))
    modules = _module_classes(trees, alias)
    defs = {}
    for mod, tree in trees.items():
        m = mod.removesuffix(".__init__")
        for c in tree.body:
            if isinstance(c, ast.ClassDef) and f"{m}.{c.name}" in modules:
                defs[f"{m}.{c.name}"] = c
    # the root of the hierarchy: the module classes that define the registrar / sync machinery themselves
    public = modules | {a for a, q in alias.items() if q in modules}
    return {"classes": sorted(q for q in public if not any(p.startswith("_") for p in q.split("."))),
            "state_registrars": _state_registrars(defs),
            "syncing_methods": _syncing(trees, defs, collectives),
            "forward_runs": _forward_runs(defs)}
