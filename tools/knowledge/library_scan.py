"""Tables about libraries that cannot be installed next to torch 2.13 here, read from their released
wheels by an ast scan (never imported, never run): methods that build new submodules on `self`
after construction (and whether the new module takes the old one's device), loaders whose
`device` / `map_location` defaults to the cpu, and loaders that dispatch with `device_map`."""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _modules(wheel: Path):
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if name.endswith((".py", ".pyi")) and ".dist-info/" not in name:
                try:
                    tree = ast.parse(z.read(name).decode("utf-8", "replace"))
                except SyntaxError:
                    continue
                mod = name.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")
                yield mod, tree


def _last(e: ast.expr) -> str | None:
    if isinstance(e, ast.Attribute):
        return e.attr
    if isinstance(e, ast.Name):
        return e.id
    return None


def _keeps_device(call: ast.Call, method: ast.AST) -> bool:
    """The new module is built with device= (or factory_kwargs carrying it), or moved with .to()."""
    # names the method binds from an expression about devices (`dd = get_device_dtype(self)`)
    about_device = {t.id for n in ast.walk(method) if isinstance(n, ast.Assign) and "device" in ast.unparse(n.value)
                    for t in n.targets if isinstance(t, ast.Name)}
    for k in call.keywords:
        if k.arg == "device":
            return True
        if k.arg is None and (isinstance(k.value, ast.Name) and k.value.id in about_device or "kwargs" in ast.unparse(k.value)):
            return True
    return any(isinstance(n, ast.Call) and _last(n.func) in ("to", "type_as") for n in ast.walk(method))


def _methods(tree: ast.Module):
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for f in cls.body:
            if isinstance(f, FUNCS) and not (f.name.startswith("__") and f.name.endswith("__")):
                yield cls.name, f


def submodule_builders(wheel: Path, stateful: set[str]) -> dict:
    direct: dict[str, dict[str, set[str]]] = {}  # method -> {"default"|"keeps": {Class}}
    calls: dict[tuple[str, str], set[str]] = {}  # (Class, method) -> methods it calls on self's members
    for _mod, tree in _modules(wheel):
        for cls, f in _methods(tree):
            for n in ast.walk(f):
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                                     and t.value.id == "self" for t in n.targets):
                    for c in ast.walk(n.value):
                        if isinstance(c, ast.Call) and _last(c.func) in stateful:
                            kind = "keeps" if _keeps_device(c, f) else "default"
                            direct.setdefault(f.name, {}).setdefault(kind, set()).add(cls)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                    root = n.func.value
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    if isinstance(root, ast.Name) and root.id == "self" and root is not n.func.value:
                        calls.setdefault((cls, f.name), set()).add(n.func.attr)
    # one call deeper: a method that calls a builder on a member (`self.head.reset(n)`) builds too
    builders = {name: {k: set(v) for k, v in kinds.items()} for name, kinds in direct.items()}
    for (cls, name), callees in calls.items():
        for callee in callees & set(builders):
            if callee != name and callee != "forward":
                for kind, _classes in builders[callee].items():
                    direct.setdefault(name, {}).setdefault(kind, set()).add(cls)
    out = {}
    for name, kinds in sorted(direct.items()):
        if name.startswith("_") or name == "forward":
            continue
        d, k = sorted(kinds.get("default", ())), sorted(kinds.get("keeps", ()))
        out[name] = {"placement": "default" if d and not k else "keeps" if k and not d else "mixed",
                     "default": d, "keeps": k}
    return out


def _param_default(f: ast.AST, name: str):
    a = f.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for p, d in list(zip(pos, defaults)) + list(zip(a.kwonlyargs, a.kw_defaults)):
        if p.arg == name:
            return True, (d.value if isinstance(d, ast.Constant) else ast.unparse(d) if d is not None else "<required>")
    return False, None


def loaders(wheel: Path) -> tuple[dict, list]:
    cpu_default, device_map = {}, []
    for mod, tree in _modules(wheel):
        scopes = [("", n) for n in tree.body if isinstance(n, FUNCS)] + [(f"{c}.", f) for c, f in _methods(tree)]
        for prefix, f in scopes:
            q = f"{mod}.{prefix}{f.name}"
            for p in ("device", "map_location"):
                has, default = _param_default(f, p)
                if has and default == "cpu" and ("load" in f.name or "open" in f.name):
                    cpu_default[q] = {"param": p, "default": "cpu"}
            has_dm, _ = _param_default(f, "device_map")
            pops = any(isinstance(n, ast.Call) and _last(n.func) in ("pop", "get") and n.args
                       and isinstance(n.args[0], ast.Constant) and n.args[0].value == "device_map"
                       and isinstance(n.func, ast.Attribute) and _last(n.func.value) == "kwargs"
                       for n in ast.walk(f))
            if (has_dm or pops) and not f.name.startswith("_"):
                device_map.append(q)
    return cpu_default, sorted(set(device_map))


def scheduler_factories(wheel: Path, schedulers: set[str]) -> list:
    """Public module-level functions that return a torch lr scheduler (`return LambdaLR(optimizer, f)`), or
    the result of another such function of the wheel (`get_scheduler` -> `get_linear_schedule_with_warmup`)."""
    found: set[str] = set()
    funcs = [(mod, f) for mod, tree in _modules(wheel) for f in tree.body if isinstance(f, FUNCS)]
    while True:
        before = len(found)
        for mod, f in funcs:
            rets = [n.value for n in ast.walk(f) if isinstance(n, ast.Return) and n.value is not None]
            if not f.name.startswith("_") and rets and all(
                    isinstance(r, ast.Call) and (_last(r.func) in schedulers or _last(r.func) in
                                                 {q.rsplit(".", 1)[-1] for q in found}) for r in rets):
                found.add(f"{mod}.{f.name}")
        if len(found) == before:
            return sorted(found)


