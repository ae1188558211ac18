"""nn.Module objects and other heap objects: calling a module (its forward), moves (`.to`, `.cuda`)
propagated to submodules and buffers, module methods, optimizer / tokenizer / dict methods.
"""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as FW, torch_api as T
from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.lattice import CPU, CUDA, TOP, Dev, concrete, definitely_differ, join
from devflow.analysis.program import LINE_BASE
from devflow.model import Span
from devflow.analysis.interp.apply_overrides import blur_state_of_apply_override
from devflow.analysis.interp.dict_methods import known_dict_method
from devflow.analysis.interp.forward_hooks import REGISTER as HOOK_REGISTRATIONS, register_hook, remove_hook, \
    run_forward_hooks, run_inner_hooks, run_pre_hooks
from devflow.analysis.interp.module_walks import walked_modules
from devflow.analysis.interp.spread_kwargs import spread_keywords
from devflow.analysis.values import ENCODING, LIST_ENCODING, MODEL_OUTPUT, host_data, module_tree, UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.param_identity import carry_params
from devflow.analysis.interp.records import is_attribute_dict
from devflow.analysis.interp.module_dicts import is_module_dict, read_entry
from devflow.analysis.interp.held_tensors import tensor_leaves, with_leaves
from devflow.analysis.interp.repeat_move import record_move, repeated_move, simple_statement
from devflow.analysis.interp.expressions import modules_of_choice
from devflow.analysis.interp.frames import span_of, FuncRef, DTYPES, HEAD_RESETTERS, placement_changed
from devflow.analysis.interp.class_bases import any_base, unresolved_base
from devflow.analysis.interp.optimizer_base import optimizer_base_init
from devflow.analysis.interp.optimizer_restore import restore_saved_groups
from devflow.analysis.interp.input_embeddings import input_embeddings_of


def derives_from_optimizer(info, index) -> bool:
    """A project class built on `torch.optim.Optimizer` (or on a built-in optimizer)."""
    return any_base(info, index, lambda q, resolved: q.startswith("torch.optim.")
                    and q.rsplit(".", 1)[-1] in T.OPTIMIZERS | {"Optimizer"})


def places_state_itself(info, seen=None) -> bool:
    """A project optimizer whose own methods bring state to each parameter's device (`state['z'].to(p.device)`
    in `eval()` / `train()` / `step()`): state left on another device is moved where it is used."""
    seen = seen if seen is not None else set()
    if id(info) in seen:
        return False
    seen.add(id(info))
    for fn in info.methods.values():
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "to"
               and any(isinstance(a, ast.Attribute) and a.attr == "device" for a in list(n.args) + [k.value for k in n.keywords])
               for n in ast.walk(fn)):
            return True
    return any(places_state_itself(b, seen) for b in info.base_infos)


def eager_state_store(info, index) -> ast.AST | None:
    """The first statement, in `__init__` or a method it calls on `self` (any depth), that stores a
    tensor made by a torch function into the per-parameter state (`self.state[p][k] = torch...`, or
    through `state = self.state[p]`). torch.optim's own optimizers create their state lazily, in the
    first `step()`, on the parameters' device at that time; such a class creates it now, where the
    parameters are now."""
    home = info.home or index
    step = info.method("step")
    if step is not None and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "to"
                                and any(isinstance(a, ast.Attribute) and a.attr == "device"
                                        for a in list(n.args) + [k.value for k in n.keywords])
                                for n in ast.walk(step[0])):
        return None  # step() brings its state to each parameter's device (`.to(p.device)`) itself
    # (method, positions of its arguments that are a parameter's state dict: passed `state` on)
    todo, seen = [("__init__", ())], set()
    while todo:
        name, state_args = todo.pop()
        found = info.method(name)
        if found is None or (id(found[0]), state_args) in seen:
            continue
        fn, owner = found
        seen.add((id(fn), state_args))
        fhome = owner.home or home
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
        aliases = {params[i] for i in state_args if i < len(params)}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and \
                    _is_self_state(n.value):
                aliases.add(n.targets[0].id)
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id == "self":
                todo.append((n.func.attr, tuple(i for i, a in enumerate(n.args) if _is_self_state(a) or
                                                isinstance(a, ast.Name) and a.id in aliases)))
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and any(
                    isinstance(t, ast.Subscript) and (_is_self_state(t.value) or _is_self_state_map(t.value) or
                                                      isinstance(t.value, ast.Name) and t.value.id in aliases)
                    for t in n.targets) and _makes_tensor(n.value, fhome):
                return n  # state[k] = tensor, self.state[p][k] = tensor, self.state[p] = {k: tensor}
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("update", "setdefault") \
                    and (_is_self_state(n.func.value) or isinstance(n.func.value, ast.Name) and n.func.value.id in aliases) \
                    and any(_makes_tensor(a, fhome) for a in list(n.args) + [k.value for k in n.keywords]):
                return n  # state.update(buf=torch.zeros_like(p))
            if _param_copies_on_self(n, fhome):
                return n  # self.slow_weights = [[p.clone().detach() for p in group["params"]] for group in ...]
            if isinstance(n, (ast.For, ast.AsyncFor)) and _names_parameters(n.iter):
                found = _param_copy_in_loop(n, fhome)
                if found is not None:
                    return found  # for p in group["params"]: self.slow[p] = p.clone() / self.slow.append(...)
    return None


def _param_copies_on_self(node, index) -> bool:
    """`self.<attr> = <comprehension over the parameters>` whose elements are tensors made from them
    (LookAhead's slow weights: `[[p.clone().detach() for p in group['params']] for group in self.param_groups]`):
    per-parameter state the optimizer keeps outside `self.state`, made where the parameters are now."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self"):
        return False
    comps = [c for c in ast.walk(node.value) if isinstance(c, (ast.ListComp, ast.GeneratorExp, ast.DictComp))]
    over_params = any(_names_parameters(g.iter) for c in comps for g in c.generators)
    return over_params and _makes_tensor(node.value, index)


def _param_copy_in_loop(loop, index) -> ast.AST | None:
    """In a loop over the parameters, a tensor made from them kept on the optimizer outside `self.state`:
    `self.<attr>[p] = p.clone()`, `self.<attr>.append(torch.zeros_like(p))`."""
    for n in ast.walk(loop):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Subscript) and _self_attr(t.value) for t in n.targets) \
                and _makes_tensor(n.value, index):
            return n
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append" \
                and _self_attr(n.func.value) and n.args and _makes_tensor(n.args[0], index):
            return n
    return None


def _self_attr(node) -> bool:
    """`self.<attr>`, other than the per-parameter `self.state` (its own rules above)."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
        and node.attr != "state"


def _names_parameters(node) -> bool:
    """`group['params']`, `self.param_groups`: an optimizer's parameters."""
    return any(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == "params"
               or isinstance(n, ast.Attribute) and n.attr == "param_groups" for n in ast.walk(node))


