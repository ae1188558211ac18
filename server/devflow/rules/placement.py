"""DEV1xx: where modules live (added after the move, kept in Python containers, built in forward ...)."""

from __future__ import annotations

import ast
import re
from bisect import bisect_right

from devflow.analysis import framework_api as FW
from devflow.analysis import torch_api as T
from devflow.analysis.branches import alternatives
from devflow.analysis.program import LINE_BASE
from devflow.analysis.walk import statements, walk
from devflow.lines import line_starts, split_lines
from devflow.rules.base import Context, Finding, FixPlan, Rule, kw, span


class ModuleAddedAfterMove(Rule):
    """DEV101: `model.head = nn.Linear(...)` after `model.to(device)` (found by the interpreter)."""

    code = "DEV101"


class SubmodulesBuiltAfterMove(Rule):
    """DEV102: a same-file method/function that builds submodules runs after the move (interpreter)."""

    code = "DEV102"


def _module_ctor(ctx: Context, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    q = ctx.qual(node.func)
    last = q.rsplit(".", 1)[-1]
    if q.startswith("torch.nn.") and last[:1].isupper() and not q.startswith(("torch.nn.functional", "torch.nn.utils")):
        if last in ("ModuleList", "ModuleDict", "ParameterList", "ParameterDict") or last not in T.NN_MODULES:
            return False
        return last not in T.PARAM_FREE_MODULES or any(k.arg in T.LOSS_WEIGHT_KWARGS for k in node.keywords) \
            or last in ("Sequential",)
    if q in FW.METRIC_CLASSES:
        return True
    name = FileIndex_dotted(node.func)
    info = ctx.index.classes.get(name or "")
    return info is not None and info.is_module and not _stateless(ctx, info, set())


def _stateless_ctor(ctx: Context, node: ast.AST) -> bool:
    """A torch.nn module without parameters or buffers built here (`nn.ReLU()`, `nn.Dropout(p)`)."""
    if not isinstance(node, ast.Call):
        return False
    q = ctx.qual(node.func)
    last = q.rsplit(".", 1)[-1]
    return q.startswith("torch.nn.") and last in T.PARAM_FREE_MODULES and last not in T.CONTAINER_MODULES


# nn.Module methods that create or register state on self.
_STATE_MAKERS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module", "setattr"})


def _stateless(ctx: Context, info, seen: set) -> bool:
    """A module class of this file proven to hold no parameters or buffers (pooling / padding only):
    its bases are torch.nn.Module or such classes, it registers nothing, and each `self.x = ...` it makes
    is a parameter-free torch.nn module, such a class again, or a plain value it never calls nor passes
    on (a size, a flag). Unregistered, such modules lose nothing on a move. Anything else: not proven."""
    if id(info) in seen:
        return False
    seen = seen | {id(info)}
    for b in info.bases:
        base = ctx.index.classes.get(b)
        if base is not None:
            if not _stateless(ctx, base, seen):
                return False
        elif ctx.index.qualify(b) not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
            return False
    plain: set[str] = set()
    for fn in info.methods.values():
        for n in walk(fn):
            if isinstance(n, ast.Call):
                callee = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                if callee in _STATE_MAKERS or ctx.qual(n.func).rsplit(".", 1)[-1] in T.NN_TENSOR_WRAPPERS:
                    return False
            if not isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                continue
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    attr = _self_attr(el)
                    if attr is None:
                        if isinstance(el, ast.Subscript) and _self_attr(el.value):
                            return False  # self.x[k] = ...: an entry of a container
                        continue
                    v = n.value
                    if isinstance(v, ast.Call):
                        q = ctx.qual(v.func)
                        last = q.rsplit(".", 1)[-1]
                        if q.startswith("torch.nn.") and last in T.PARAM_FREE_MODULES and last not in T.CONTAINER_MODULES \
                                and not any(k.arg in T.LOSS_WEIGHT_KWARGS for k in v.keywords):
                            continue
                        sub = ctx.index.classes.get(FileIndex_dotted(v.func) or "")
                        if sub is not None and sub.is_module and _stateless(ctx, sub, seen):
                            continue
                        return False
                    if v is None or isinstance(t, ast.Tuple) or any(isinstance(x, (ast.Call, ast.Lambda)) for x in ast.walk(v)):
                        return False
                    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
                    if any(isinstance(x, ast.Name) and x.id not in params for x in ast.walk(v)):
                        return False  # a local of this method: maybe a module made here
                    plain.add(attr)
    for fn in info.methods.values():  # a plain value that is called or handed on may be a module
        for n in walk(fn):
            if isinstance(n, ast.Call):
                f = n.func.value if isinstance(n.func, ast.Attribute) else n.func
                if any(_rooted_self_attr(x) in plain for x in [n.func, f, *n.args, *(k.value for k in n.keywords)]):
                    return False
            elif isinstance(n, ast.Return) and n.value is not None and _rooted_self_attr(n.value) in plain:
                return False
    return True


def _rooted_self_attr(node: ast.AST) -> str | None:
    """`x` for `self.x`, `self.x.weight`, `self.x.a.b`."""
    while isinstance(node, ast.Attribute) and _self_attr(node) is None:
        node = node.value
    return _self_attr(node)


def FileIndex_dotted(node):
    from devflow.analysis.index import FileIndex
    return FileIndex.dotted(node)


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _registered_lists(cls) -> set[str]:
    """Plain lists whose items the class registers itself: `for i, m in enumerate(self.items):
    self.add_module(f"m{i}", m)` (or register_module / setattr(self, ...))."""
    out: set[str] = set()
    for fn in cls.methods.values():
        for loop in walk(fn):
            if not isinstance(loop, ast.For):
                continue
            lists = {a for n in walk(loop.iter) if (a := _self_attr(n))}
            if not lists:
                continue
            for n in walk(loop):
                if isinstance(n, ast.Call) and (
                        (isinstance(n.func, ast.Attribute) and n.func.attr in ("add_module", "register_module")
                         and isinstance(n.func.value, ast.Name) and n.func.value.id == "self")
                        or (isinstance(n.func, ast.Name) and n.func.id == "setattr" and n.args
                            and isinstance(n.args[0], ast.Name) and n.args[0].id == "self")):
                    out |= lists
                    break
    return out


def _moved_lists(cls) -> set[str]:
    """Plain containers whose modules the class moves itself: `for m in self.metrics.values(): m.to(self.device)`
    (in a hook that runs before they are used, `on_fit_start` say): each module is where the class puts it."""
    out: set[str] = set()
    for fn in cls.methods.values():
        for loop in walk(fn):
            if not isinstance(loop, ast.For):
                continue
            holders = {a for n in walk(loop.iter) if (a := _self_attr(n))}
            names = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
            if not holders or not names:
                continue
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda")
                   and isinstance(n.func.value, ast.Name) and n.func.value.id in names for b in loop.body for n in walk(b)):
                out |= holders
    return out


