"""Library functions that build what users then place and feed, read by an ast scan of a released wheel or
sdist (never imported, never run):

- a model: a torch.nn.Module instance (`open_clip.create_model(name)`, `whisper.load_model(name)`,
  `segment_anything.build_sam_vit_h(checkpoint)`, `EncodecModel.encodec_model_24khz()`), placed on the
  function's `device` parameter when it has one and uses it (default: the parameter's default, "auto" for
  `"cuda" if torch.cuda.is_available() else "cpu"` or a None filled in that way), else where the default
  device is;
- a tuple holding such values (`model, preprocess_train, preprocess_val = create_model_and_transforms(...)`);
- image preprocessing: a torchvision `Compose` with a ToTensor, which makes cpu tensors from images;
- a tokenizer: an instance of a class whose `__call__` takes only host values (strings, ints) and is
  annotated to return a tensor, with no device anywhere in the class: it makes its tensors on the cpu;
- a cpu tensor: a function taking only host values annotated to return a tensor, building it without a
  device (`open_clip.tokenize(texts)`), or with no device anywhere in it (`torchvision.io.read_image(path)`);
- a registry: a module-level dict whose values are all such functions of one kind (`sam_model_registry`):
  listed as `name[]`, what calling one of its values gives;
- an object moved by copy: an instance of a class whose `.to(device)` returns a moved copy and leaves the
  object where it was (DGL's `DGLGraph.to`: `ret = copy.copy(self)` ...; torchvision's `ImageList`), unlike
  `nn.Module.to`. A function building one (`dgl.graph(data)`, `dgl.batch(graphs)`) puts it on its `device`
  parameter when it uses it, else it is where the data it is built from is; the class itself is listed too.

What a function returns is read from its `return` statements: a call of a module class (the package's or
torch.nn's), of another such function, `.to()` / `.eval()` of a model, a name bound to one of those on
every path to the return (a small reaching-definitions pass), a tuple of them. Every return must agree."""

from __future__ import annotations

import ast
from pathlib import Path

from knowledge.frameworks import _imports, _modules, _public_reexports, module_classes, stateful_modules

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_MODULE_KEEPING = ("to", "cuda", "eval", "train", "float", "half", "double", "bfloat16", "requires_grad_")
_TO_TENSOR = ("ToTensor", "PILToTensor")
_TORCH_FACTORIES = ("torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.tensor", "torch.arange",
                    "torch.LongTensor", "torch.from_numpy", "torch.as_tensor")
_HOST_ANNOTATIONS = ("str", "int", "bool", "float", "List", "list", "Union", "Optional", "Sequence", "Tuple", "None",
                     "Path", "BinaryIO", "bytes")
_HOST_ATTRIBUTES = ("os.PathLike", "pathlib.Path", "typing.BinaryIO")  # `Union[BinaryIO, str, os.PathLike]`


def _is_none(e) -> bool:
    return isinstance(e, ast.Constant) and e.value is None


def _tensor_annotation(a) -> bool:
    """`-> torch.LongTensor`, `-> Union[torch.IntTensor, torch.LongTensor]`: every type named is a tensor."""
    if a is None:
        return False
    names = [n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(a)
             if isinstance(n, (ast.Attribute, ast.Name)) and not (isinstance(n, ast.Name) and n.id == "torch")]
    names = [n for n in names if n not in ("Union", "Optional")]
    return bool(names) and all(n in ("Tensor", "LongTensor", "IntTensor") for n in names)


def _host_params(f, enums: frozenset = frozenset()) -> bool:
    """Every parameter after self is annotated with host types only (strings, ints, paths, lists of them, the
    package's enums such as torchvision's `ImageReadMode`)."""
    params = f.args.args[1:] if f.args.args and f.args.args[0].arg in ("self", "cls") else f.args.args
    params = [*params, *f.args.kwonlyargs]
    return bool(params) and all(p.annotation is not None and _host_annotation(p.annotation, enums) for p in params)