def _is_self_state(node) -> bool:
    """`self.state[...]`"""
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "state" \
        and isinstance(node.value.value, ast.Name) and node.value.value.id == "self"


def _is_self_state_map(node) -> bool:
    """`self.state` itself (`self.state[p] = {...}`)."""
    return isinstance(node, ast.Attribute) and node.attr == "state" and isinstance(node.value, ast.Name) and \
        node.value.id == "self"


# Tensor methods that make a new tensor on the receiver's device (`p.new_zeros(...)`, `p.clone()`).
_NEW_TENSOR_METHODS = frozenset({"new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "clone"})


def _makes_tensor(node, index) -> bool:
    for c in ast.walk(node):
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in _NEW_TENSOR_METHODS and \
                not (isinstance(c.func.value, ast.Name) and c.func.value.id in ("self", "copy")):
            return True
        if isinstance(c, ast.Call):
            d = index.dotted(c.func)
            q = index.qualify(d) if d else ""
            last = q.rsplit(".", 1)[-1]
            if q.startswith("torch.") and (last in T.FACTORIES or last in T.LIKE_FACTORIES or last in T.MAYBE_SCALAR_FACTORIES):
                return True
    return False


def _const_true(v) -> bool:
    return v is not None and v.kind == "const" and v.const is True


def _layer_of_unmoved_model(obj) -> Origin | None:
    """A torch layer inside a project model that was built on the cpu and never moved: what it computes is
    on the cpu because the model was not moved, which is where that is said (and fixed)."""
    root = getattr(obj, "root_origin", None)
    if root is None or obj.moved is not None or obj.cls is not None or obj.dev is None or not obj.dev.is_cpu:
        return None
    return Origin(root.span, f"computed by a layer of the model created at line {root.span.line} and never moved",
                  kind="param")


def _guards(stack: list) -> list:
    """The `if` statements around the innermost statement, as (if, True when it sits in the body;
    False for an `else` branch: a guard a fix could not copy)."""
    return [(st, any(s is inner for s in st.body)) for st, inner in zip(stack, stack[1:]) if isinstance(st, ast.If)]


def _places_at_construction(obj, dev: Dev, frame, recv_text: str) -> bool:
    """`self.to(device)` at the end of `__init__` with the cpu (`device='cpu'`, the default of a
    constructor that takes a device): the module is built on the cpu and stays there, it is not moved.
    Kept as never moved, so the model that holds it is the one at fault when it meets an input elsewhere."""
    return recv_text == "self" and dev is not None and dev.is_cpu and obj.moved is None \
        and (obj.dev is None or obj.dev.is_cpu) and getattr(frame.node, "name", "") == "__init__" \
        and frame.env.get("self") is not None and frame.env["self"].obj is obj


def _built_in_place_outside_forward(obj, frame) -> bool:
    """A module constructed and called in one expression where DEV104 does not speak for it: DEV104
    reports torch.nn layers built in code that a forward() runs; any other module (a torchmetrics metric,
    a project class), or a torch.nn layer built outside every forward, is judged like a named one."""
    if not (obj.qual or "").startswith("torch.nn."):
        return True
    f = frame
    while f is not None:
        if getattr(f.node, "name", "") == "forward":
            return False
        f = f.parent
    return True


class Modules:
    """Module objects: calls, moves and methods; methods of other heap objects."""

    def call_module(self, node, mod: Val, args, kwargs, frame, method: str = "") -> Val:
        hooked = not method and mod.obj is not None and bool(getattr(mod.obj, "forward_hooks", None)) and not self.standalone
        if hooked:
            args = run_pre_hooks(self, node, mod, list(args), kwargs, frame)
        out = self._call_module(node, mod, args, kwargs, frame, method)
        if hooked:
            out = run_forward_hooks(self, node, mod, list(args), kwargs, out, frame)
        if not method and mod.obj is not None and mod.obj.cls is None and not self.standalone:
            run_inner_hooks(self, node, mod, frame)  # (torch's own forward calls the hooked submodules)
        return out if method else self.data_parallel_gather(mod, out, node)

    def _call_module(self, node, mod: Val, args, kwargs, frame, method: str = "") -> Val:
        obj = mod.obj
        spread = self._spread.get(id(node), [])
        if not method:
            wrapped = self.data_parallel_call(node, mod, args, kwargs)
            if wrapped is not None:
                args, kwargs, mod = wrapped
                # `model(**batch)`: DataParallel / DDP scatter the spread inputs with the others
                spread = [(UNKNOWN if v.kind == "tensor" else v, t) for v, t in spread]
            obj = mod.obj
            own_call = obj.cls.module_call() if obj is not None and obj.cls is not None else None
            if own_call is not None:
                # `type(m).__call__` is what runs: a project class that overrides nn.Module.__call__ (a GAN loss
                # taking `(prediction, target_is_real)`) runs its own `__call__`, not `forward`
                if self.standalone:
                    return UNKNOWN
                self._interproc.add(id(node))
                return self.call_function(FuncRef(own_call[0], None, own_call[1], "method"), args, kwargs, mod, node)
        arg_pairs = [(v, self.text(a)) for v, a in zip(args, node.args)] + \
                    [(v, kw.arg or "") for kw in node.keywords for v in [kwargs.get(kw.arg)] if v is not None] + \
                    spread_keywords(node, kwargs) + spread
        if getattr(obj, "traced", None) is not None and self.traced_call(node, obj, arg_pairs, frame):
            return UNKNOWN
        arg_pairs = self.without_device_free_inputs(obj, node, arg_pairs)
        if obj is not None and obj.cls is None:
            arg_pairs += self._nested_tensors(args, node.args)  # `self.lstm(x, (h0, c0))`: every tensor goes in
        if isinstance(node.func, ast.Call):
            if obj is not None and obj.dev is not None and any(
                    v.kind == "tensor" and definitely_differ(obj.dev, v.dev) for v, _ in arg_pairs):
                if not _built_in_place_outside_forward(obj, frame):
                    return UNKNOWN  # DEV104 reports the module built in place; no cascade
                # `F1(num_classes=n)(preds, y)` in a training step: the fresh module holds its state where
                # its constructor made it, exactly as if it had been named first
                self.module_mix(node, mod, arg_pairs, frame, method)
                return UNKNOWN
        elif self._runs_inside(obj, frame, method) and not spread:
            # a project submodule called from its parent's code: PyTorch raises inside its forward, where a
            # parameter meets the input; said there (a `**batch` spread into it binds parameters not known here
            # by name, so that mix is judged at this call, as for a model called from the top level)
            fn, owner = obj.cls.method(method or "forward")
            self._interproc.add(id(node))
            return self.call_function(FuncRef(fn, None, owner, "method"), args, kwargs, mod, node)
        elif self.module_mix(node, mod, arg_pairs, frame, method):
            return UNKNOWN  # it fails here at run time; what follows would only repeat the finding
        if obj is not None and obj.cls is not None:
            if self.standalone:
                return UNKNOWN
            found = obj.cls.method("forward" if not method else method)
            if found is not None:
                self._interproc.add(id(node))
                return self.call_function(FuncRef(found[0], None, found[1], "method"), args, kwargs, mod, node)
            if not method and obj.role == "metric":
                # a project metric on the library's forward (generated: the methods it hands the call's arguments
                # to): `metric(preds, target)` runs the project's `update(preds, target)`
                for name in sorted(FW.METRIC_FORWARD_RUNS):
                    run = obj.cls.method(name)
                    if run is not None:
                        self._interproc.add(id(node))
                        self.call_function(FuncRef(run[0], None, run[1], "method"), args, kwargs, mod, node)
                return UNKNOWN  # the batch value `compute()` gives
            if not method and obj.dev is not None and obj.dev.known and not obj.dispatched and _torch_nn_forward(obj.cls):
                # `class Block(nn.Sequential)` built by `super().__init__(conv, bn, act)`: torch's own forward runs
                # on the module's device, as for the torch.nn class itself
                return Val("tensor", obj.dev, obj.moved or obj.origin)
            return UNKNOWN
        if obj is not None and not method and obj.qual.endswith("Sequential") and obj.items and len(args) == 1 \
                and not kwargs and not self.standalone and any(i.obj is not None and i.obj.cls is not None for i in obj.items):
            # nn.Sequential runs its modules in order, each on the previous one's output: a project module
            # inside runs its own forward()
            v = args[0]
            for item in obj.items:
                v = self.call_module(node, item, [v], {}, frame)
            return v
        if obj is not None and obj.pending:
            return UNKNOWN  # a module left on cpu after the move (DEV101 / DEV102): what it computes repeats that
        if obj is not None and obj.dev is not None and obj.dev.known and not obj.dispatched:
            return Val("tensor", obj.dev, obj.moved or _layer_of_unmoved_model(obj) or obj.origin,
                       scalar=obj.role in ("loss", "metric", "criterion"),
                       batch=MODEL_OUTPUT if not method and _library_model(obj) else "")
        tensors = [v for v, _ in arg_pairs if v.kind == "tensor"]
        if tensors and obj is not None and obj.dev is None:
            named = [(v, self.text(a)) for v, a in zip(args, node.args) if v.kind == "tensor"] + \
                    [(kwargs[k.arg], k.arg) for k in node.keywords if k.arg in kwargs and kwargs[k.arg].kind == "tensor"]
            if len(named) >= 2 and self.check_mix(node, named, frame):
                return UNKNOWN
            return self.result_of(tensors)
        return UNKNOWN

    def _set_mode(self, mod: Val, mode, node, seen: set, run_own: bool = True) -> None:
        """nn.Module.train(mode) / eval(): sets `training` on the module and every submodule, and runs
        the `train` overrides of project submodules (which may cache tensors for inference)."""
        obj = mod.obj
        if obj is None or id(obj) in seen:
            return
        seen.add(id(obj))
        obj.training = mode
        obj.attrs.pop("training", None)  # `m.training = True` assigned earlier: the same flag, set anew here
        for name in list(obj.children):
            c = obj.attrs.get(name)
            if c is not None and c.kind == "module":
                self._set_mode(c, mode, node, seen)
        for item in obj.items:
            if item.kind == "module":
                self._set_mode(item, mode, node, seen)
        found = obj.cls.method("train") if obj.cls is not None and run_own and mode is not None else None
        if found is not None and not self.standalone and not getattr(obj, "standalone", False):
            self.call_function(FuncRef(found[0], None, found[1], "method"), [Val("const", const=mode)], {}, mod, node)

    def _runs_inside(self, obj, frame, method: str) -> bool:
        """A same-project module (its forward known) called from a method of another module."""
        # (not one held in a plain list or added after a move: DEV101 / DEV103 report those where they are added)
        return obj is not None and obj.cls is not None and not self.standalone and not getattr(obj, "standalone", False) \
            and not obj.pending and not getattr(obj, "in_plain_container", False) \
            and obj.cls.method(method or "forward") is not None \
            and frame.owner is not None and getattr(frame.owner, "is_module", False)

    def _nested_tensors(self, args, nodes, depth: int = 0) -> list:
        """Tensors inside tuple / list arguments (to two levels), with their source text."""
        out = []
        for v, a in zip(args, nodes):
            if v.kind == "obj" and v.obj is not None and v.obj.kind in ("tuple", "list") and v.obj.items:
                elts = a.elts if isinstance(a, (ast.Tuple, ast.List)) and len(a.elts) == len(v.obj.items) else [a] * len(v.obj.items)
                for it, e in zip(v.obj.items, elts):
                    if it.kind == "tensor":
                        out.append((it, self.text(e)))
                if depth < 1:
                    out += self._nested_tensors(v.obj.items, elts, depth + 1)
            elif v.kind == "obj" and v.obj is not None and v.obj.kind in ("tuple", "list") and v.elem is not None \
                    and v.elem.kind == "tensor":
                # `tuple(each.detach() for each in h)`: elements known only together, all on the joined device
                out.append((v.elem, self.text(a)))
        return out

    def move_module(self, node, mod: Val, dev: Dev, frame, recv_text: str, move_text: str) -> None:
        obj = mod.obj
        if obj is None:
            return
        if obj.dispatched:
            self.add(Finding("DEV501", span_of(node),
                             f"`{self.text(node)}` moves a model that accelerate placed (device_map / quantization)"
                             + (f" ({obj.origin.reason})" if obj.origin else "")
                             + "; accelerate refuses to move an offloaded model and the move undoes the placement",
                             [(obj.origin.span, obj.origin.reason)] if obj.origin else [],
                             FixPlan("remove_move", span_of(node), text=recv_text,
                                     title="Drop the move: device_map already placed the model")))
            return
        if getattr(obj, "standalone", False):
            return
        if _places_at_construction(obj, dev, frame, recv_text):
            return
        origin = Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}", kind="placed")
        if getattr(self, "branch_moves", None) is not None:
            self.branch_moves.append((obj, dev, obj.dev))  # the moves of an undecided `if` branch (statements.s_If)
        obj.move_call = move_text  # type: ignore[attr-defined]
        obj.move_recv = recv_text  # type: ignore[attr-defined]
        record_move(self, origin, recv_text, move_text, frame)
        seen: set[int] = set()
        self._cur_move = (move_text, frame)
        self._cur_guards = _guards(frame.stmt_stack)
        self._move_rec(obj, dev, origin, frame, seen)
        pend = frame.pending_names.pop(recv_text, None)
        if pend is not None:
            pend.cancelled = True

    def _move_rec(self, obj: Obj, dev: Dev, origin: Origin, frame, seen: set) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if (obj.dev is not None or obj.kind == "module") and not (obj.dev is None and getattr(obj, "stateless", False)):
            obj.dev = dev  # a module holding no tensor (a loss without weight, an activation) has no device to change
        obj.moved = origin
        obj.moved_frame = frame
        if obj.cls is not None:
            self.moved_classes.add(obj.cls.name)
        for f in obj.pending:
            f.cancelled = True
        obj.pending.clear()
        for opt in obj.optimizers:
            if opt.loaded_at is not None and definitely_differ(CPU, dev):
                lo = opt.loaded_at
                opt.loaded_at = None
                fix = self._resume_fix(opt)
                f = Finding("DEV302", lo.span,
                            f"the optimizer state is loaded while the model is still on cpu ({lo.reason}); the model "
                            f"is {origin.reason}, so the optimizer's state stays on cpu and `step()` mixes devices",
                            [(origin.span, origin.reason)], fix)
                opt.stale = self.add(f)  # type: ignore[attr-defined]
            eager = getattr(opt, "eager_state", None)
            if eager is not None and definitely_differ(eager[2], dev):
                opt.eager_state = None  # type: ignore[attr-defined]
                store, made, before = eager
                stepped = store is not None and made.span == span_of(store)
                where = f"in `{self.text(store)}`, its first step" if stepped else \
                    f"in `__init__` (line {store.lineno})" if store is not None else "in `__init__`"
                related = [(origin.span, origin.reason)] + \
                    ([(span_of(store), "state tensor created here")] if store is not None and not stepped else [])
                f = opt.stale = self.add(Finding(  # type: ignore[attr-defined]
                    "DEV304", made.span,
                    f"`{opt.qual}` creates its per-parameter state {where}, on the device the parameters have then "
                    f"({before.render()}); the model is {origin.reason}, so the state stays behind and `step()` mixes "
                    f"devices: " + ("move the model before the first step" if stepped else "build the optimizer after the move"),
                    related, None if stepped else self._build_after_move_fix(opt, frame)))
                # An optimizer seen stepping before the move fails only if it steps again after it (a
                # model moved to the cpu for inference once training is over is fine): held until
                # then. One never seen stepping is used out of view (returned, stored): reported.
                if getattr(opt, "steps_seen", False) and not getattr(f, "confirmed", False):
                    f.cancelled = True
                    opt.awaiting_step = f  # type: ignore[attr-defined]
        for name in list(obj.children):
            c = obj.attrs.get(name)
            if c is not None and c.obj is not None:
                self._move_rec(c.obj, dev, origin, frame, seen)
        for name in list(obj.buffers):
            b = obj.attrs.get(name)
            if b is not None and b.kind == "tensor":
                obj.attrs[name] = Val("tensor", dev, origin, scalar=b.scalar, owner=b.owner)
        for item in obj.items:
            if item.kind == "module" and item.obj is not None:
                self._move_rec(item.obj, dev, origin, frame, seen)
        carry_params(obj, seen, dev, origin)  # (parameters kept in plain lists are the moved objects)
        if not blur_state_of_apply_override(obj):  # (an `_apply` override moves what it likes)
            self._left_behind(obj, dev, origin)

    def _left_behind(self, obj: Obj, dev: Dev, origin: Origin) -> None:
        """Plain tensor attributes (neither parameters nor buffers) stay where they are when the module
        moves. Those set in `__init__` are DEV105's; one set by another method before the move (a cache
        made by a `train()` override) is said to be left behind by this move. So is one already put on another
        device where it was set (`self.priors = priors.to(self.device)` in `__init__`, the accelerator when
        one exists; anchors cached by the first forward on the GPU) when the module is then moved elsewhere
        (to the cpu): it keeps the device it was put on. A plain list of tensors, or a dict of tensors (or of
        tuples of them), is left behind the same way."""
        for name, (st, fn) in getattr(obj, "attr_sets", {}).items():
            v = obj.attrs.get(name)
            if v is None or name in obj.buffers:
                continue
            items = [v] if v.kind == "tensor" else tensor_leaves(v) or []
            stays = {_stays(i, dev, fn) for i in items}
            if len(stays) != 1 or None in stays:
                continue
            left = stays.pop()
            where = "" if left.is_cpu else f" on {left.render()}"
            why = Origin(span_of(st), f"`self.{name}`, a plain tensor attribute set at line {st.lineno}{where}, is not moved "
                                      f"when the module is {origin.reason}: `.to()` moves parameters and buffers only", kind="attr")
            if v.kind == "tensor":
                obj.attrs[name] = Val("tensor", left, why)
            else:
                self.__dict__.setdefault("list_attr_sets", set()).add(id(st))  # (no buffer can hold a container)
                obj.attrs[name] = with_leaves(v, lambda i: Val("tensor", left, why, scalar=i.scalar))

    def _build_after_move_fix(self, opt: Obj, move_frame) -> FixPlan | None:
        """Swap the optimizer's construction below the move when both sit in one block, one line each,
        back to back with the lines between, none of which reads the optimizer."""
        frame, a = getattr(opt, "created_in", (None, None))
        if frame is not move_frame or a is None or not move_frame.stmt_stack or not isinstance(a, ast.Assign):
            return None
        b = move_frame.stmt_stack[-1]
        body = next((lst for n in ast.walk(frame.node) for f in ("body", "orelse", "finalbody")
                     if isinstance(lst := getattr(n, f, None), list) and any(s is a for s in lst)
                     and any(s is b for s in lst)), None)
        if body is None:
            return None
        i = next(k for k, s in enumerate(body) if s is a)
        j = next(k for k, s in enumerate(body) if s is b)
        run = body[i:j + 1]
        if j <= i or any(s.lineno != s.end_lineno or s.lineno >= LINE_BASE for s in run) or \
                any(y.lineno != x.end_lineno + 1 for x, y in zip(run, run[1:])) or \
                any(self.lines[s.lineno - 1][s.end_col_offset:].strip() for s in run):  # a trailing comment
            return None
        names = {self.text(t) for t in a.targets}
        if any(self.text(n) in names for s in run[1:] for n in ast.walk(s) if isinstance(n, (ast.Name, ast.Attribute))):
            return None
        indent = self.lines[a.lineno - 1][:a.col_offset]
        text = ("\n" + indent).join(self.text(s) for s in run[1:] + [a])
        sa, sb = span_of(a), span_of(b)
        return FixPlan("replace", Span(sa.line, sa.col, sb.end_line, sb.end_col), text=text,
                       title=f"Build the optimizer after the move: move `{self.text(a)}` below `{self.text(b)}`")

    def stepped(self, opt: Obj) -> None:
        """`opt.step()` (built-in or a project optimizer's own): state left behind by an earlier move
        is used now, so its held finding stands."""
        opt.steps_seen = True  # type: ignore[attr-defined]
        for rec in self.step_recorders:  # replayed when a memoised call containing this step repeats
            rec.append(opt)
        waiting = getattr(opt, "awaiting_step", None)
        if waiting is not None:
            waiting.cancelled = False
            waiting.confirmed = True  # type: ignore[attr-defined]
            opt.awaiting_step = None  # type: ignore[attr-defined]

    def supersede_optimizers(self, mods: list) -> None:
        """A new optimizer over the same modules, built after the move: the stale one is replaced
        (`optimizer = Adam(model.parameters())` again, state loaded again), so its finding goes."""
        if not mods:
            return
        ids = {id(m) for m in mods}
        for m in mods:
            for old in m.optimizers:
                f = getattr(old, "stale", None)
                if f is not None and {id(x) for x in old.modules} == ids:
                    f.cancelled = True
                    old.stale = None  # type: ignore[attr-defined]
                    old.awaiting_step = None  # type: ignore[attr-defined]

    def parse_to_args(self, args, kwargs, recv_dev) -> Dev | None:
        """The device a `.to(...)` call moves to; `recv_dev` when it only changes the dtype; TOP if unknown."""
        cand = kwargs.get("device")
        if cand is None and args:
            cand = args[0]
        if cand is None or cand.kind == "const" and cand.const is None:
            return recv_dev  # `.to(None)` / `.to(device=None)`: Tensor, Module and BatchEncoding stay where they are
        if cand.kind == "device":
            return cand.dev or TOP
        if cand.kind == "tensor":
            return cand.dev or TOP
        if cand.kind == "const" and isinstance(cand.const, str):
            return concrete(cand.const) or TOP
        if (cand.kind == "const" and isinstance(cand.const, int) and not isinstance(cand.const, bool)) or cand.kind == "rank":
            return self.cuda_index_dev(cand)
        if cand.kind == "qual" and cand.const.startswith("torch.") and cand.const.rsplit(".", 1)[-1] in DTYPES:
            return recv_dev
        return TOP

    def module_method(self, node, mod: Val, name: str, args, kwargs, frame) -> Val:
        obj = mod.obj
        if self.lightning_group is not None and name in FW.LIGHTNING_SYNCED_LOGS:
            self.check_synced_log(node, name, args, kwargs)
        # (`layer = getattr(self, name); layer(x)`: a bound method called by another name has no receiver text)
        recv_text = self.text(node.func.value) if isinstance(node.func, ast.Attribute) else mod.text or self.text(node.func)
        if name in ("to", "cuda", "cpu"):
            if name == "to":
                dev = self.parse_to_args(args, kwargs, obj.dev)
            elif name == "cuda":
                dev = (self.cuda_index_dev(args[0]) if args else None) or CUDA
            else:
                dev = CPU
            if dev is not None and (dev != obj.dev or name != "to" or True):
                move_text = self.text(node)[len(recv_text):]
                if dev is not TOP or obj.dispatched:
                    self.move_module(node, mod, dev, frame, recv_text, move_text)
                elif obj is not None:
                    obj.dev = TOP
                    obj.moved = Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}")
                    for f in obj.pending:
                        f.cancelled = True
                    self._move_rec(obj, TOP, obj.moved, frame, set())
            return mod
        if name in HOOK_REGISTRATIONS and obj is not None:
            return register_hook(obj, name, args, kwargs)
        if name in ("train", "eval"):
            mode = None if name == "train" and args and args[0].kind != "const" else \
                (name == "train") if not args else bool(args[0].const)
            via_super = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call) \
                and isinstance(node.func.value.func, ast.Name) and node.func.value.func.id == "super"
            override = obj.cls.method("train") if name == "eval" and not via_super and obj is not None \
                and getattr(obj.cls, "method", None) is not None else None
            if override is not None:
                # nn.Module.eval() is `return self.train(False)`: a class overriding train() (one flushing a
                # cache when it leaves training) runs its override
                self.call_function(FuncRef(override[0], None, override[1], "method"), [Val("const", const=False)],
                                   {}, mod, node)
                return mod
            self._set_mode(mod, mode, node, set(), not via_super)
            return mod
        if name == "apply" and len(args) == 1 and not kwargs and args[0].kind == "func" and not self.standalone \
                and (walked := walked_modules(obj, "modules")) is not None:
            # nn.Module.apply(fn) calls fn on every submodule, then on the module itself
            for m in reversed(walked.obj.items):
                self.call_function(args[0].func, [m], {}, None, node)
            return mod
        if name in ("half", "float", "double", "bfloat16", "requires_grad_", "share_memory", "apply", "type",
                    "zero_grad", "to_empty"):
            return mod
        if name in ("parameters", "named_parameters", "buffers", "named_buffers"):
            owner = getattr(obj, "part_of", None) or obj  # a submodule met through modules(): its root's
            return Val("params", obj=owner, const="named" if name.startswith("named") else None)
        if name in ("modules", "children") and not args and not kwargs and not self.standalone \
                and (walked := walked_modules(obj, name)) is not None:
            return walked
        if name in ("modules", "children", "named_modules", "named_children") and not args and not kwargs:
            # some submodule, not which: its parameters are the module's (an optimizer over them is over
            # this module's, moved with it); anything else about it (device, forward) stays unknown
            sub = Obj("module", qual=obj.qual)
            sub.part_of = getattr(obj, "part_of", None) or obj  # type: ignore[attr-defined]
            elem = Val("module", obj=sub)
            if name.startswith("named"):
                elem = Val("obj", obj=Obj("tuple", items=[UNKNOWN, elem]))
            return Val("obj", obj=Obj("iter"), elem=elem)
        if name in ("values", "items") and not args and not kwargs and is_module_dict(obj):
            # `for name, aug in self.augs.items()`: any entry of the ModuleDict (the one they all are, when alike)
            entry = read_entry(obj, UNKNOWN) or UNKNOWN
            return Val("obj", obj=Obj("iter"), elem=entry if name == "values" else Val("obj", obj=Obj("tuple", items=[UNKNOWN, entry])))
        if name == "load_state_dict" and _const_true(kwargs.get("assign")):
            # assign=True: the module's parameters and buffers become the state dict's tensors themselves,
            # so it is where they are (a moved model's `state_dict()`: its device), not where it was built
            sd = args[0] if args else kwargs.get("state_dict")
            elem = sd.elem if sd is not None and sd.kind == "obj" else None
            dev = elem.dev if elem is not None and elem.kind == "tensor" and elem.dev is not None else TOP
            for sub in module_tree(obj):
                sub.dev = dev
            return UNKNOWN
        if name == "state_dict" and obj.dev is not None and obj.dev.known and not getattr(obj, "standalone", False):
            org = obj.moved or self._snapshot_origin(obj, node, frame, f"`{self.text(node)}`")
            return Val("obj", obj=Obj("dict"), elem=Val("tensor", obj.dev, org))
        if self.register_metric_state(obj, name, args, kwargs):
            return Val("const", const=None)
        if name in ("register_buffer", "register_parameter"):
            # by keyword too: `register_buffer(name="bit_array", tensor=t)`, `register_parameter(name=, param=)`
            given = name == "register_buffer" and "tensor" or "param"
            bound = (list(args) + [kwargs[k] for k in ("name", given) if k in kwargs])[:2]
            if len(bound) == 2 and bound[0].kind == "const":
                obj.buffers.add(bound[0].const)
                if bound[0].const in obj.attrs and placement_changed(obj.attrs[bound[0].const], bound[1]):
                    self.heap_epoch += 1  # re-registered elsewhere: memoised calls that read the old buffer are stale
                obj.attrs[bound[0].const] = bound[1]
                return Val("const", const=None)
        if FW.TRACE_ARCHIVE and name == FW.TRACE_ARCHIVE["save_method"] and args and getattr(obj, "traced", None) is not None:
            self.trace_saved(mod, args[0])  # `traced.save("m.pt")`
            return Val("const", const=None)
        if name in ("get_buffer", "get_parameter") and len(args) == 1 and args[0].kind == "const" \
                and isinstance(args[0].const, str) and "." not in args[0].const:
            # `self.get_buffer("cls_probs")`: the tensor registered under that name
            return obj.attrs.get(args[0].const, UNKNOWN)
        if name == "get_submodule" and args:
            # `model.get_submodule(path)`: a module of the model's tree, placed and moved with it. A path of
            # known children is that child; any other stands for the tree itself (what is attached to it
            # is attached inside the model, and moves with it)
            sub = mod
            if args[0].kind == "const" and isinstance(args[0].const, str) and args[0].const:
                for part in args[0].const.split("."):
                    nxt = sub.obj.attrs.get(part) if sub.obj is not None and part in sub.obj.children else None
                    if nxt is None or nxt.kind != "module":
                        return mod
                    sub = nxt
            return sub
        if name in ("add_module", "register_module") and kwargs.keys() <= {"name", "module"} and \
                len(args) + len(kwargs) == 2:
            args = (args + [kwargs[k] for k in ("name", "module") if k in kwargs])[:2]  # add_module(name=, module=)
        if name in ("add_module", "register_module") and len(args) >= 2 and args[1].kind == "module":
            # registered under a computed name too (`self.add_module(f"adapter_{i}", a)`): a child from now on
            key = args[0].const if args[0].kind == "const" else f"<added {id(args[1].obj)}>"
            obj.children.add(key)
            obj.attrs[key] = args[1]
            if args[1].obj is not None:
                args[1].obj.in_plain_container = False  # type: ignore[attr-defined]
            added = getattr(obj, "added_names", None)
            if obj.cls is None and obj.qual.endswith(("Sequential", "ModuleList", "ModuleDict")) and \
                    (added is not None or not obj.items):
                # `nn.Sequential()` built empty and filled by add_module (`"L%i" % i` in a loop too): the child
                # runs in order and places the container; a name given again replaces a child: unknown
                if not (args[0].kind == "const" and args[0].const in (added or ())):
                    obj.added_names = (added or set()) | ({args[0].const} if args[0].kind == "const" else set())  # type: ignore[attr-defined]
                    _add_to_container(obj, [args[1]])
                else:
                    obj.items, obj.dev = [], TOP
            return Val("const", const=None)
        if name in ("append", "extend", "insert") and obj.qual.endswith(("ModuleList", "Sequential")):
            if name == "extend":
                extend_container(obj, args[0] if args else UNKNOWN)
            else:
                _add_to_container(obj, [a for a in args if a.kind == "module"])
            return Val("const", const=None)
        if name in ("forward", "generate", "update", "compute") or (obj.cls is None and name == "__call__"):
            if obj.cls is not None and obj.cls.method(name):
                found = obj.cls.method(name)
                self._interproc.add(id(node))
                return self.call_function(FuncRef(found[0], None, found[1], "method"), args, kwargs, mod, node)
            if name == "generate":
                self.generate_callbacks(node, mod, kwargs, frame)
            return self.call_module(node, mod, args, kwargs, frame, method=name)
        if name in HEAD_RESETTERS and obj.cls is None and obj.moved is not None and \
                definitely_differ(self.default_dev, obj.dev) and not getattr(obj, "standalone", False):
            stmt = frame.stmt_stack[-1] if frame.stmt_stack else None
            move = repeated_move(self, obj, frame, stmt.end_lineno or stmt.lineno) if simple_statement(stmt) else None
            fix = FixPlan("insert_after", span_of(stmt), text=f"{move[0]}{move[1]}",
                          title=f"Move the model again: `{move[0]}{move[1]}`") if move else None
            f = self.add(Finding("DEV102", span_of(node),
                                 f"`{self.text(node)}` builds a new head on cpu after `{recv_text}` was moved "
                                 f"({obj.moved.reason}); it stays on cpu", [(obj.moved.span, obj.moved.reason)], fix))
            frame.pending_names[recv_text] = f
            return Val("const", const=None)
        if name == "get_input_embeddings":
            return Val("module", obj=input_embeddings_of(obj))
        if obj.cls is None and name in FW.CALLED_SUBMODULES.get(obj.qual.split(".", 1)[0], ()):
            # `clip_model.text_model(**inputs)`: a submodule of a library model (its own code calls it), where
            # the model's parameters are; what it returns is not modelled
            self.call_module(node, mod, args, kwargs, frame, method=name)
            return UNKNOWN
        if obj.cls is None and name in FW.MODULE_INPUT_METHODS.get(obj.qual.split(".", 1)[0], ()):
            # a library model's method that runs its submodules on the arguments (`get_text_features`): its
            # inputs meet the model's parameters; what it returns (an output object, a tuple) is not modelled
            self.call_module(node, mod, args, kwargs, frame, method=name)
            return UNKNOWN
        return UNKNOWN

    def obj_method(self, node, r: Val, name: str, args, kwargs, frame) -> Val:
        obj = r.obj
        if obj is None:
            return UNKNOWN
        if obj.kind in ("distribution", "generator"):
            return self.framework_obj_method(node, r, name, args, kwargs, frame)
        if obj.kind == "hook_handle":
            return remove_hook(obj) if name == "remove" else UNKNOWN
        if obj.kind == "runner":
            return self.run_traced_model(node, obj, name, args, kwargs, frame)
        if obj.kind in ("executor", "future"):
            return self.executor_method(node, r, name, args, kwargs, frame)
        if obj.kind == "choice" and name in ("to", "cuda", "cpu", "eval", "train", "half", "float") and \
                modules_of_choice(r) is not None:
            for m in obj.items:  # `delegate_model.to(core)` of one of several models: each is moved
                self.module_method(node, m, name, list(args), dict(kwargs), frame)
            return r
        if obj.kind == "instance" and name in ("to", "cuda", "cpu") and obj.cls is not None and \
                unresolved_base(obj.cls, self.index):
            # a project class whose base is not resolved (`TrainerModel` of an uninstalled package) may be an
            # nn.Module: `.to()` may move the submodules it holds, whose placement is then not known
            origin = Origin(span_of(node), f"maybe moved by `{self.text(node)}` at line {node.lineno}")
            for v in list(obj.attrs.values()):
                if v.kind == "module" and v.obj is not None:
                    self._move_rec(v.obj, TOP, origin, frame, set())
            return r
        if name == "__init__" and obj.kind == "instance" and obj.cls is not None and \
                derives_from_optimizer(obj.cls, self.index):
            return optimizer_base_init(obj, args, kwargs)  # `super().__init__(params, defaults)`
        if obj.kind == "accelerator":
            return self.accelerator_method(node, obj, name, args, kwargs, frame)
        if obj.kind == "lightning_trainer":
            return UNKNOWN
        if obj.kind == "lightning_fabric":
            return self.fabric_method(node, r, name, args, kwargs)
        if is_attribute_dict(r):
            return self.config_method(node, r, name, args)
        if obj.kind == "host":
            return host_data()  # `arr.astype(...)`, `rng.choice(...)`: still numpy on the host
        if obj.kind == "autograd_ctx":
            return self.autograd_ctx_method(r, name, args)
        if obj.kind == "list" and name in ("pop", "remove", "clear", "__setitem__", "__delitem__"):
            obj.exact = False  # type: ignore[attr-defined]  # an item taken out: the known items are not all in it
        if obj.kind == "list" and name in ("append", "insert", "extend"):
            v = args[-1] if args else UNKNOWN
            if v.kind == "module" and v.obj is not None and isinstance(node.func.value, ast.Attribute):
                v.obj.in_plain_container = True  # type: ignore[attr-defined]
            if name == "extend":
                v = self.iter_elem(v, None, frame)
            obj.items.append(v)
            r.elem = None
            return Val("const", const=None)
        if obj.kind == "dict":
            if name == "pop" and args and args[0].kind == "const" and getattr(obj, "exact", False):
                # `kwargs.pop("task_name", default)` on a dict whose keys are all known: the entry (gone
                # from the dict afterwards), else the default
                try:
                    v = obj.keys.pop(args[0].const, None)
                except TypeError:
                    v = None
                return v if v is not None else args[1] if len(args) > 1 else UNKNOWN
            if name == "clear" and not args and not kwargs:
                obj.keys.clear()  # `self._cache.clear()`: empty again, whatever keys it had
                obj.exact = True  # type: ignore[attr-defined]
                return Val("const", const=None)
            known = known_dict_method(obj, name, args, kwargs)
            if known is not None:
                return known
            if name not in ("items", "keys", "values", "get", "copy"):
                obj.exact = False  # type: ignore[attr-defined]  # update / pop / setdefault ...: keys change
            if name in ("items",):
                return Val("obj", obj=Obj("iter"), elem=Val("obj", obj=Obj("tuple", items=[UNKNOWN, r.elem or self.elem_of_dict(obj)])))
            if name == "values":
                return Val("obj", obj=Obj("iter"), elem=r.elem or self.elem_of_dict(obj))
            if name == "get" and args and args[0].kind == "const":
                return obj.keys.get(args[0].const, UNKNOWN)
        if obj.kind == "optimizer" or getattr(obj, "project_optimizer", False):
            # (a project optimizer's methods it inherits from torch.optim.Optimizer: `load_state_dict` ...)
            if name == "step":
                self.stepped(obj)
            if name == "step" and getattr(obj, "step_makes_state", False) and getattr(obj, "eager_state", None) is None:
                # the first step() creates the state, on the parameters' device of this moment
                mods = [m for m in obj.modules if m.kind == "module"]
                devs = {m.dev for m in mods}
                if mods and len(devs) == 1 and None not in devs and next(iter(devs)).known and \
                        not any(getattr(m, "standalone", False) or m.dispatched for m in mods):
                    obj.eager_state = (node, Origin(span_of(node), f"`{self.text(node)}` at line {node.lineno}"),  # type: ignore[attr-defined]
                                       next(iter(devs)))
                obj.step_makes_state = False  # type: ignore[attr-defined]
            if name == "load_state_dict":
                self.optimizer_reloaded(obj)
                self.optimizer_restored(node, obj, args, frame)
                if getattr(obj, "project_optimizer", False) and args and args[0].kind == "unknown" and \
                        args[0].obj is not None and args[0].obj.kind == "ckpt" and not self.standalone:
                    restore_saved_groups(self, node, obj, args[0].obj, frame)
                mods = [m for m in obj.modules if m.kind == "module"]
                if mods and all(m.moved is None and (m.dev is None or m.dev.is_cpu) for m in mods) and \
                        any(m.dev is not None for m in mods):
                    obj.loaded_at = Origin(span_of(node), f"`{self.text(node.func)}()` at line {node.lineno}")
                    obj.load_frame = frame  # type: ignore[attr-defined]
            return UNKNOWN
        if obj.kind == "argparser":
            return self.argparser_method(node, obj, name, args, kwargs)
        if obj.kind == "tokenizer":
            if "cpu_ids" in obj.attrs and name == "__call__" and "__opaque__" not in kwargs:
                # a library tokenizer whose call returns its token ids as a tensor (open_clip's): made on the cpu
                return Val("tensor", CPU, Origin(span_of(node), f"token ids made on cpu by `{self.text(node.func)}()` "
                                                                f"at line {node.lineno}"))
            if obj.qual in FW.TOKENIZER_CONSTRUCTORS:  # tiktoken: encode() and friends give Python ints
                return Val("obj", obj=Obj("list", qual="token ids")) if name in FW.TOKENIZER_INT_METHODS else UNKNOWN
            if name in ("encode", "__call__", "apply_chat_template", "batch_encode_plus", "encode_plus"):
                rt = kwargs.get("return_tensors")
                if rt is not None and rt.kind == "const" and rt.const == "pt":
                    # encode() gives a tensor, apply_chat_template() one unless return_dict=True; the rest a BatchEncoding
                    rd = kwargs.get("return_dict")
                    encoding = name not in ("encode", "apply_chat_template") or (rd is not None and rd.kind == "const" and rd.const is True)
                    return Val("tensor", CPU, Origin(span_of(node), f"made on cpu by `{self.text(node.func)}()` at line {node.lineno}"),
                               batch=ENCODING if encoding else "")
                if name == "encode" and (rt is None or (rt.kind == "const" and rt.const is None)) and "__opaque__" not in kwargs:
                    return Val("obj", obj=Obj("list", qual="token ids"))  # a list of Python ints: torch.tensor() of it is on the cpu
                if name in ("__call__", "batch_encode_plus", "encode_plus") and (rt is None or (rt.kind == "const" and rt.const is None)) \
                        and "__opaque__" not in kwargs:
                    # a BatchEncoding of Python lists: each entry (`enc.input_ids`) is a list of ints, torch.tensor() of it on the cpu
                    return Val("obj", obj=Obj("host", qual=LIST_ENCODING))
            ints = FW.HF_TOKENIZER_INT_METHODS.get(name)
            if ints is not None and "__opaque__" not in kwargs and \
                    (ints == "list" or (args and not (args[0].kind == "const" and isinstance(args[0].const, str)))):
                # Python ints (`convert_tokens_to_ids(tokens)`: a list for a list of tokens, an int for one token,
                # whose 0-dim tensor would mix with any device): a tensor made of the list is on the cpu
                return Val("obj", obj=Obj("list", qual="token ids"))
            return UNKNOWN
        return UNKNOWN

    def argparser_method(self, node, parser: Obj, name: str, args, kwargs) -> Val:
        """argparse: an option whose default names an accelerator (`--device cuda:0`, `--gpu cuda`) becomes
        the symbolic device `args.<dest>`: whatever the command line says, the code means it as the accelerator."""
        if name == "add_argument":
            flags = [a.const for a in args if a.kind == "const" and isinstance(a.const, str)]
            dest = kwargs.get("dest")
            dest_name = dest.const if dest is not None and dest.kind == "const" and isinstance(dest.const, str) else None
            if dest_name is None and flags:
                longs = [f for f in flags if f.startswith("--")] or flags
                dest_name = longs[0].lstrip("-").replace("-", "_")
            if dest_name:
                parser.attrs[dest_name] = kwargs.get("default", Val("const", const=None))
            return UNKNOWN
        if name in ("add_argument_group", "add_mutually_exclusive_group"):
            return Val("obj", obj=parser)
        if name in ("parse_args", "parse_known_args"):
            ns = Obj("namespace", qual="argparse.Namespace")
            for dest_name, default in parser.attrs.items():
                # by its default's value, never its name: `--device` with no device default stays unknown
                wants_device = (default.kind == "const" and isinstance(default.const, str) and
                                concrete(default.const) is not None and not default.const.startswith("cpu")) or \
                    (default.kind == "device" and default.dev is not None and default.dev.known and not default.dev.is_cpu)
                if self.rank_option(dest_name):  # torch.distributed.launch passes every process its rank
                    ns.attrs[dest_name] = self.rank_value(f"args.{dest_name}", dest_name)
                elif default.kind == "const" and isinstance(default.const, str) and \
                        self.backend_spec(default) is not None and ":" not in default.const:
                    # a process-group backend (`--dist-backend nccl`): the one the program's own launch uses
                    ns.attrs[dest_name] = Val("obj", obj=Obj("backend_option", qual=default.const), text=f"args.{dest_name}")
                elif wants_device and default.kind in ("const", "device"):
                    ns.attrs[dest_name] = Val("device", Dev("sym", key=("argparse", id(parser), dest_name),
                                                            text=f"args.{dest_name}", accel=True),
                                              Origin(span_of(node), f"from the command line (`--{dest_name}`)"))
            v = Val("obj", obj=ns)
            return Val("obj", obj=Obj("tuple", items=[v, UNKNOWN])) if name == "parse_known_args" else v
        return UNKNOWN

    def elem_of_dict(self, obj: Obj) -> Val:
        out = None
        for v in obj.keys.values():
            out = v if out is None else self.join(out, v)
        return out or UNKNOWN