def _wrapped_lists(ctx: Context, cls) -> set[str]:
    """Plain lists whose modules the class registers by handing them to a torch.nn container:
    `self.body = nn.Sequential(*self.layers)` (the same module objects, now children)."""
    out: set[str] = set()
    for fn in cls.methods.values():
        for n in walk(fn):
            if isinstance(n, ast.Call) and ctx.qual(n.func).rsplit(".", 1)[-1] in T.CONTAINER_MODULES \
                    and ctx.qual(n.func).startswith("torch.nn."):
                for a in n.args:
                    name = _self_attr(a.value if isinstance(a, ast.Starred) else a)
                    if name:
                        out.add(name)
    return out


def _reassigned(assigns: list[tuple], plain: set[int]) -> bool:
    """Whether the attribute may be given another kind of value after (or before) its plain container:
    `self.layers = nn.ModuleList(self.layers)` registers the modules. Assignments in different branches of
    one `if` (a GRU / LSTM / RNN choice, a list or None) are alternatives: each is the attribute's only value
    on its path. Another plain container (a re-made list, in a branch or in a helper method) registers
    nothing either."""
    return any((id(a) not in plain or id(b) not in plain) and (fa is not fb or not alternatives(fa, a, b))
               for i, (fa, a) in enumerate(assigns) for fb, b in assigns[i + 1:])