def instance_constructors(wheel: Path) -> dict:
    """Public classmethods that return an instance of the class they are called on (`cls(...)`, directly or
    through another classmethod it calls on `cls`, looked up along the class's bases in the wheel):
    `MyNet.from_pretrained(...)` on a project class deriving from such a class builds a `MyNet` (its own
    `__init__` runs). Method name -> the classes (by name) on which it does so, and the keywords that
    place the result elsewhere than where construction leaves it (device / device_map / map_location)."""
    classes: dict[str, tuple[list[str], dict]] = {}  # name -> (base names, {classmethod: (builds, via, params)})
    for _mod, tree in _modules(wheel):
        for c in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            methods = {}
            for f in c.body:
                if not isinstance(f, FUNCS) or not f.args.args:
                    continue
                if not any(_last(d) == "classmethod" for d in f.decorator_list):
                    methods[f.name] = None  # a plain method of this name hides a base's classmethod
                    continue
                first = f.args.args[0].arg
                calls = [n for n in ast.walk(f) if isinstance(n, ast.Call)]
                builds = any(isinstance(n.func, ast.Name) and n.func.id == first for n in calls)
                via = {n.func.attr for n in calls if isinstance(n.func, ast.Attribute)
                       and isinstance(n.func.value, ast.Name) and n.func.value.id == first}
                params = {a.arg for a in f.args.args + f.args.kwonlyargs} & _PLACING
                methods[f.name] = (builds, via, params)
            classes.setdefault(c.name, ([_last(b) or "" for b in c.bases], methods))

    def lookup(name: str, method: str, seen: tuple = ()):
        if name not in classes or name in seen:
            return None
        bases, methods = classes[name]
        if method in methods:
            return methods[method]
        for b in bases:
            found = lookup(b, method, seen + (name,))
            if found is not None:
                return found
        return None

    def builds(name: str, method: str, depth: int = 0) -> set[str] | None:
        """The placing keywords along the way when `name.method(...)` returns a `name`, else None."""
        found = lookup(name, method)
        if found is None or depth > 4:
            return None
        direct, via, params = found
        if direct:
            return set(params)
        for v in sorted(via):
            inner = builds(name, v, depth + 1)
            if inner is not None:
                return params | inner
        return None

    out: dict[str, dict] = {}
    for name in sorted(classes):
        if name.startswith("_"):
            continue
        for method in sorted({m for n in _ancestry(classes, name) for m, v in classes[n][1].items() if v}):
            if method.startswith("_"):
                continue
            placing = builds(name, method)
            # kept: torch modules (a base named Module up the wheel's hierarchy) and classes whose builder
            # places what it builds (a mixin's map_location); configs, tokenizers and the like hold no tensors
            if placing is not None and (placing or "Module" in {b for n in _ancestry(classes, name)
                                                                 for b in classes[n][0]}):
                entry = out.setdefault(method, {"classes": [], "placing": set()})
                entry["classes"].append(name)
                entry["placing"] |= placing
    return {m: {"classes": e["classes"], "placing": sorted(e["placing"])} for m, e in sorted(out.items())}


_PLACING = {"device", "device_map", "map_location"}


def _ancestry(classes: dict, name: str) -> list[str]:
    out, todo = [], [name]
    while todo:
        n = todo.pop()
        if n in classes and n not in out:
            out.append(n)
            todo.extend(classes[n][0])
    return out


def device_factories(wheel: Path) -> dict:
    """Public functions that create a tensor where their `device` parameter says: annotated to return a Tensor,
    taking no tensor argument (nothing else to be placed by), with a `device` parameter defaulting to None
    (the default device, as torch's factories do) or "cpu" (`kornia.create_meshgrid(h, w, device=None)`).
    By package and function name -> the parameter's position and default; a name defined twice in the
    package with different signatures is left out."""
    found: dict[str, dict | None] = {}
    for mod, tree in _modules(wheel):
        for f in tree.body:
            if not isinstance(f, FUNCS) or f.name.startswith("_") or f.returns is None:
                continue
            if ast.unparse(f.returns) not in ("Tensor", "torch.Tensor"):
                continue
            params = f.args.posonlyargs + f.args.args
            if any(a.annotation is not None and "Tensor" in ast.unparse(a.annotation) for a in params + f.args.kwonlyargs):
                continue
            has, default = _param_default(f, "device")
            if not has or default not in (None, "None", "cpu"):
                continue
            pos = next((i for i, a in enumerate(params) if a.arg == "device"), None)
            entry = {"position": pos, "default": "cpu" if default == "cpu" else None}
            key = f"{mod.split('.', 1)[0]}.{f.name}"
            found[key] = entry if found.get(key, entry) == entry else None
    return {k: v for k, v in sorted(found.items()) if v is not None}


def scan(wheel: Path, stateful: set[str], schedulers: set[str] = frozenset()) -> dict:
    cpu_default, device_map = loaders(wheel)
    return {"submodule_builders": submodule_builders(wheel, stateful), "cpu_default_loaders": cpu_default,
            "device_map_loaders": device_map,
            "device_map_methods": sorted({q.rsplit(".", 1)[-1] for q in device_map}),
            "scheduler_factories": scheduler_factories(wheel, schedulers),
            "instance_constructors": instance_constructors(wheel),
            "device_factories": device_factories(wheel)}
