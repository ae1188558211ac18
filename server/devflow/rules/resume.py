"""DEV3xx / DEV4xx: checkpoints, optimizer resume, AMP and fused optimizers."""

from __future__ import annotations

import ast
import re

from devflow.analysis import torch_api as T
from devflow.analysis.lattice import concrete
from devflow.analysis.walk import walk
from devflow.rules.base import Context, Finding, FixPlan, Rule, kw, span
from devflow.rules.scaler_members import member_scaler_findings, scaler_state_findings


_CLI_OPTIONS = frozenset({"args", "opt", "opts", "options", "cfg", "config", "conf", "hparams", "FLAGS", "flags"})


def chooses_cpu_fallback(tree: ast.AST) -> bool:
    """The file picks its device at run time ("cuda" if torch.cuda.is_available() else "cpu",
    or `torch.device(args.device)`), so it may run where the checkpoint's GPU is missing."""
    for n in walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "device" and \
                isinstance(n.func.value, ast.Name) and n.func.value.id == "torch" and n.args and \
                isinstance(n.args[0], ast.Attribute) and "device" in n.args[0].attr and \
                isinstance(n.args[0].value, ast.Name) and n.args[0].value.id in _CLI_OPTIONS:
            return True  # torch.device(args.device): the user picks the device on the command line
        if isinstance(n, ast.IfExp):
            strs = {c.value for c in walk(n) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            if "cpu" in strs and _mentions(n.test, "is_available"):
                return True
    return False


def _mentions(node: ast.AST, word: str) -> bool:
    """`word` in a name, attribute, keyword or string under `node` (what `word in ast.dump(node)`
    found, without ast.dump's cost and the reference cycle its recursive helper leaves)."""
    for c in walk(node):
        text = c.id if isinstance(c, ast.Name) else c.attr if isinstance(c, ast.Attribute) else \
            c.arg if isinstance(c, ast.keyword) else c.value if isinstance(c, ast.Constant) else None
        if isinstance(text, str) and word in text:
            return True
    return False


class LoadWithoutMapLocation(Rule):
    """DEV301: torch.load(path) without map_location in code that falls back to cpu."""

    code = "DEV301"

    def check(self, ctx: Context) -> list[Finding]:
        if "load(" not in ctx.source:
            return []
        fallback = ("is_available" in ctx.source or "torch.device(" in ctx.source) and chooses_cpu_fallback(ctx.tree)
        movers = [] if fallback else _device_parameter_movers(ctx)
        if not fallback and not movers:
            return []
        out = []
        written = _saved_paths(ctx)
        tensorless = _scheduler_loads(ctx)
        for n in ctx.index.nodes:
            if isinstance(n, ast.Call) and ctx.qual(n.func) == "torch.load" and kw(n, "map_location") is None \
                    and len(n.args) < 2 and not any(k.arg is None for k in n.keywords):
                if not fallback and not any(any(c is n for c in walk(f)) for f in movers):
                    continue
                path = n.args[0] if n.args else kw(n, "f")
                if path is not None and (_path_key(ctx, path) in written or _written_before(ctx, path, written)):
                    continue  # a checkpoint this program writes itself, on the machine that reads it
                if id(n) in tensorless:
                    continue  # an lr scheduler's state: numbers only, nothing is restored onto a device
                out.append(Finding(
                    self.code, span(n),
                    f"`{ctx.text(n)}` has no map_location: a checkpoint saved on a GPU is restored onto that GPU, which "
                    + ("fails on the cpu fallback this file supports" if fallback else
                       "fails where the caller passes the cpu as the function's device")
                    + " (and loads onto the saving GPU elsewhere)",
                    [], FixPlan("add_kwarg", span(n), text='"cpu"', name="map_location",
                                title='Load onto cpu: add `map_location="cpu"`')))
        return out


def _device_parameter_movers(ctx: Context) -> list:
    """Functions with a parameter whose default is a device string (`def init_model(name, dev='cuda')`)
    that place what they build there (`.to(dev)`, `Net(device=dev)`, or a same-file helper given it):
    an entry point for callers, who pass another device (the cpu included) where the default does not
    suit, so a checkpoint they load must not insist on the GPU it was saved from. (A device parameter
    without a default is the caller's own device, usually where the checkpoint was just written: not
    taken as a cpu fallback.)"""
    own = {f.name for f in ctx.index.nodes if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out = []
    for f in ctx.index.nodes:
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = f.args
        pos = a.posonlyargs + a.args
        defaults = dict(zip([p.arg for p in pos][len(pos) - len(a.defaults):], a.defaults))
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        names = {n for n, d in defaults.items()
                 if isinstance(d, ast.Constant) and isinstance(d.value, str) and concrete(d.value) is not None}
        if names and any(_places_with(c, names, own) for c in walk(f) if isinstance(c, ast.Call)):
            out.append(f)
    return _with_callees(ctx, out)


def _with_callees(ctx: Context, funcs: list) -> list:
    """The functions and the same-file functions they call (by name, at any depth): a load moved into a
    helper of the loader runs on the loader's device too."""
    by_name = {f.name: f for f in ctx.index.nodes if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out, todo = list(funcs), list(funcs)
    while todo:
        f = todo.pop()
        for c in walk(f):
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in by_name \
                    and by_name[c.func.id] not in out:
                out.append(by_name[c.func.id])
                todo.append(by_name[c.func.id])
    return out


def _places_with(call: ast.Call, names: set, own: set) -> bool:
    """`x.to(dev)`, `f(..., device=dev)`, or a same-file helper called with `dev`."""
    def is_param(x):
        return isinstance(x, ast.Name) and x.id in names
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda") and \
            any(is_param(x) for x in [*call.args, *(k.value for k in call.keywords)]):
        return True
    if any(k.arg == "device" and is_param(k.value) for k in call.keywords):
        return True
    return isinstance(call.func, ast.Name) and call.func.id in own and \
        any(is_param(x) for x in [*call.args, *(k.value for k in call.keywords)])


def _scheduler_loads(ctx: Context) -> set:
    """ids of the `torch.load(...)` calls whose result goes straight into `sched.load_state_dict(...)`,
    where every binding of `sched` in the file is an lr scheduler (torch.optim.lr_scheduler.X(...), or a
    library function returning one, e.g. transformers' get_linear_schedule_with_warmup)."""
    if "load_state_dict" not in ctx.source:
        return set()
    bound: dict[str, list] = {}
    for n in ctx.index.nodes:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], (ast.Name, ast.Attribute)):
            bound.setdefault(ctx.text(n.targets[0]), []).append(n.value)
    out = set()
    for n in ctx.index.nodes:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load_state_dict" and n.args \
                and isinstance(n.args[0], ast.Call) and ctx.qual(n.args[0].func) == "torch.load":
            values = bound.get(ctx.text(n.func.value))
            if values and all(_makes_scheduler(ctx, v) for v in values):
                out.add(id(n.args[0]))
    return out


def _makes_scheduler(ctx: Context, value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    q = ctx.qual(value.func)
    last = q.rsplit(".", 1)[-1]
    return q.startswith("torch.optim.lr_scheduler.") and last in T.LR_SCHEDULERS or \
        f"{q.split('.', 1)[0]}.{last}" in T.SCHEDULER_FACTORIES


def _path_key(ctx: Context, node: ast.AST):
    return ("const", node.value) if isinstance(node, ast.Constant) else ("text", ctx.text(node))


def _saved_paths(ctx: Context) -> set:
    """The paths `torch.save(obj, path)` writes in this file (as constants or as the same expression),
    also as joined parts (`os.path.join(d, "m.pt")` = `d + "/m.pt"`) with the line that saves them, and through a helper of this file
    that saves to one of its parameters (`def save_ckp(state, path): torch.save(state, path)`): the path
    each call of the helper passes, or the parameter's default."""
    out = set()
    funcs = {f.name: f for f in ctx.index.nodes if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for n in ctx.index.nodes:
        if isinstance(n, ast.Call) and ctx.qual(n.func) == "torch.save":
            path = n.args[1] if len(n.args) > 1 else kw(n, "f")
            if path is not None:
                out.add(_path_key(ctx, path))
                parts = _parts(ctx, path, {})
                if parts:
                    out.add(("parts", parts, n.lineno, n))
                helper = _enclosing_function(ctx, n, funcs)
                if helper is not None:
                    out.update(("parts", p, line, call) for p, line, call in _paths_through(ctx, helper, path))
    return out


def _written_before(ctx: Context, path: ast.expr, written: set) -> bool:
    """`path`, as joined parts, is saved on the way to the load: by a statement above it in its own scope
    (the save itself, or the call that leads to it through the file's functions), not on the other branch
    of an `if` (a later save, or `if not exists(f): save else: load`, is the resume pattern: the file read
    comes from an earlier run)."""
    parts = _parts(ctx, path, {})
    if not parts:
        return False
    saves = [w[3] for w in written if w[0] == "parts" and w[1] == parts]
    if not saves:
        return False
    funcs = {f.name: f for f in ctx.index.nodes if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    home = _enclosing_function(ctx, path, funcs)
    for save in saves:
        frontier, seen = [save], set()
        for _ in range(4):
            up = []
            for x in frontier:
                scope = _enclosing_function(ctx, x, funcs)
                if scope is home:
                    if x.lineno < path.lineno and not _on_other_branch(ctx, id(x), id(path)):
                        return True
                elif scope is not None and scope.name not in seen:
                    seen.add(scope.name)
                    up.extend(c for c in ctx.index.nodes if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                              and c.func.id == scope.name)
            frontier = up
    return False


def _on_other_branch(ctx: Context, a: int, b: int) -> bool:
    """Nodes `a` and `b` (ids) sit in the two branches of one `if`."""
    for n in ctx.index.nodes:
        if isinstance(n, ast.If) and n.orelse:
            body = {id(c) for st in n.body for c in walk(st)}
            other = {id(c) for st in n.orelse for c in walk(st)}
            if a in body and b in other or a in other and b in body:
                return True
    return False


def _enclosing_function(ctx: Context, node: ast.AST, funcs: dict):
    """The innermost function of this file around `node` (None at module level)."""
    inner = None
    for f in funcs.values():
        if f.lineno <= node.lineno <= (f.end_lineno or f.lineno) and (inner is None or f.lineno > inner.lineno) \
                and any(c is node for c in walk(f)):
            inner = f
    return inner


def _paths_through(ctx: Context, helper, path: ast.expr) -> list:
    """The saved path's parts (with the call's line) at each call of `helper` in this file, its parameters
    bound to the call's arguments (or their defaults), and single assignments in the helper before the save applied."""
    a = helper.args
    params = [p.arg for p in a.posonlyargs + a.args]
    defaults = dict(zip(params[len(params) - len(a.defaults):], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    steps = [st for st in walk(helper) if isinstance(st, ast.Assign) and len(st.targets) == 1
             and isinstance(st.targets[0], ast.Name) and st.lineno < path.lineno]
    if len({st.targets[0].id for st in steps}) != len(steps):
        return []  # a name bound twice: which value reaches the save is not known here
    out = []
    for call in ctx.index.nodes:
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == helper.name) \
                or any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
            continue
        given = dict(zip(params, call.args)) | {k.arg: k.value for k in call.keywords}
        env = {}
        for name in params + [p.arg for p in a.kwonlyargs]:
            value = given.get(name, defaults.get(name))
            env[name] = _parts(ctx, value, {}) if value is not None else None
        for st in steps:
            env[st.targets[0].id] = _parts(ctx, st.value, env)
        parts = _parts(ctx, path, env)
        if parts:
            out.append((parts, call.lineno, call))
    return out


def _parts(ctx: Context, node, env: dict) -> tuple | None:
    """A path expression as its parts: `os.path.join(d, "m.pt")`, `d + "/m.pt"`, `f"{d}/m.pt"` all give
    (<d>, "m.pt"); names bound in `env` are replaced; None for anything else (`"g_%d.pth" % epoch`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return tuple(p for p in node.value.split("/") if p not in ("", "."))
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        return (("name", node.id),)
    if isinstance(node, ast.Attribute) and ctx.text(node).replace(".", "").isidentifier():
        return (("name", ctx.text(node)),)
    if isinstance(node, ast.Call) and ctx.qual(node.func) == "os.path.join" and node.args and not node.keywords:
        parts = [_parts(ctx, x, env) for x in node.args]
        return None if any(p is None for p in parts) else tuple(q for p in parts for q in p)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts(ctx, node.left, env), _parts(ctx, node.right, env)
        if left is None or right is None or not (isinstance(node.right, ast.Constant) and
                                                 str(node.right.value).startswith("/")):
            return None  # `d + "m.pt"` joins no folder
        return left + right
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.extend(p for p in str(v.value).split("/") if p not in ("", "."))
            elif isinstance(v, ast.FormattedValue) and v.format_spec is None and v.conversion == -1:
                inner = _parts(ctx, v.value, env)
                if inner is None:
                    return None
                out.extend(inner)
            else:
                return None
        return tuple(out)
    return None


class MapLocationOnLoadStateDict(Rule):
    """DEV303: `x.load_state_dict(torch.load(path), map_location=...)`: the keyword is given to the wrong call.

    `Module.load_state_dict` and `Optimizer.load_state_dict` take no `map_location` (a TypeError),
    and the `torch.load` that runs first still restores every tensor onto the device it was saved
    from (on a machine without that GPU: "Attempting to deserialize object on a CUDA device")."""

    code = "DEV303"

    def check(self, ctx: Context) -> list[Finding]:
        if "map_location" not in ctx.source or "load_state_dict" not in ctx.source:
            return []
        out = []
        for scope in _scopes(ctx.tree):
            nodes = list(_own_nodes(scope))
            for n in nodes:
                if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load_state_dict"
                        and n.args and (ml := kw(n, "map_location")) is not None):
                    continue
                load = _loaded_by(ctx, n.args[0], nodes, n.lineno)
                if load is None or kw(load, "map_location") is not None or len(load.args) >= 2 or \
                        any(k.arg is None for k in load.keywords):
                    continue
                fix = None
                if load is n.args[0]:
                    inner = ", ".join([ctx.text(a) for a in load.args] + [ctx.text(k) for k in load.keywords]
                                      + [f"map_location={ctx.text(ml)}"])
                    rest = [ctx.text(a) for a in n.args[1:]] + [ctx.text(k) for k in n.keywords if k.arg != "map_location"]
                    text = f"{ctx.text(n.func)}({', '.join([f'{ctx.text(load.func)}({inner})'] + rest)})"
                    fix = FixPlan("replace", span(n), text=text, title="Pass map_location to torch.load", applicability="safe")
                out.append(Finding(
                    self.code, span(n),
                    f"`map_location` is given to `{ctx.text(n.func)}()`, which has no such parameter (TypeError), "
                    f"while `{ctx.text(load)}` (line {load.lineno}) still restores the tensors onto the device they were "
                    f"saved from", [(span(load), "the checkpoint is loaded here, without map_location")], fix))
        return out


def _loaded_by(ctx: Context, arg: ast.expr, nodes: list, line: int) -> ast.Call | None:
    """The `torch.load(...)` call that produced `arg`: the argument itself, or the last assignment
    of that name before `line` in the same scope (when it is the only kind of assignment there)."""
    if isinstance(arg, ast.Call) and ctx.qual(arg.func) == "torch.load":
        return arg
    if not isinstance(arg, ast.Name):
        return None
    found = None
    for n in nodes:
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With, ast.NamedExpr)) and \
                n.lineno < line and any(isinstance(t, ast.Name) and t.id == arg.id for t in walk(n)
                                        if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)):
            if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and isinstance(n.value, ast.Call) and ctx.qual(n.value.func) == "torch.load"):
                return None  # bound some other way too: unknown
            if found is None or n.lineno > found.lineno:
                found = n.value
    return found


class OptimizerLoadedBeforeMove(Rule):
    """DEV302: optimizer.load_state_dict() while the model is still on cpu, model moved later (interpreter)."""

    code = "DEV302"


def _scopes(tree: ast.Module):
    yield tree
    for n in walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield n


def _own_nodes(scope):
    """Nodes of a scope, without descending into nested functions."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(n))


class OptimizerStateCreatedBeforeMove(Rule):
    """DEV304: an optimizer whose `__init__` creates per-parameter state tensors is built before the
    model is moved (interpreter)."""

    code = "DEV304"


class FusedOptimizerResume(Rule):
    """DEV401: fused AdamW resumed from a cpu-mapped checkpoint; HF Trainer optim="adamw_torch_fused" + resume."""

    code = "DEV401"

    def check(self, ctx: Context) -> list[Finding]:
        out = self._checked(ctx)
        # the interpreter's: the checkpoint loaded or the optimizer restored in another function or file
        seen = {f.span for f in out}
        return out + [f for f in ctx.findings(self.code) if f.span not in seen]

    def _checked(self, ctx: Context) -> list[Finding]:
        out = []
        if not re.search(r"(fused|capturable)\s*=\s*True|_fused[\"']", ctx.source):
            return out
        for scope in _scopes(ctx.tree):
            nodes = list(_own_nodes(scope))
            fused: dict[str, ast.Call] = {}
            cpu_load = False
            for n in nodes:
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                        and isinstance(n.value, ast.Call):
                    q = ctx.qual(n.value.func)
                    f = kw(n.value, "fused") or kw(n.value, "capturable")
                    if q.startswith("torch.optim.") and q.rsplit(".", 1)[-1] in T.OPTIMIZERS and \
                            isinstance(f, ast.Constant) and f.value is True:
                        fused[n.targets[0].id] = n.value
                if isinstance(n, ast.Call) and ctx.qual(n.func) == "torch.load":
                    ml = kw(n, "map_location")
                    if ml is not None and "cpu" in ctx.text(ml):
                        cpu_load = True
            if not fused or not cpu_load:
                continue
            for n in nodes:
                if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute) \
                        and n.value.func.attr == "load_state_dict" and isinstance(n.value.func.value, ast.Name) \
                        and n.value.func.value.id in fused:
                    name = n.value.func.value.id
                    later_state = any(isinstance(m, ast.Attribute) and m.attr == "state" and isinstance(m.value, ast.Name)
                                      and m.value.id == name and m.lineno > n.lineno for m in nodes)
                    if later_state:
                        continue
                    loop = (f"for param, state in {name}.state.items():\n"
                            f"    if \"step\" in state and torch.is_tensor(state[\"step\"]):\n"
                            f"        state[\"step\"] = state[\"step\"].to(device=param.device, dtype=torch.float32)")
                    out.append(Finding(
                        self.code, span(n),
                        f"`{name}` is a fused optimizer (line {fused[name].lineno}) resumed from a checkpoint mapped to "
                        f"cpu: its `state_steps` stay on cpu while the fused kernel needs them on the parameters' device "
                        f"(torch < 2.1 fails in `step()`)", [(span(fused[name]), "fused optimizer created here")],
                        FixPlan("insert_after", span(n), text=loop, title="Move each state['step'] to its parameter's device")))
        resumes = [n for n in ctx.index.nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr == "train" and (r := kw(n, "resume_from_checkpoint")) is not None
                   and not (isinstance(r, ast.Constant) and r.value in (None, False))]
        if resumes:
            for n in ctx.index.nodes:
                if isinstance(n, ast.keyword) and n.arg == "optim" and isinstance(n.value, ast.Constant) and \
                        isinstance(n.value.value, str) and "fused" in n.value.value:
                    new = n.value.value.replace("_fused", "")
                    out.append(Finding(
                        self.code, span(n.value),
                        f"optim={n.value.value!r} resumed with `resume_from_checkpoint` (line {resumes[0].lineno}): the "
                        f"fused AdamW state is restored with `state_steps` on the wrong device (fails on torch < 2.1)",
                        [(span(resumes[0]), "resumed here")],
                        FixPlan("replace", span(n.value), text=repr(new), title=f"Use the non-fused optimizer {new!r}")))
        return out




class GradScalerStateNotSaved(Rule):
    """DEV402: a GradScaler is trained with, but its state is missing from the checkpoint / the resume."""

    code = "DEV402"

    def check(self, ctx: Context) -> list[Finding]:
        if "GradScaler" not in ctx.source:
            return []
        out = []
        for scope in _scopes(ctx.tree):
            nodes = list(_own_nodes(scope))
            scalers = {}
            for n in nodes:
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and \
                        isinstance(n.value, ast.Call) and ctx.qual(n.value.func).endswith("GradScaler"):
                    scalers[n.targets[0].id] = n
            if not scalers:
                continue
            saved = {c.func.value.id for c in nodes if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                     and isinstance(c.func.value, ast.Name) and c.func.attr == "state_dict"}
            restored = {c.func.value.id for c in nodes if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                        and isinstance(c.func.value, ast.Name) and c.func.attr == "load_state_dict"}
            name, created = next(iter(scalers.items()))
            out += scaler_state_findings(
                ctx, self.code, [n for n in nodes if isinstance(n, ast.Call)], name, created, name in saved,
                name in restored, lambda recv: isinstance(recv, ast.Name) and "optim" in recv.id.lower())
        return out + member_scaler_findings(ctx, self.code)


RULES = [LoadWithoutMapLocation(), MapLocationOnLoadStateDict(), OptimizerLoadedBeforeMove(), OptimizerStateCreatedBeforeMove(), FusedOptimizerResume(), GradScalerStateNotSaved()]