def extend_container(obj, seq) -> None:
    """`ml.extend(xs)` / `ml += xs` on a torch ModuleList or Sequential: the elements of a list or tuple
    known one by one are its children from now on; anything else leaves an unknown child, so what the
    container runs (and its device) stays unknown."""
    o = seq.obj if seq.kind in ("obj", "module") else None
    if o is not None and seq.kind == "obj" and o.kind in ("list", "tuple") and seq.elem is None:
        _add_to_container(obj, list(o.items))
    elif o is not None and seq.kind == "module" and o.cls is None and o.qual.endswith(("ModuleList", "Sequential")) \
            and o.items and UNKNOWN not in o.items:
        _add_to_container(obj, list(o.items))  # `ml += nn.ModuleList([...])`: its children
    else:
        obj.items.append(UNKNOWN)
        obj.dev = TOP


def _add_to_container(obj, mods: list) -> None:
    """Children added to a torch container after it was built: it runs them in order, and its device is
    theirs joined (as when they are given to its constructor); an empty container had no device."""
    for m in mods:
        obj.items.append(m)
        if m.obj is not None and m.obj.dev is not None:
            obj.dev = join(obj.dev, m.obj.dev) if obj.dev is not None else m.obj.dev


def _stays(v: Val, dev: Dev, fn) -> Dev | None:
    """The device a plain tensor attribute keeps when its module moves to `dev`, if it is not `dev`: a cpu one
    set outside `__init__` (one set in `__init__` is the DEV105 rule's), or one on another known device."""
    if v.kind != "tensor" or v.scalar or v.dev is None or not v.dev.known:
        return None
    if v.dev.is_cpu:
        return CPU if definitely_differ(CPU, dev) and getattr(fn, "name", "") != "__init__" else None
    return v.dev if definitely_differ(v.dev, dev) else None