def _host_annotation(a, enums: frozenset) -> bool:
    if isinstance(a, ast.Attribute):
        return ast.unparse(a) in _HOST_ATTRIBUTES or _host_annotation(a.value, enums)
    if isinstance(a, ast.Name):
        return a.id in _HOST_ANNOTATIONS or a.id in enums
    return all(_host_annotation(c, enums) for c in ast.iter_child_nodes(a) if isinstance(c, (ast.expr, ast.Name)))


def _tensor_and_host_tuple(a) -> list | None:
    """`-> Tuple[torch.Tensor, int]` (audio and its sample rate): for each item, whether it is a tensor; None
    for any other annotation, or a tuple without a tensor."""
    if not (isinstance(a, ast.Subscript) and isinstance(a.value, ast.Name) and a.value.id in ("Tuple", "tuple")
            and isinstance(a.slice, ast.Tuple)):
        return None
    items = [True if _tensor_annotation(e) else False if _host_annotation(e, frozenset()) else None for e in a.slice.elts]
    return items if None not in items and any(items) else None


def _device_default(f) -> str | None:
    """The `device` parameter's default: "cpu" / a device string, "auto" when it is (or a None default is
    filled in as) `"cuda" if torch.cuda.is_available() else "cpu"`; None when unknown or not given."""
    args = f.args.args + f.args.kwonlyargs
    defaults = dict(zip([a.arg for a in f.args.args][len(f.args.args) - len(f.args.defaults):], f.args.defaults))
    defaults.update({a.arg: d for a, d in zip(f.args.kwonlyargs, f.args.kw_defaults) if d is not None})
    if not any(a.arg == "device" for a in args):
        return None
    d = defaults.get("device")

    def auto(e) -> bool:
        return isinstance(e, ast.IfExp) and "cuda.is_available" in ast.unparse(e.test)

    if isinstance(d, ast.Constant) and isinstance(d.value, str):
        return d.value
    if d is not None and auto(d):
        return "auto"
    if d is not None and _is_none(d):
        for n in ast.walk(f):  # `if device is None: device = "cuda" if torch.cuda.is_available() else "cpu"`
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "device" for t in n.targets) \
                    and auto(n.value):
                return "auto"
    return None


def _decided(test, consts: dict):
    """`if is_train:` / `if not is_train:` on a parameter the caller gave a constant: True / False, else None."""
    neg = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    name = test.operand if neg else test
    if isinstance(name, ast.Name) and name.id in consts:
        return (not consts[name.id]) if neg else bool(consts[name.id])
    return None


def _reaching(f, consts: dict | None = None) -> dict[int, dict[str, list[ast.expr]]]:
    """For each `return` (by id): name -> the values bound to it on the paths reaching it (branches on a
    parameter the caller gave a constant take their one side)."""
    consts = consts or {}
    out: dict[int, dict[str, list[ast.expr]]] = {}

    def run(stmts, env: dict) -> dict | None:  # None: this path left the function
        for s in stmts:
            if isinstance(s, ast.Return):
                out[id(s)] = {k: list(v) for k, v in env.items()}
                return None
            if isinstance(s, ast.Raise):
                return None
            if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        env = {**env, t.id: [s.value]}
                    elif isinstance(t, ast.Tuple):
                        for i, el in enumerate(t.elts):
                            if isinstance(el, ast.Name):
                                item = s.value.elts[i] if isinstance(s.value, ast.Tuple) and len(s.value.elts) == len(t.elts) \
                                    else ast.Subscript(value=s.value, slice=ast.Constant(i))
                                env = {**env, el.id: [item]}
            elif isinstance(s, ast.If) and _decided(s.test, consts) is not None:
                env = run(s.body if _decided(s.test, consts) else s.orelse, env)
                if env is None:
                    return None
            elif isinstance(s, ast.If):
                a, b = run(s.body, env), run(s.orelse, env)
                live = [e for e in (a, b) if e is not None]
                if not live:
                    return None
                env = {k: [*dict.fromkeys(v for e in live for v in e.get(k, []))] for e in live for k in e}
            elif isinstance(s, (ast.For, ast.While, ast.With, ast.Try)):
                inner = [*getattr(s, "body", []), *getattr(s, "orelse", []), *getattr(s, "finalbody", [])]
                after = run(inner, env)
                for h in getattr(s, "handlers", []):
                    run(h.body, env)
                if after is not None:
                    env = {k: [*dict.fromkeys([*env.get(k, []), *after.get(k, [])])] for k in {*env, *after}}
        return env

    run(f.body, {})
    return out