def _shown(sts: list, fn_of: dict) -> list:
    """The plain containers to report: the first, and those that are alternatives to each one reported
    (one per branch of an if-chain; a list re-made later on the same path is the same finding)."""
    out: list = []
    for st in sts:
        if all(fn_of[id(st)] is fn_of[id(r)] and alternatives(fn_of[id(st)], st, r) for r in out):
            out.append(st)
    return out


class ModulesInPythonContainer(Rule):
    """DEV103: `self.layers = []` + `self.layers.append(nn.Conv1d(...))` in an nn.Module."""

    code = "DEV103"

    _EMPTY = re.compile(r"self\.\w+\s*=\s*(\[|\{|list\(|dict\()")

    def check(self, ctx: Context) -> list[Finding]:
        out = []
        nn = ctx.nn_prefix()
        starts = line_starts(ctx.source)
        lines = {bisect_right(starts, m.start()) for m in self._EMPTY.finditer(ctx.source)}
        if not lines:
            return out
        for cls in ctx.index.all_classes:
            if not cls.is_module or not any(cls.node.lineno <= ln <= (cls.node.end_lineno or 0) for ln in lines):
                continue
            empties: dict[str, list[ast.Assign]] = {}
            filled: set[str] = set()
            assigns: dict[str, list[tuple]] = {}
            for fn in cls.methods.values():
                for st in walk(fn):
                    if isinstance(st, ast.Assign) and len(st.targets) == 1:
                        name = _self_attr(st.targets[0])
                        if name is None:
                            continue
                        assigns.setdefault(name, []).append((fn, st))
                        v = st.value
                        if isinstance(v, (ast.List, ast.Dict)) and not (v.elts if isinstance(v, ast.List) else v.keys):
                            empties.setdefault(name, []).append(st)
                        elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("list", "dict") \
                                and not v.args:
                            empties.setdefault(name, []).append(st)
                        elif isinstance(v, ast.List) and v.elts and any(_module_ctor(ctx, e) for e in v.elts) \
                                and all(_module_ctor(ctx, e) or _stateless_ctor(ctx, e) for e in v.elts):
                            # `[nn.Conv1d(...), nn.BatchNorm1d(...), nn.ReLU()]`: the layers with
                            # parameters are lost to `.to()`, whatever parameter-free ones sit between
                            empties.setdefault(name, []).append(st)
                            filled.add(name)
                        elif isinstance(v, ast.ListComp) and _module_ctor(ctx, v.elt):
                            empties.setdefault(name, []).append(st)
                            filled.add(name)
                        elif isinstance(v, ast.Dict) and v.values and all(_module_ctor(ctx, e) for e in v.values):
                            empties.setdefault(name, []).append(st)
                            filled.add(name)
                    elif isinstance(st, ast.Call) and isinstance(st.func, ast.Attribute) and \
                            st.func.attr in ("append", "extend", "insert") and st.args:
                        name = _self_attr(st.func.value)
                        if name and _module_ctor(ctx, st.args[-1]):
                            filled.add(name)
                    elif isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Subscript):
                        name = _self_attr(st.targets[0].value)
                        if name and _module_ctor(ctx, st.value):
                            filled.add(name)
            registered = _registered_lists(cls) | _wrapped_lists(ctx, cls) | _moved_lists(cls)
            plain = {id(st) for sts in empties.values() for st in sts}
            fn_of = {id(st): fn for pairs in assigns.values() for fn, st in pairs}
            for name, st in ((n, st) for n, sts in empties.items() for st in _shown(sts, fn_of)):
                if name not in filled or _reassigned(assigns[name], plain) or name in registered:
                    continue
                v = st.value
                is_dict = isinstance(v, (ast.Dict,)) or (isinstance(v, ast.Call) and getattr(v.func, "id", "") == "dict")
                kind = "ModuleDict" if is_dict else "ModuleList"
                if isinstance(v, (ast.List, ast.ListComp)) and (getattr(v, "elts", None) or isinstance(v, ast.ListComp)):
                    new = f"{nn}.{kind}({ctx.text(v)})"
                elif isinstance(v, ast.Dict) and v.keys:
                    new = f"{nn}.{kind}({ctx.text(v)})"
                else:
                    new = f"{nn}.{kind}()"
                out.append(Finding(
                    self.code, span(st),
                    f"`self.{name}` holds submodules in a plain Python {'dict' if is_dict else 'list'}: they are not "
                    f"registered, so `.to(device)` leaves them on cpu and `parameters()` misses them; use `{nn}.{kind}`",
                    [], FixPlan("replace", span(v), text=new, title=f"Use `{new}`")))
        return out


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().replace("__", "_")