def _library_model(obj) -> bool:
    """A library model class's instance (`BertForMaskedLM(config)`, `BertForMaskedLM.from_pretrained(...)`), whose
    forward returns an output record of tensors; not a pipeline or a factory whose result is not known here."""
    parts = obj.qual.split(".")
    name = parts[-2] if len(parts) > 2 and parts[-1] in T.INSTANCE_CONSTRUCTORS else parts[-1]
    return (parts[0], name) in T.LIBRARY_MODEL_CLASSES


def _torch_nn_forward(cls) -> bool:
    """A project class whose forward is torch.nn's own: every base is a torch.nn layer or container (not the
    bare nn.Module, which has none), none of them a project class."""
    if cls.base_infos or not cls.bases:
        return False
    index = cls.home
    quals = [index.qualify(b) if index is not None else b for b in cls.bases]
    return all(q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] in T.NN_MODULES and q.rsplit(".", 1)[-1] != "Module"
               for q in quals)


def tree_device(obj) -> Dev | None:
    """The device every submodule of `obj` sits on, when one is known: a module on one known device whose
    children this analysis tracks all sit there too (a library model moved whole: each of its children was
    moved with it). A dispatched model, a child placed elsewhere or unknown: None (no claim)."""
    dev = obj.dev
    if dev is None or not dev.known or obj.dispatched or getattr(obj, "part_of", None) is not None:
        return None
    for name in obj.children:
        c = obj.attrs.get(name)
        if c is None or c.kind != "module" or c.obj is None or c.obj.dev != dev:
            return None
    return dev