class _Scan:
    def __init__(self, archive: Path, package: str, torch_stateful: set[str]):
        self.trees = _modules(archive, f"{package}/")
        self.alias = _public_reexports(self.trees)
        self.torch_modules = {f"torch.nn.{n}" for n in torch_stateful}
        self.module_classes = set(module_classes(archive, package))
        self.consts: dict = {}  # the constant arguments of the call being followed
        self.funcs: dict[str, tuple[ast.AST, str, str | None]] = {}  # qual -> (def, module, class)
        self.classes: dict[str, ast.ClassDef] = {}
        self.registries: dict[str, tuple[ast.Dict, str]] = {}
        self.func_aliases: dict[str, tuple[ast.expr, str]] = {}
        self.instances: dict[str, tuple[ast.Call, str]] = {}
        for mod, tree in self.trees.items():
            m = mod.removesuffix(".__init__")
            for n in tree.body:
                if isinstance(n, FUNCS):
                    self.funcs[f"{m}.{n.name}"] = (n, mod, None)
                elif isinstance(n, ast.ClassDef):
                    self.classes[f"{m}.{n.name}"] = n
                    for f in n.body:
                        if isinstance(f, FUNCS):
                            self.funcs[f"{m}.{n.name}.{f.name}"] = (f, mod, n.name)
                elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict) and len(n.targets) == 1 \
                        and isinstance(n.targets[0], ast.Name):
                    self.registries[f"{m}.{n.targets[0].id}"] = (n.value, mod)
                elif isinstance(n, ast.Assign) and isinstance(n.value, (ast.Name, ast.Attribute)) and len(n.targets) == 1 \
                        and isinstance(n.targets[0], ast.Name):
                    self.func_aliases[f"{m}.{n.targets[0].id}"] = (n.value, mod)  # `build_sam = build_sam_vit_h`
                elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and len(n.targets) == 1 \
                        and isinstance(n.targets[0], ast.Name):
                    self.instances[f"{m}.{n.targets[0].id}"] = (n.value, mod)  # `_tokenizer = SimpleTokenizer()`
        self.imports = {mod: _imports(mod, tree) for mod, tree in self.trees.items()}
        self.enums = frozenset(q.rsplit(".", 1)[-1] for q, c in self.classes.items()
                               if any(ast.unparse(b).rsplit(".", 1)[-1] in ("Enum", "IntEnum") for b in c.bases))
        self.specs: dict[str, dict] = {}
        self.copies = self.copy_moving_classes()
        # models: module classes holding parameters or buffers (a loss or an activation is not placed)
        self.modules = set(stateful_modules(archive, package, torch_stateful)) | self.holding_parameters()

    def resolve(self, e: ast.expr, mod: str, cls: str | None) -> str:
        text = ast.unparse(e)
        head, _, rest = text.partition(".")
        m = mod.removesuffix(".__init__")
        if head in ("cls", "self") and cls is not None:
            q = f"{m}.{cls}.{rest}".rstrip(".")
        elif any(f"{m}.{head}" in t for t in (self.funcs, self.classes, self.registries, self.func_aliases, self.instances)):
            q = f"{m}.{text}"
        elif head in self.imports[mod]:
            q = f"{self.imports[mod][head]}.{rest}".rstrip(".")
        else:
            q = text
        owner, _, last = q.rpartition(".")
        if any(q in t for t in (self.funcs, self.classes, self.registries, self.func_aliases, self.instances)):
            return q
        if q in self.alias:
            return self.alias[q]
        return f"{self.alias[owner]}.{last}" if owner in self.alias else q

    def holding_parameters(self) -> set[str]:
        """Module classes whose `__init__` (or a method it calls on self) builds, anywhere, a torch.nn module
        with parameters or one of these, or registers a buffer / parameter, or whose base does: the layers
        kept in a list and wrapped in `nn.Sequential(*layers)` count as well as `self.fc = nn.Linear(...)`."""
        made: dict[str, set[str]] = {}
        own: set[str] = set()
        for q, c in self.classes.items():
            if q not in self.module_classes:
                continue
            mod = next(m for m in self.trees if m.removesuffix(".__init__") == q.rsplit(".", 1)[0])
            methods = {f.name: f for f in c.body if isinstance(f, FUNCS)}
            init = methods.get("__init__")
            if init is None:
                continue
            bodies = [init, *(methods[n.func.attr] for n in ast.walk(init) if isinstance(n, ast.Call)
                              and isinstance(n.func, ast.Attribute) and ast.unparse(n.func.value) == "self"
                              and n.func.attr in methods)]
            calls = [n for b in bodies for n in ast.walk(b) if isinstance(n, ast.Call)]
            if any(isinstance(n.func, ast.Attribute) and n.func.attr in ("register_buffer", "register_parameter")
                   for n in calls):
                own.add(q)
            made[q] = {self.resolve(n.func, mod, c.name) for n in calls} | \
                {self.resolve(b, mod, None) for b in c.bases}
        found = own | {q for q, m in made.items() if m & self.torch_modules or "torch.nn.Parameter" in m}
        changed = True
        while changed:
            changed = False
            for q, m in made.items():
                if q not in found and m & found:
                    found.add(q)
                    changed = True
        return found

    def copy_moving_classes(self) -> set[str]:
        """Classes (not modules) whose `to` method returns, on some path, a copy of the object
        (`copy.copy(self)`, `type(self)(...)`, the class called) and on every other path `self`."""
        out = set()
        for q, c in self.classes.items():
            to = next((f for f in c.body if isinstance(f, FUNCS) and f.name == "to"), None)
            if to is None or q in self.module_classes:
                continue
            envs = _reaching(to)
            rets = [r for r in ast.walk(to) if isinstance(r, ast.Return) and id(r) in envs]

            mod = next(m for m in self.trees if m.removesuffix(".__init__") == q.rsplit(".", 1)[0])

            def copied(e, env, depth=0) -> bool:
                if isinstance(e, ast.Name) and depth < 3:
                    values = env.get(e.id) or []
                    return bool(values) and all(copied(v, env, depth + 1) for v in values)
                return isinstance(e, ast.Call) and (ast.unparse(e.func) in ("type(self)", "self.__class__") or
                                                    self.resolve(e.func, mod, c.name) in ("copy.copy", "copy.deepcopy", q))

            kinds = ["self" if isinstance(r.value, ast.Name) and r.value.id == "self" else
                     "copy" if r.value is not None and copied(r.value, envs[id(r)]) else None for r in rets]
            if "copy" in kinds and None not in kinds:
                out.add(q)
        return out

    def to_tensor_class(self, q: str) -> bool:
        if q.rsplit(".", 1)[-1] in _TO_TENSOR:
            return True
        c = self.classes.get(q)
        return c is not None and any(ast.unparse(b).rsplit(".", 1)[-1] in _TO_TENSOR for b in c.bases)

    def kind_of(self, e, f, mod, cls, env, depth=0) -> dict | None:
        if depth > 6:
            return None
        if isinstance(e, ast.Tuple):
            items = [self.kind_of(x, f, mod, cls, env, depth + 1) for x in e.elts]
            return {"kind": "tuple", "items": items} if any(items) else None
        if isinstance(e, ast.IfExp):
            a, b = (self.kind_of(x, f, mod, cls, env, depth + 1) for x in (e.body, e.orelse))
            return a if a == b else None
        if isinstance(e, ast.Name):
            values = env.get(e.id)
            if not values:
                q = self.resolve(e, mod, cls)
                inst = self.instances.get(q)
                return self.kind_of(inst[0], f, inst[1], None, {}, depth + 1) if inst is not None else None
            kinds = [self.kind_of(v, f, mod, cls, env, depth + 1) for v in values]
            return kinds[0] if kinds[0] is not None and all(k == kinds[0] for k in kinds) else None
        if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, int):
            whole = self.kind_of(e.value, f, mod, cls, env, depth + 1)
            if whole and whole["kind"] == "tuple" and 0 <= e.slice.value < len(whole["items"]):
                return whole["items"][e.slice.value]
            return None
        if not isinstance(e, ast.Call):
            return None
        if isinstance(e.func, ast.Attribute) and e.func.attr in _MODULE_KEEPING:
            inner = self.kind_of(e.func.value, f, mod, cls, env, depth + 1)
            if inner is not None and inner["kind"] == "model":
                return inner
        if isinstance(e.func, ast.Attribute) and e.func.attr in ("to", "cuda", "cpu"):
            inner = self.kind_of(e.func.value, f, mod, cls, env, depth + 1)
            if inner is not None and inner["kind"] == "moved_by_copy":
                return inner  # the moved copy
        if self.kind_of(e.func, f, mod, cls, env, depth + 1) == {"kind": "tokenizer"}:
            return {"kind": "cpu_tensor"}  # a tokenizer called: its token ids on the cpu
        q = self.resolve(e.func, mod, cls)
        if q in ("torch.jit.script", "torch.compile") and e.args:
            return self.kind_of(e.args[0], f, mod, cls, env, depth + 1)
        if q == "torch.jit.load":  # a ScriptModule: a model
            return {"kind": "model"}
        if q in self.modules or q in self.torch_modules:
            return {"kind": "model"}
        if q in self.copies:
            return {"kind": "moved_by_copy"}
        if q in self.module_classes and any(self.kind_of(a, f, mod, cls, env, depth + 1) == {"kind": "model"}
                                            for a in [*e.args, *(k.value for k in e.keywords)]):
            return {"kind": "model"}  # a module built from models holds their parameters (`EncodecModel(encoder, ...)`)
        consts = {k.arg: k.value.value for k in e.keywords if k.arg and isinstance(k.value, ast.Constant)}
        consts.update({k.arg: self.consts[k.value.id] for k in e.keywords
                       if k.arg and isinstance(k.value, ast.Name) and k.value.id in self.consts})
        if q in self.funcs and consts and depth < 4:  # `image_transform_v2(cfg, is_train=False)`: that branch
            callee, cmod, ccls = self.funcs[q]
            saved, self.consts = self.consts, consts
            try:
                got = self.returns_of(callee, cmod, ccls, depth + 1)
            finally:
                self.consts = saved
            if got is not None:
                return got
        if q in self.specs:
            return dict(self.specs[q])
        if q.rsplit(".", 1)[-1] == "Compose" and "transforms" in q and any(
                isinstance(n, ast.Name) and self.to_tensor_class(self.resolve(n, mod, cls)) for n in ast.walk(f)):
            return {"kind": "image_transform"}
        if q in self.classes:
            call = next((m for m in self.classes[q].body if isinstance(m, FUNCS) and m.name == "__call__"), None)
            if call is not None and _tensor_annotation(call.returns) and _host_params(call) and \
                    "device" not in ast.unparse(self.classes[q]):
                return {"kind": "tokenizer"}
        if q in _TORCH_FACTORIES and not any(k.arg == "device" for k in e.keywords) and _host_params(f) and \
                _tensor_annotation(f.returns):
            return {"kind": "cpu_tensor"}
        return None

    def uses_device(self, f, mod, cls, depth=0) -> bool:
        """The function places what it builds on its `device` parameter: `.to(device)`, `device=device` or
        `map_location=device` to a callee, or `device` handed to a function of the package that does."""
        for n in ast.walk(f):
            if not isinstance(n, ast.Call):
                continue
            for i, a in enumerate(n.args):
                if isinstance(a, ast.Name) and a.id == "device":
                    if isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda"):
                        return True
                    q = self.resolve(n.func, mod, cls)
                    callee = self.funcs.get(q)
                    if callee is not None and depth < 3 and i < len(callee[0].args.args) and \
                            callee[0].args.args[i].arg == "device" and self.uses_device(*callee, depth + 1):
                        return True
            for k in n.keywords:
                if isinstance(k.value, ast.Name) and k.value.id == "device" and (
                        k.arg in ("device", "map_location") or isinstance(n.func, ast.Attribute) and n.func.attr == "to"):
                    return True
        return False

    def returns_of(self, f, mod, cls, depth=0) -> dict | None:
        envs = _reaching(f, self.consts)
        rets = [r for r in ast.walk(f) if isinstance(r, ast.Return) and id(r) in envs]
        if not rets or any(r.value is None or _is_none(r.value) for r in rets):
            return None
        kinds = [self.kind_of(r.value, f, mod, cls, envs[id(r)], depth) for r in rets]
        if all(k is None for k in kinds) and _tensor_annotation(f.returns) and _host_params(f, self.enums) and \
                not any(w in ast.unparse(f) for w in ("device", "cuda")):
            # host values in, a tensor out, no device anywhere: made where the default device is, the cpu
            # (`torchvision.io.read_image(path, mode)`)
            kinds = [{"kind": "cpu_tensor"}]
        tup = _tensor_and_host_tuple(f.returns)
        if tup is not None and all(k is None or k.get("kind") == "tuple" for k in kinds) and _host_params(f, self.enums) \
                and not any(w in ast.unparse(f) for w in ("device", "cuda")):
            # the same with a tuple of tensors and host values (`torchaudio.load(path)`: the audio and its rate)
            kinds = [{"kind": "tuple", "items": [{"kind": "cpu_tensor"} if t else None for t in tup]}]
        if f.returns is not None and ast.unparse(f.returns) in ("nn.Module", "torch.nn.Module") and \
                self.resolve(f.returns, mod, cls) == "torch.nn.Module":
            kinds = [{"kind": "model"}]  # declared a model (`create_model(...) -> torch.nn.Module`: its class picked at run time)
        if kinds[0] is None or any(k != kinds[0] for k in kinds):
            return None
        spec = kinds[0]

        def place(s):
            if s is not None and s["kind"] in ("model", "moved_by_copy") and self.uses_device(f, mod, cls):
                names = [a.arg for a in f.args.args if a.arg not in ("self", "cls")]
                s = {"kind": s["kind"], "device": "device", "position": names.index("device") if "device" in names else None,
                     "default": _device_default(f)}
            return s

        if spec["kind"] == "tuple":
            spec = {"kind": "tuple", "items": [place(s) for s in spec["items"]]}
        return place(spec)

    def run(self) -> dict:
        # private helpers too (`_build_sam`): what a public function returns often comes from one
        changed = True
        while changed:
            changed = False
            for q, (f, mod, cls) in self.funcs.items():
                if q in self.specs:
                    continue
                s = self.returns_of(f, mod, cls) if (cls is None or any(
                    isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in f.decorator_list)) else None
                if s is not None:
                    self.specs[q] = s
                    changed = True
            for q, (v, mod) in self.func_aliases.items():
                target = self.resolve(v, mod, None)
                if q not in self.specs and target in self.specs:
                    self.specs[q] = self.specs[target]
                    changed = True
        out = {q: s for q, s in self.specs.items() if not any(p.startswith("_") for p in q.split(".")[1:])}
        out.update({q: {"kind": "moved_by_copy"} for q in self.copies if not any(p.startswith("_") for p in q.split(".")[1:])})
        for q, (d, _mod) in self.registries.items():
            kinds = [self.specs.get(self.resolve(v, _mod, None)) for v in d.values]
            if d.values and kinds[0] is not None and all(k == kinds[0] for k in kinds):
                out[f"{q}[]"] = kinds[0]
        for a, q in self.alias.items():  # the names users import them by (`open_clip.create_model`)
            for k in list(out):
                if k == q or k == f"{q}[]":
                    out[a + k[len(q):]] = out[k]
                elif k.startswith(q + ".") and q in self.classes:  # `encodec.EncodecModel.encodec_model_24khz`
                    out[a + k[len(q):]] = out[k]
        return dict(sorted(out.items()))


def library_factories(archive: Path, package: str, torch_stateful: set[str]) -> dict:
    return _Scan(archive, package, torch_stateful).run()