class ModuleCreatedInForward(Rule):
    """DEV104: `nn.BatchNorm2d(...)(x)` inside forward(): new cpu parameters on every call."""

    code = "DEV104"

    def check(self, ctx: Context) -> list[Finding]:
        out = []
        alts = [re.escape(a) + r"\.nn\.[A-Z]" for a, full in ctx.index.aliases.items() if full == "torch"] + \
            [re.escape(a) + r"\.[A-Z]" for a, full in ctx.index.aliases.items() if full == "torch.nn"] + \
            [re.escape(a) + r"\(" for a, full in ctx.index.aliases.items() if full.startswith("torch.nn.") and a[:1].isupper()]
        if not alts:
            return out
        pattern = re.compile(r"\b(?:" + "|".join(alts) + ")")
        src_lines = split_lines(ctx.source)
        top = {f.name: f for f in ctx.tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for cls in ctx.index.all_classes:
            fwd = cls.methods.get("forward")
            if not cls.is_module or fwd is None:
                continue
            # forward and what it runs: methods called on self and functions of this file, to any depth
            ran = [f for f in _reached_from(fwd, cls, top) if f.lineno < LINE_BASE]
            ran = [f for f in ran if pattern.search("\n".join(src_lines[f.lineno - 1:f.end_lineno or f.lineno]))]
            if not ran:
                continue
            init = cls.methods.get("__init__")
            existing = None
            counter = 0
            for fn, node in ((f, n) for f in ran for n in walk(f)):
                if not isinstance(node, ast.Call):
                    continue
                q = ctx.qual(node.func)
                last = q.rsplit(".", 1)[-1]
                if not (q.startswith("torch.nn.") and last in T.NN_MODULES) or last in T.PARAM_FREE_MODULES or \
                        q.startswith(("torch.nn.functional", "torch.nn.utils", "torch.nn.init")) or \
                        last in ("Parameter", "ModuleList", "ModuleDict"):
                    continue
                if any(k.arg is None or k.arg == "device" and not (isinstance(k.value, ast.Constant) and k.value.value is None)
                       for k in node.keywords):
                    continue  # `device=w.device` (or a `**factory_kwargs` that may hold it): not made on cpu
                counter += 1
                fix = None
                if existing is None:
                    existing = {n.attr for n in walk(cls.node) if isinstance(n, ast.Attribute)}
                if init is not None and self._liftable(node, fwd) and any(n is node for n in walk(fwd)):
                    attr = f"{_snake(last)}_{counter}"
                    while attr in existing:
                        counter += 1
                        attr = f"{_snake(last)}_{counter}"
                    existing.add(attr)
                    fix = FixPlan("lift", span(node), text=f"self.{attr} = {ctx.text(node)}", name=attr,
                                  title=f"Create it once in __init__ as `self.{attr}`", anchor=span(init.body[-1]))
                if any(f.span == span(node) for f in out):
                    continue  # a helper called twice from forward, or from two forwards
                out.append(Finding(
                    self.code, span(node),
                    f"`{ctx.text(node)}` is created inside forward()"
                    + (f" (in `{fn.name}()`, which forward() runs)" if fn is not fwd else "")
                    + ": its parameters are made on cpu at every call, "
                    f"are never moved by `.to(device)` and never trained; create it in __init__",
                    [], fix))
        return out

    @staticmethod
    def _liftable(call: ast.Call, fwd) -> bool:
        params = {a.arg for a in fwd.args.args + fwd.args.kwonlyargs}
        local = {n.id for n in walk(fwd) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for n in walk(call):
            if isinstance(n, ast.Name) and n.id != "self" and (n.id in params or n.id in local):
                return False
        return True


def _reached_from(fwd, cls, top: dict) -> list:
    """`forward` and the functions it calls, transitively: `self.m(...)` (a method of the class or its
    bases, `__init__` aside) and plain calls of this file's top-level functions."""
    out, seen, todo = [], {id(fwd)}, [fwd]
    while todo:
        f = todo.pop()
        out.append(f)
        # names bound in the function (parameters, assignments, loop targets) are not the module's functions
        a = f.args
        local = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs} | {n.id for n in walk(f)
                                                                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for n in walk(f):
            if not isinstance(n, ast.Call):
                continue
            callee = None
            if isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and n.func.value.id == "self" \
                    and n.func.attr not in ("__init__", "forward"):
                found = cls.method(n.func.attr)
                callee = found[0] if found else None
            elif isinstance(n.func, ast.Name) and n.func.id not in local:
                callee = top.get(n.func.id)
            if callee is not None and id(callee) not in seen and isinstance(callee, (ast.FunctionDef, ast.AsyncFunctionDef)):
                seen.add(id(callee))
                todo.append(callee)
    return out


# Uses of a tensor attribute that never combine it with another tensor.
_NO_DEVICE_USE = frozenset({"to", "cuda", "cpu", "device", "type_as", "shape", "size", "numel", "dim", "ndim", "dtype",
                            "item", "tolist", "numpy", "nelement", "is_cuda", "requires_grad", "stride"})


class TensorAttributeNotBuffer(Rule):
    """DEV105: `self.scale = torch.FloatTensor(...)` in __init__ of a moved module, used in another method."""

    code = "DEV105"

    def check(self, ctx: Context) -> list[Finding]:
        out = list(ctx.findings(self.code))  # the interpreter's: a cache set by another method, left behind by a move
        moved = getattr(ctx.interp, "moved_classes", set())
        # Tensor attributes the interpreter saw, by the class definition whose body holds the statement
        # (a name may be defined many times; a statement outside every definition of the name, set by
        # a helper function, belongs to each). One pass: linear in the file.
        defs: dict[str, list[tuple[int, int, object]]] = {}
        for cls in ctx.index.all_classes:
            defs.setdefault(cls.name, []).append((cls.node.lineno, cls.node.end_lineno or cls.node.lineno, cls))
        for spans in defs.values():
            spans.sort(key=lambda d: d[0])
        owned: dict[tuple, list[tuple[str, ast.stmt]]] = {}  # ("def", id(class info)) or ("name", name)
        for (cname, name), sts in getattr(ctx.interp, "tensor_attrs", {}).items():
            spans = defs.get(cname, [])
            starts = [d[0] for d in spans]
            for st in sts:
                i = bisect_right(starts, st.lineno) - 1
                owner = spans[i][2] if i >= 0 and spans[i][0] <= st.lineno <= spans[i][1] else None
                owned.setdefault(("def", id(owner)) if owner is not None else ("name", cname), []).append((name, st))
        for cls in ctx.index.all_classes:
            if not cls.is_module or cls.name not in moved:
                continue
            init = cls.methods.get("__init__")
            if init is None:
                continue
            candidates: dict[str, list[ast.Assign]] = {}
            for st in statements(init):
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and (name := _self_attr(st.targets[0])) \
                        and self._cpu_tensor(ctx, st.value):
                    candidates.setdefault(name, []).append(st)
            taken = {id(st) for sts in candidates.values() for st in sts}
            for name, st in owned.get(("def", id(cls)), []) + owned.get(("name", cls.name), []):
                if isinstance(st, ast.Assign) and id(st) not in taken:
                    taken.add(id(st))
                    candidates.setdefault(name, []).append(st)
            if not candidates:
                continue
            registered = set()  # walked only for the rare class with a candidate
            for n in walk(cls.node):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_buffer" \
                        and n.args and isinstance(n.args[0], ast.Constant):
                    registered.add(n.args[0].value)
            for name, sts in candidates.items():
                if name in registered or not self._used_elsewhere(cls, name):
                    continue
                for st in sts:
                    text = f'self.register_buffer("{name}", {ctx.text(st.value)}, persistent=False)'
                    out.append(Finding(
                        self.code, span(st),
                        f"`self.{name}` is a tensor stored as a plain attribute (on cpu, created at line {st.lineno}): "
                        f"`.to(device)` moves parameters and buffers only, so it stays on cpu while the module moves; "
                        f"register it with `self.register_buffer`",
                        [], FixPlan("replace", span(st), text=text, title="Register it as a (non-persistent) buffer")))
        return out

    @staticmethod
    def _cpu_tensor(ctx: Context, v: ast.AST) -> bool:
        if not isinstance(v, ast.Call):
            return False
        q = ctx.qual(v.func)
        if not q.startswith("torch."):
            return False
        rest = q[6:]
        if rest in T.LEGACY_CPU_TYPES or rest in T.CPU_ONLY_FUNCS:
            return True
        if rest in T.FACTORIES and kw(v, "device") is None:
            if rest in T.MAYBE_SCALAR_FACTORIES:
                return bool(v.args) and isinstance(v.args[0], (ast.List, ast.Tuple, ast.ListComp))
            return True
        return False

    @staticmethod
    def _used_elsewhere(cls, name: str) -> bool:
        for mname, fn in cls.methods.items():
            if mname == "__init__":
                continue
            parents = {}
            for n in walk(fn):
                for c in ast.iter_child_nodes(n):
                    parents[c] = n
            for n in walk(fn):
                if _self_attr(n) == name:
                    if isinstance(n.ctx, ast.Store):
                        return False
                    p = parents.get(n)
                    if isinstance(p, ast.Attribute) and p.attr in _NO_DEVICE_USE:
                        continue  # moved, or only its metadata read: it never meets a device tensor here
                    if isinstance(p, ast.Call) and n in p.args and isinstance(p.func, ast.Name) and \
                            p.func.id in ("len", "print", "str", "repr", "isinstance", "type", "id", "hasattr"):
                        continue
                    return True
        return False


class ModelNotMoved(Rule):
    """DEV106: inputs moved to a device, the model left on cpu (interpreter)."""

    code = "DEV106"


class DiscardedTensorTo(Rule):
    """DEV107: `x.to(device)` as a statement: tensors are not moved in place (interpreter)."""

    code = "DEV107"


class MetricNotMoved(Rule):
    """DEV108: a metric / criterion module on cpu fed device tensors (interpreter)."""

    code = "DEV108"


RULES = [ModuleAddedAfterMove(), SubmodulesBuiltAfterMove(), ModulesInPythonContainer(), ModuleCreatedInForward(),
         TensorAttributeNotBuffer(), ModelNotMoved(), DiscardedTensorTo(), MetricNotMoved()]
