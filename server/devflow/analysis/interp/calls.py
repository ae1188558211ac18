"""Calls: dispatch on what is called, and calls followed into same-file functions, methods and
classes (arguments bound to parameters, memoised per abstract signature, depth-limited).
"""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as FW, torch_api as T
from devflow.analysis.walk import walk
from devflow.analysis.interp.sequence_joins import is_joined_sequence
from devflow.analysis.interp.forward_hooks import register_hook, runs_registered_hook
from devflow.analysis.interp.passthrough import returns_its_arguments
from devflow.analysis.interp.missing_members import getattr_hook
from devflow.analysis.interp.hook_writes import HOOK_REGISTRATIONS, note_hook_registration
from devflow.analysis.index import ClassInfo, FileIndex, derives_from_builtin_sequence, is_typed_dict, sampled_by_rsample, \
    started_run
from devflow.analysis.lattice import CPU, CUDA, TOP, Dev, join
from devflow.analysis.program import LINE_BASE
from devflow.analysis.values import DEVICE_CONFIGURED, SCATTERING_WRAPPER, UNKNOWN, Obj, Origin, Val, host_data
from devflow.analysis.interp.typed_dicts import typed_dict_call
from devflow.analysis.interp.hf_processors import sub_processor
from devflow.analysis.interp.class_refs import class_reference
from devflow.analysis.interp.host_moves import MOVERS, is_numpy_data
from devflow.analysis.interp.numpy_params import numpy_declared
from devflow.analysis.interp.moved_callables import moved_callable
from devflow.analysis.interp.dict_truth import mark_escaped
from devflow.analysis.interp.batch_moves import batch_moved_in_place
from devflow.analysis.interp.param_moves import moved_at_exit, note_param_moved, rebind_moved_args
from devflow.analysis.interp.modules import derives_from_optimizer, eager_state_store, places_state_itself
from devflow.analysis.interp.metrics import derives_from_metric, metric_states_device
from devflow.analysis.interp.optimizer_base import optimizer_built
from devflow.analysis.interp.frames import span_of, FuncRef, Frame, decorators, class_member, call_sig, MAX_CHOICES, MAX_DEPTH, method_kind
from devflow.analysis.interp.expressions import instances_of_choice
from devflow.analysis.interp.frameworks.autograd import autograd_apply_of
from devflow.analysis.interp.frameworks.entries import is_lightning_trainer
from devflow.analysis.interp.input_embeddings import library_submodule_root
from devflow.analysis.interp.registry_models import blind_choice, blurred, registry_models


class Calls:
    """Evaluates calls; follows them into same-file code."""

    def e_Call(self, node, frame):
        self.budget -= 1
        func = node.func
        recv = None
        if isinstance(func, ast.Attribute):
            recv = self.eval(func.value, frame)
            self._recv[id(node)] = recv
            fval = self._attr_on(recv, func, frame)
        else:
            fval = self.eval(func, frame)
        choices = self._registry_choices(func, frame) if fval.kind == "unknown" and isinstance(func, ast.Subscript) else None
        args = []
        spread = False
        for a in node.args:
            if isinstance(a, ast.Starred):  # `f(*xs)`: its items when known, else the rest is unknown
                v = self.eval(a.value, frame)
                if v.kind == "obj" and v.obj is not None and v.obj.kind in ("tuple", "list") and v.elem is None \
                        and not spread and (v.obj.items or getattr(v.obj, "exact", False)):
                    args.extend(v.obj.items)
                else:
                    spread = True
                    self._starred.setdefault(id(node), []).append(v)
                continue
            v = self.eval(a, frame)
            if not spread:
                args.append(v)
        kwargs = {}
        if spread:
            kwargs["__opaque__"] = UNKNOWN
        for kw in node.keywords:
            v = self.eval(kw.value, frame)
            if kw.arg is None:
                if v.kind == "obj" and v.obj is not None and v.obj.kind == "dict" and not getattr(v.obj, "opaque", False):
                    kwargs.update({k: x for k, x in v.obj.keys.items() if isinstance(k, str)})
                    self._spread.setdefault(id(node), []).extend(getattr(v.obj, "batches", []))
                    if not v.obj.keys and v.elem is not None and v.elem.kind == "tensor":
                        # `model(**{k: t.to(d) for k, t in enc.items()})`: every value is such a tensor
                        self._spread.setdefault(id(node), []).append((v.elem, self.text(kw.value)))
                else:
                    if v.kind == "tensor" and v.batch:  # `model(**inputs)`: a dict of tensors on one device
                        self._spread.setdefault(id(node), []).append((v, self.text(kw.value)))
                    kwargs["__opaque__"] = UNKNOWN  # may carry device=
                continue
            kwargs[kw.arg] = v
        if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda") and frame.pending_names:
            pend = frame.pending_names.pop(self.text(func.value), None)
            if pend is not None:
                pend.cancelled = True
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.IfExp) and \
                (recv.kind == "unknown" or is_joined_sequence(recv)) and func.attr in ("append", "extend", "insert"):
            # `(skip if c else decay).append(p)`: one of two lists grows; both may hold it afterwards
            for branch in (func.value.body, func.value.orelse):
                b = self.eval(branch, frame)
                if b.kind == "obj" and b.obj is not None and b.obj.kind == "list":
                    self.obj_method(node, b, func.attr, args, kwargs, frame)
            return Val("const", const=None)
        try:
            if choices:
                # `MODELS[args.arch](cfg)`: the key is known only at run time; each entry may be the one called
                return self._call_each(node, choices, None, args, kwargs, frame,
                                       lambda a, b: registry_models(a, b, self.join_paths))
            if fval.kind == "obj" and fval.obj is not None and fval.obj.kind == "choice":
                # one of several callables (a criterion picked by an option): each is a path that runs
                if getattr(fval.obj, "opaque", False):
                    return UNKNOWN  # objects changed by code this run does not follow (`member_of_each`)
                if blind_choice(fval):  # models of a registry placed differently: each runs, inputs unknown
                    args, kwargs = blurred(args, kwargs)
                if recv is not None and instances_of_choice(recv) is not None:  # a method of one of several objects
                    return self._call_each(node, fval.obj.items, recv, args, kwargs, frame, self.join_alternatives)
                return self._call_each(node, fval.obj.items, recv, args, kwargs, frame, self.join)
            out = self.call(node, fval, recv, args, kwargs, frame)
            moved = batch_moved_in_place(func, recv, out)
            if moved is not None:
                frame.env[moved] = out.with_text(moved)  # `model(batch.to(d))`: the batch object is moved in place
                note_param_moved(frame, moved, out)
            if out.kind == "unknown":
                mark_escaped(args, kwargs)  # code not followed may fill a dict it was given
            if out.kind == "unknown" and recv is not None and recv.kind == "unknown" and "device" in kwargs \
                    and func.attr not in ("to", "cuda", "cpu"):
                return DEVICE_CONFIGURED  # `ds.with_format("torch", device="cuda")`: may yield tensors there
            return out
        except RecursionError:
            return UNKNOWN

    def _call_each(self, node, alts: list[Val], recv, args, kwargs, frame, join) -> Val:
        """A call through one of several callables: each runs (with its own copy of the arguments), and
        the results are joined with `join`."""
        out = None
        for f in alts:
            r = self.call(node, f, recv, list(args), dict(kwargs), frame)
            out = r if out is None else join(out, r)
        return out if out is not None else UNKNOWN

    def _registry_choices(self, func: ast.Subscript, frame) -> list[Val] | None:
        """The callables a registry subscripted with a key not known here may give: every value of a dict
        whose keys are all known (a literal, `dict(pairs)`), every item of a list or tuple, when each is
        a class or a function (at most MAX_CHOICES). None otherwise."""
        if not isinstance(func.value, (ast.Name, ast.Attribute)):
            return None  # evaluated again here: only names, which have no side effects
        base = self.eval(func.value, frame)
        obj = base.obj if base.kind == "obj" else None
        if obj is None or getattr(obj, "opaque", False):
            return None
        if obj.kind == "dict" and getattr(obj, "exact", False):
            vals = list(obj.keys.values())
        elif obj.kind in ("list", "tuple") and base.elem is None:  # (elem: items of a length not known)
            vals = list(obj.items)
        else:
            return None
        if not 1 < len(vals) <= MAX_CHOICES or any(v.kind not in ("class", "func", "partial") for v in vals):
            return None
        return vals

    def _attr_on(self, recv: Val, func: ast.Attribute, frame) -> Val:
        if recv.kind == "super":
            if func.attr == "__init__":
                self.library_base_children(recv, func)
            return self.super_member(recv, func.attr)
        if recv.kind == "qual":
            return self.qual_attr(recv.const, func.attr)
        if recv.kind in ("module", "obj", "class"):
            saved = self.frame
            v = self.e_Attribute_from(recv, func)
            self.frame = saved
            return v
        return Val("method", const=func.attr, bound=recv)

    def library_base_children(self, sup: Val, node: ast.Attribute) -> None:
        """`super().__init__(...)` in a class deriving from a model library's module (`class CNN(ResNet)`):
        the library's `__init__` builds its submodules on self (generated knowledge: `self.fc`, `self.layer1`,
        ...), where the default device is; the project's code then reads and moves them as its own."""
        info, me = sup.func, sup.bound
        if not isinstance(info, ClassInfo) or me is None or me.kind != "module" or me.obj is None or self.standalone:
            return
        found = self.library_children_of(info)
        if found is None:
            return
        base, names = found
        dev = self.default_dev if self.default_dev.known else TOP
        for name in names:
            if name in me.obj.attrs:
                continue
            child = Obj("module", qual=f"{base}.{name}", dev=dev, created_line=node.lineno,
                        origin=Origin(span_of(node), f"built by `{base.rsplit('.', 1)[-1]}.__init__` "
                                                     f"(`super().__init__()` at line {node.lineno})"))
            me.obj.attrs[name] = Val("module", obj=child)
            me.obj.children.add(name)

    def library_children_of(self, info: ClassInfo) -> tuple[str, tuple] | None:
        """The first base of `info` that is a model library's module class with submodules its `__init__`
        builds (generated knowledge), qualified, with their names."""
        index = info.home or self.index
        for b in info.bases:
            q = index.qualify(b) if b else ""
            if FW.LIBRARY_MODULE_CHILDREN.get(q):
                return q, FW.LIBRARY_MODULE_CHILDREN[q]
        return None

    def super_member(self, sup: Val, attr: str) -> Val:
        """`super().attr`: the first base class (same file or project) that defines it, bound to self."""
        for b in sup.func.base_infos:
            found = b.method(attr)
            if found is not None:
                fn, owner = found
                decos = decorators(fn)
                if "staticmethod" in decos:
                    return Val("func", func=FuncRef(fn, None, owner, "staticmethod"))
                if "property" in decos:
                    return self.call_function(FuncRef(fn, None, owner, "method"), [], {}, sup.bound, None)
                return Val("func", func=FuncRef(fn, None, owner, "classmethod" if "classmethod" in decos else "method"),
                           bound=sup.bound)
        if attr == "__init__" and sup.bound is not None and sup.bound.kind == "obj" and \
                derives_from_optimizer(sup.func, self.index):
            return Val("method", const="__init__", bound=sup.bound)  # torch.optim.Optimizer's: see optimizer_base
        if attr == "__call__" and sup.bound is not None and sup.bound.kind == "module":
            return Val("method", const="forward", bound=sup.bound)  # nn.Module.__call__ runs forward
        if attr in ("train", "eval") and sup.bound is not None and sup.bound.kind == "module":
            return Val("method", const=attr, bound=sup.bound)  # nn.Module.train: the flag, then the children
        if attr in ("to", "cuda", "cpu") and sup.bound is not None and sup.bound.kind == "module":
            # a `to()` override that records the device and calls `super().to(device)`: nn.Module moves self
            return Val("method", const=attr, bound=sup.bound)
        return UNKNOWN  # a library base (nn.Module.__init__ ...): nothing this engine follows

    def e_Attribute_from(self, base: Val, node: ast.Attribute) -> Val:
        attr = node.attr
        if attr == "apply" and (fn := autograd_apply_of(base)) is not None:
            return fn
        if instances_of_choice(base) is not None:
            return self.member_of_each(base, node)
        if base.kind in ("module", "obj") and base.obj is not None:
            obj = base.obj
            if attr in obj.attrs:
                return obj.attrs[attr]
            if obj.cls is not None:
                found = obj.cls.method(attr)
                if found is not None:
                    fn, owner = found
                    decos = decorators(fn)
                    if "property" in decos:
                        # `nli.model(**enc)`: the getter runs first; what it returns is what is called
                        return self.call_function(FuncRef(fn, None, owner, "method"), [], {}, base, node)
                    kind = method_kind(decos, "method")
                    return Val("func", func=FuncRef(fn, None, owner, kind), bound=base)
                added = self.added_member(obj.cls, attr)
                if added is not None:  # set on the class by a class decorator (setattr)
                    f = added.func
                    return Val("func", func=FuncRef(f.node, f.closure, obj.cls, "method", f.unit), bound=base)
                ref = class_reference(self, obj.cls, attr)
                if ref is not None:  # `self.distr_cls(...)` where the class body says `distr_cls = Normal`
                    return ref
                if attr == "start" and (run := started_run(obj.cls)) is not None:
                    # `worker.start()` of a Process / Thread subclass runs its own `run` (in the child)
                    return Val("func", func=FuncRef(run[0], None, run[1], "method"), bound=base)
                if attr == "sample" and (rs := sampled_by_rsample(obj.cls)) is not None:
                    # `prior.sample(shape)` of a Distribution subclass runs its own `rsample(shape)`
                    return Val("func", func=FuncRef(rs[0], None, rs[1], "method"), bound=base)
            if (component := sub_processor(obj, attr)) is not None:  # `processor.feature_extractor(...)`
                return component
            if obj.cls is not None and not self.standalone and (hook := getattr_hook(obj.cls, attr)) is not None:
                # `unet.to(dtype)` of a wrapper whose `__getattr__` hands the member of the model it wraps
                got = self.call_function(FuncRef(hook[0], None, hook[1], "method"), [Val("const", const=attr)], {}, base, node)
                if got.kind != "unknown":
                    return got
            return Val("method", const=attr, bound=base)
        return self.class_attribute(base, attr)

    def class_attribute(self, base: Val, attr: str) -> Val:
        """`Cls.attr`: a member the project's class defines (`class_member`), or a library base's classmethod
        that builds a `Cls` (`MyNet.from_pretrained`); UNKNOWN otherwise."""
        member = class_member(base, attr)
        if member is UNKNOWN and base.kind == "class" and isinstance(base.func, ClassInfo) \
                and self.library_constructor(base.func, attr):
            return Val("constructor", func=base.func, const=attr)
        return member

    def call(self, node, fval: Val, recv: Val | None, args, kwargs, frame) -> Val:
        kind = fval.kind
        if kind == "partial":  # functools.partial(f, *pre, **kw)(*args, **more)
            pre_args, pre_kwargs = fval.const
            return self.call(node, fval.func, recv, pre_args + list(args), {**pre_kwargs, **kwargs}, frame)
        if kind == "qual":
            return self.call_qual(node, fval.const, args, kwargs, frame)
        if kind == "method":
            if fval.const in HOOK_REGISTRATIONS and not runs_registered_hook(fval.const, fval.bound):
                note_hook_registration(args)  # a hook the interpreter does not run (a backward hook)
            r = fval.bound
            if r is None:
                return UNKNOWN
            if fval.const in FW.LIGHTNING_TRAINER_RUNS and r.kind in ("obj", "module") and r.obj is not None \
                    and is_lightning_trainer(r.obj):
                return self.lightning_run(node, args, kwargs, r.obj)  # `trainer.fit(model)`: runs the model's step hooks
            if r.kind == "tensor":
                return self.tensor_method(node, r, fval.const, args, kwargs, frame)
            if r.kind == "module":
                self.check_metric_sync(node, r, fval.const)
                return self.module_method(node, r, fval.const, args, kwargs, frame)
            if r.kind == "obj" and not (fval.const in MOVERS and is_numpy_data(r)):
                return self.obj_method(node, r, fval.const, args, kwargs, frame)
            if r.kind == "params" and fval.const in ("__iter__",):
                return UNKNOWN
            if r.kind == "device" and fval.const == "type":
                return UNKNOWN
            if r.kind == "const" and fval.const == "format":
                return self.format_device(node, r, args, kwargs) or UNKNOWN
            if r.kind == "attr" and fval.const == "register_forward_hook" and r.obj is not None and r.obj.kind == "module":
                return register_hook(r.obj, fval.const, args, kwargs, part=True)  # `model.layer4.register_forward_hook(h)`
            if fval.const == "get_input_embeddings" and (root := library_submodule_root(r)) is not None:
                # `model.model.get_input_embeddings()`: the base model's table, placed with the model
                return self.module_method(node, Val("module", obj=root), fval.const, args, kwargs, frame)
            if r.kind == "attr" and fval.const in ("to", "cuda", "cpu") and r.obj is not None and r.obj.kind == "module" \
                    and not r.obj.dispatched:
                # a part of a library model / pipeline moved (`pipe.vae.to(d)`, `dit = pipe.transformer;
                # dit.to(d)`): its parts may now sit on different devices
                r.obj.dev = TOP
                return UNKNOWN
            if (r.kind == "unknown" and r is not SCATTERING_WRAPPER or is_numpy_data(r)) and fval.const in MOVERS \
                    and isinstance(node.func, ast.Attribute):
                # whatever it is (tensor or module), the result is on the target device; numpy data has no such
                # method, so where the receiver was taken for numpy data the call returns only if it was a tensor
                dev = self.parse_to_args(args, kwargs, None) if fval.const == "to" else CPU if fval.const == "cpu" else \
                    ((self.cuda_index_dev(args[0]) if args else None) or CUDA)
                if dev is not None and dev.known:
                    return Val("tensor", dev, Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}",
                                                     "unknown-moved"))
            return UNKNOWN
        if kind == "autograd":  # `Fn.apply(...)`, `Fn().apply(...)`, `binarize = Fn.apply; binarize(...)`
            return self.autograd_apply(node, fval.func, args, kwargs)
        if kind == "func":
            if self.standalone and not _own_method_of_standalone_self(fval.func, fval.bound) \
                    and not _own_closure(fval.func, self.frame):
                return UNKNOWN
            self._interproc.add(id(node))
            b = fval.bound
            if b is not None and b.kind == "module":  # a project metric's own compute(), wrapped by the library's sync
                self.check_metric_sync(node, b, getattr(fval.func.node, "name", ""))
            if b is not None and b.obj is not None and getattr(fval.func.node, "name", "") == "step":
                self.stepped(b.obj)  # a project optimizer's own step()
            out = self.call_function(fval.func, args, kwargs, fval.bound, node)
            if returns_its_arguments(node, out, args):
                self._passed_through.add(id(node))
            return out
        if kind == "class":
            if self.standalone:
                return self.plain_instance(node, fval.func, args, kwargs)
            self._interproc.add(id(node))
            return self.instantiate(node, fval.func, args, kwargs, frame)
        if kind == "constructor":
            if self.standalone:
                return UNKNOWN
            self._interproc.add(id(node))
            return self.library_constructed(node, fval.func, fval.const, kwargs, frame)
        if kind == "module":
            return self.call_module(node, fval, args, kwargs, frame)
        if kind == "tensor" and (moved := moved_callable(fval)) is not None:
            return self.call_module(node, moved, args, kwargs, frame)  # `m = hub_model.cuda(); m(x)`: a module
        if kind == "obj" and fval.obj is not None and fval.obj.kind == "traced":  # a traced plain function
            pairs = [(v, self.text(a)) for v, a in zip(args, node.args)]
            self.traced_call(node, fval.obj, pairs, frame)
            return UNKNOWN
        if kind == "obj" and fval.obj is not None and fval.obj.kind == "tokenizer":
            return self.obj_method(node, fval, "__call__", args, kwargs, frame)
        if kind == "obj" and fval.obj is not None and fval.obj.kind == "transform":
            return self.apply_transform(node, fval, args)
        if kind == "obj" and fval.obj is not None and fval.obj.kind in ("callback", "list"):
            r = self.call_callbacks(node, fval, args, frame)  # a library callback, or a list of them
            if r is not None:
                return r
        if kind == "obj" and fval.obj is not None and fval.obj.cls is not None:
            found = fval.obj.cls.method("__call__")
            if found:
                self._interproc.add(id(node))
                return self.call_function(FuncRef(found[0], None, found[1], "method"), args, kwargs, fval, node)
        return UNKNOWN

    def call_function(self, fref: FuncRef, args, kwargs, self_val: Val | None, call_node, standalone: bool = False) -> Val:
        """Run a function's body with these arguments, in the file that defines it."""
        if self.units:
            home = fref.owner.home if fref.owner is not None else None
            unit = self.unit_of_index(home) if home is not None else fref.unit
            if unit is not None and unit is not self.unit:
                saved = self.enter(unit)
                try:
                    return self._call_function(fref, args, kwargs, self_val, call_node, standalone)
                finally:
                    self.leave(saved)
        return self._call_function(fref, args, kwargs, self_val, call_node, standalone)

    def _call_function(self, fref: FuncRef, args, kwargs, self_val: Val | None, call_node, standalone: bool) -> Val:
        fn = fref.node
        if self.standalone and not standalone and (_own_method_of_standalone_self(fref, self_val)
                                                   or _own_closure(fref, self.frame)):
            standalone = True  # `self._helper(...)` in a method checked on its own: the helper's code is this object's
        # a nested function is one per closure: the same `constructor` made by a registry factory for agents,
        # networks and buffers runs inside another of its closures (`get_agent(cfg)` building `get_qnet(cfg)`)
        active_key = (id(fn), id(fref.closure)) if fref.closure is not None else id(fn)
        # structural recursion runs once per kind of its arguments: `to_device(batch)` over a dict calls itself on
        # each tensor entry; a call with the kinds already on the stack is cut
        active_key = (active_key, tuple(v.kind for v in args))
        if self.budget <= 0 or self.depth >= MAX_DEPTH or active_key in self.active or (self.standalone and not standalone):
            return UNKNOWN
        a = fn.args
        arg_nodes = a.posonlyargs + a.args
        params = [p.arg for p in arg_nodes]
        bound_args = list(args)
        if fref.kind in ("method", "classmethod") and params:
            bound_args = [self_val if self_val is not None else UNKNOWN] + bound_args
        memo_key = None
        if not standalone:
            try:
                memo_key = (id(fn), fref.closure, tuple(call_sig(v) for v in bound_args), tuple(sorted((k, call_sig(v)) for k, v in kwargs.items())),
                            # a call after a global was rebound, or after an attribute store moved some state, runs again
                            self.globals_sig(fn), self.heap_epoch)
            except TypeError:
                memo_key = None
            if memo_key is not None and memo_key in self.memo:
                for opt in self.memo_steps.get(memo_key, ()):
                    self.stepped(opt)  # a memoised call steps its optimizers again (side effect kept)
                rebind_moved_args(self.frame, call_node, params, fref.kind in ("method", "classmethod"),
                                  self.memo_moves.get(memo_key))
                return self.memo[memo_key]
        self.visited.add(id(fn))
        closure = fref.closure if fref.closure is not None else getattr(fref.owner, "defining_frame", None)
        frame = Frame(fn, self.frame, call_node, closure=closure)
        frame.owner = fref.owner
        self._frames.append(frame)
        spread = "__opaque__" in kwargs  # `f(*args)` of unknown length: parameters past it are unknown
        defaults = a.defaults
        n_no_default = len(params) - len(defaults)
        for i, p in enumerate(params):
            frame.params.add(p)
            if i < len(bound_args):
                v = bound_args[i]
            elif p in kwargs:
                v = kwargs[p]
            elif i >= n_no_default:
                v = self.eval(defaults[i - n_no_default], self.module_frame) if not standalone and not spread else UNKNOWN
            else:
                v = UNKNOWN
            if v.kind == "unknown" and numpy_declared(self, arg_nodes[i], frame):
                v = host_data()
            frame.env[p] = self._param_val(p, v, fn)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            frame.params.add(p.arg)
            v = kwargs.get(p.arg) or (self.eval(d, self.module_frame) if d is not None and not standalone else UNKNOWN)
            if v.kind == "unknown" and numpy_declared(self, p, frame):
                v = host_data()
            frame.env[p.arg] = self._param_val(p.arg, v, fn)
        if a.vararg:
            frame.params.add(a.vararg.arg)
            rest = Obj("tuple", items=list(bound_args[len(params):]))
            rest.exact = not spread  # type: ignore[attr-defined]  # `*args` of a known call: exactly these (maybe none)
            frame.env[a.vararg.arg] = Val("obj", obj=rest)
        if a.kwarg:
            frame.params.add(a.kwarg.arg)
            d = Obj("dict")
            d.keys = {k: v for k, v in kwargs.items() if k not in params}
            if "__opaque__" not in kwargs and not standalone:
                d.exact = True  # type: ignore[attr-defined]  # `**kw` of a known call: exactly its other keywords
            frame.env[a.kwarg.arg] = Val("obj", obj=d)
        self.active.add(active_key)
        self.depth += 1
        saved = self.frame
        self.frame = frame
        steps: list = []
        self.step_recorders.append(steps)
        try:
            if isinstance(fn, ast.Lambda):
                frame.returns = self.eval(fn.body, frame)
            else:
                self.exec_block(fn.body, frame)
        finally:
            self.frame = saved
            self.depth -= 1
            self.active.discard(active_key)
            self.step_recorders.pop()
        moved = moved_at_exit(frame)
        rebind_moved_args(self.frame, call_node, params, fref.kind in ("method", "classmethod"), moved)
        ret = frame.returns if frame.returns is not None else Val("const", const=None)
        if frame.yields is not None or (not isinstance(fn, ast.Lambda) and self._is_generator(fn)):
            # calling a generator function gives an iterator over what it yields
            ret = Val("obj", obj=Obj("iter"), elem=frame.yields if frame.yields is not None else UNKNOWN)
        if memo_key is not None:
            self.memo[memo_key] = ret
            if steps:
                self.memo_steps[memo_key] = steps
            if moved:
                self.memo_moves[memo_key] = moved
        return ret

    def _is_generator(self, fn) -> bool:
        """A `yield` in the function's own body (not in a nested function or class). Known from the
        file's text alone: for a project file it is kept on its index (program.py: one per content)."""
        key = ("gen", id(fn))
        lines, first, facts = self._own_lines(fn)
        hit = self.builds_modules_cache.get(key) if facts is None else facts.get(key)
        if hit is None:
            hit = False
            # no `yield` in its lines: no walk of its tree (the walk was ~10% of a run)
            said = lines is None or any("yield" in t for t in lines[fn.lineno - first:(fn.end_lineno or fn.lineno) - first + 1])
            stack = list(ast.iter_child_nodes(fn)) if said else []
            while stack:
                n = stack.pop()
                if isinstance(n, (ast.Yield, ast.YieldFrom)):
                    hit = True
                    break
                if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    stack.extend(ast.iter_child_nodes(n))
            (self.builds_modules_cache if facts is None else facts)[key] = hit
        return hit

    def _device_params(self, fn) -> frozenset:
        """The parameters `fn` uses as a device, by what it does with them: annotated `torch.device`, passed
        as `device=`, or given to `torch.device(...)`; one also passed as `dtype=` is not one. Cached like
        `_is_generator` (the imports that name `torch.device` are the file's own)."""
        key = ("devparams", id(fn))
        lines, first, facts = self._own_lines(fn)
        cache = self.builds_modules_cache if facts is None else facts
        hit = cache.get(key)
        if hit is None and lines is not None and not any(
                "device" in t for t in lines[fn.lineno - first:(fn.end_lineno or fn.lineno) - first + 1]):
            hit = cache[key] = frozenset()  # no `device` in its text: no walk of its tree
        if hit is None:
            a = fn.args
            params = {p.arg: p for p in a.posonlyargs + a.args + a.kwonlyargs}
            dev, dtype = set(), set()
            for p, arg in params.items():
                ann = arg.annotation
                if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # `"torch.device | None"`
                    try:
                        ann = ast.parse(ann.value, mode="eval").body
                    except SyntaxError:
                        ann = None
                if ann is not None and any(isinstance(n, (ast.Name, ast.Attribute)) and
                                           self.qualname(n, self.module_frame) == "torch.device" for n in ast.walk(ann)):
                    dev.add(p)
            body = fn.body if isinstance(fn.body, list) else [fn.body]
            if lines is not None:  # only the statements whose text says `device` or `dtype`
                body = [st for st in body if any("device" in t or "dtype" in t
                                                 for t in lines[st.lineno - first:(st.end_lineno or st.lineno) - first + 1])]
            for st in body:
                for n in walk(st):
                    if not isinstance(n, ast.Call):
                        continue
                    for kw in n.keywords:
                        if isinstance(kw.value, ast.Name) and kw.value.id in params:
                            (dev if kw.arg == "device" else dtype if kw.arg == "dtype" else set()).add(kw.value.id)
                    if n.args and isinstance(n.args[0], ast.Name) and n.args[0].id in params and \
                            isinstance(n.func, (ast.Name, ast.Attribute)) and \
                            (n.func.id if isinstance(n.func, ast.Name) else n.func.attr) == "device" and \
                            self.qualname(n.func, self.module_frame) == "torch.device":
                        dev.add(n.args[0].id)
            hit = frozenset(dev - dtype)
            cache[key] = hit
        return hit

    def _own_lines(self, fn):
        """(lines of the file that defines `fn`, the number of its first line, that file's lasting
        fact cache or None), from the file being run; (None, 0, None) when it is not that file."""
        pf = self.unit.file
        if pf is None:
            return (self.lines, 1, None) if fn.lineno < LINE_BASE else (None, 0, None)
        if fn.lineno // LINE_BASE == pf.base // LINE_BASE and self.index is pf.index:
            return pf.lines, pf.base + 1, pf.index.facts
        return None, 0, None

    def _param_val(self, name: str, v: Val, fn) -> Val:
        if v.kind == "unknown" and name in self._device_params(fn):
            # a parameter the function uses as a device, given nothing known: the function is written to
            # place its values wherever it is told, an accelerator among them
            return Val("device", Dev("sym", key=("param", id(fn), name), text=name, accel=True))
        if v.kind in ("tensor", "module", "obj"):
            return v.with_text(name)
        return v

    def library_constructor(self, info: ClassInfo, attr: str) -> bool:
        """`attr` is, on none of the project's own classes in `info`'s hierarchy, but on one of its library
        bases, a classmethod that builds an instance of the class it is called on (generated knowledge)."""
        owners = T.INSTANCE_CONSTRUCTORS.get(attr)
        if not owners or info.method(attr) is not None:
            return False
        for cls in (info, *info.base_infos):
            index = cls.home or self.index
            for b in cls.bases:
                q = index.qualify(b) if b else ""
                if (q.split(".", 1)[0], q.rsplit(".", 1)[-1]) in owners:
                    return True
        return False

    def library_constructed(self, node, info: ClassInfo, attr: str, kwargs, frame) -> Val:
        """`MyNet.from_pretrained(path, ...)`: the library builds `MyNet(...)` (its `__init__` runs, with this
        call's keywords and arguments it does not show) and loads weights into it where construction left it,
        unless the call places it (device / device_map / map_location, or keywords spread from a dict)."""
        if any(k.arg is None or k.arg in T.PLACING_KWARGS for k in node.keywords):
            # placed by the caller: only a device_map naming one device is followed (the class's inherited loader
            # places the whole model there, as for the library's own classes); other placements are not known here
            return self.library_constructed_on_one_device(node, info, kwargs, frame)
        # the loaders pass the keywords they do not take themselves on to the class (`cls(**model_kwargs)`);
        # what else `__init__` receives (the saved config) is not known here
        val = self.instantiate(node, info, [], {**kwargs, "__opaque__": UNKNOWN}, frame)
        obj = val.obj
        if obj is None:
            return UNKNOWN
        if info.is_module and obj.dev is not None and obj.dev.is_cpu:
            obj.origin = Origin(span_of(node), f"loaded by `{self.text(node.func)}(...)` at line {node.lineno} "
                                               "(built and loaded on cpu) and never moved")
        return val

    def library_constructed_on_one_device(self, node, info: ClassInfo, kwargs, frame) -> Val:
        """`MyLM.from_pretrained(path, device_map={"": 0})` of a project subclass of a library model: without
        quantization (accelerate hooks a quantized model) the inherited loader puts the whole model on that one
        device and attaches no hooks, so inputs must be moved to it."""
        dm = kwargs.get("device_map")
        placing = {k.arg for k in node.keywords} & set(T.PLACING_KWARGS)
        if not info.is_module or dm is None or placing != {"device_map"} or any(k.arg is None for k in node.keywords) \
                or "quantization_config" in kwargs or "load_in_8bit" in kwargs or "load_in_4bit" in kwargs:
            return UNKNOWN
        one = self._one_device_map(dm)
        if one is None:
            return UNKNOWN
        val = self.instantiate(node, info, [], {**kwargs, "__opaque__": UNKNOWN}, frame)
        if val.obj is None:
            return UNKNOWN
        dm_node = next(k.value for k in node.keywords if k.arg == "device_map")
        origin = Origin(span_of(node), f"loaded onto {one.render()} with device_map={self.text(dm_node)} "
                                       f"at line {node.lineno}", kind="placed")
        self._move_rec(val.obj, one, origin, frame, set())
        val.obj.origin = origin
        return val

    def instantiate(self, node, info: ClassInfo, args, kwargs, frame) -> Val:
        if is_typed_dict(info):
            return typed_dict_call(args, kwargs)
        made = self._made_by_new(node, info, args, kwargs)
        if made is not None:
            return made
        obj = Obj("module" if info.is_module else "instance", cls=info, qual=info.name,
                  origin=Origin(span_of(node), f"created at line {node.lineno}"), created_line=node.lineno)
        if info.is_module and derives_from_metric(info, self.index):
            obj.role = "metric"  # its states, registered by `add_state`, are where it is
        val = Val("module" if info.is_module else "obj", obj=obj)
        if info.is_module:
            obj.training = True
        init = info.method("__init__")
        if init is None and not info.is_module and derives_from_builtin_sequence(info) and len(args) == 1 and not kwargs \
                and args[0].kind == "obj" and args[0].obj is not None and args[0].obj.kind in ("list", "tuple"):
            # `LogitsProcessorList([a, b])` of a project `class X(list)`: list's own __init__ copies the items
            obj.items = list(args[0].obj.items)
            val.elem = args[0].elem
        if init is not None:
            self.call_function(FuncRef(init[0], None, init[1], "method"), args, kwargs, val, node)
        elif "dataclass" in decorators(info.node) and not info.is_module:
            self._dataclass_fields(info, obj, args, kwargs)
            post = info.method("__post_init__")  # the generated __init__ ends with it
            if post is not None:
                self.call_function(FuncRef(post[0], None, post[1], "method"), [], {}, val, node)
        if not info.is_module:
            self.framework_instance(node, val, info)  # a generate() callback: called with the model's tensors
        if not info.is_module and derives_from_optimizer(info, self.index):
            self.project_optimizer(node, obj, info, args, kwargs)
            obj.created_in = (frame, frame.stmt_stack[-1] if frame.stmt_stack else None)  # type: ignore[attr-defined]
        if info.is_module and obj.moved is None:
            dev = None
            for name in obj.children:
                c = obj.attrs.get(name)
                if c is not None and c.obj is not None:
                    dev = join(dev, c.obj.dev) if dev is not None else c.obj.dev
            for name in obj.buffers:
                b = obj.attrs.get(name)
                if b is not None and b.kind == "tensor" and not b.scalar:  # a 0-dim cpu tensor goes with any device
                    dev = join(dev, b.dev) if dev is not None else b.dev
            if dev is None and any(not b.startswith("torch.nn.Module") and b.startswith("torch.nn.") and b not in _NO_STATE_BASES
                                   for b in ((info.home or self.index).qualify(x) for x in info.bases)):
                dev = self.default_dev
            if obj.role == "metric" and getattr(obj, "metric_states", None):
                dev = metric_states_device(obj)  # a 0-dim accumulator is a state like any other
            obj.dev = dev
            if dev is not None and dev.is_cpu:
                obj.origin = Origin(span_of(node), f"created at line {node.lineno} and never moved")
                self._own_params(obj, obj.origin, set())
                self._param_roots[obj.origin.span] = obj
            elif dev is not None and not dev.known:
                self._own_cpu_params(obj, node)
        return val

    def _made_by_new(self, node, info: ClassInfo, args, kwargs) -> Val | None:
        """`Cls(...)` whose class defines `__new__` (a factory class: `MuZeroNetwork(config)` returning the
        network the config names): when `__new__` returns an object that is not an instance of `Cls`,
        Python skips `__init__` and the call's value is that object."""
        new = info.method("__new__")
        if new is None:
            return None
        made = self.call_function(FuncRef(new[0], None, new[1], "classmethod"), args, kwargs,
                                  Val("class", func=info), node)
        obj = made.obj if made.kind in ("module", "obj") else None
        if obj is None or obj.cls is None or obj.cls is info or info in _ancestors(obj.cls):
            return None  # an instance of the class itself (or not known): built as usual
        return made

    def _own_cpu_params(self, obj, node) -> None:
        """A module built around submodules already moved (`Wrapper(student=net_on_gpu)`) whose own
        parameters `__init__` creates on the cpu: those parameters are the unmoved module's (DEV106 where
        one meets an input, fixed by moving the module), not tensors made without device=."""
        cpu = [name for name in obj.buffers if (b := obj.attrs.get(name)) is not None and b.kind == "tensor"
               and b.dev is not None and b.dev.is_cpu and not b.scalar and b.origin is not None
               and b.origin.kind == "factory"]
        if not cpu:
            return
        origin = Origin(span_of(node), f"created at line {node.lineno} and never moved")
        reason = f"a parameter of the model created at line {node.lineno} and never moved"
        for name in cpu:
            obj.attrs[name] = Val("tensor", CPU, Origin(origin.span, reason, kind="param"))
        self._param_roots.setdefault(origin.span, obj)

    def project_optimizer(self, node, obj, info, args, kwargs) -> None:
        """An optimizer class of the project: it steps the parameters of the modules it was given; when
        its `__init__` creates state tensors, they sit on those modules' device of this moment."""
        # restored by the `load_state_dict` it inherits like a built-in one, unless it places its state itself
        obj.project_optimizer = not places_state_itself(info)  # type: ignore[attr-defined]
        optimizer_built(obj)
        mods = self._param_modules(args[:1] + [kwargs.get("params", UNKNOWN)])
        self.supersede_optimizers(mods)
        for m in mods:
            obj.modules.append(m)
            m.optimizers.append(obj)
        if mods:
            self._optimizers.append(obj)
        devs = {m.dev for m in mods}
        if len(devs) == 1 and None not in devs and next(iter(devs)).known and \
                not any(getattr(m, "standalone", False) or m.dispatched for m in mods):
            store = eager_state_store(info, self.index)
            if store is not None:
                obj.eager_state = (store, Origin(span_of(node), f"created at line {node.lineno}"),  # type: ignore[attr-defined]
                                   next(iter(devs)))

    def _own_params(self, obj, origin: Origin, seen: set) -> None:
        """The cpu parameters and buffers of a module not moved, and of its submodules, are said to be
        this module's (the outermost one built last): where one meets an input, that module is at fault."""
        if id(obj) in seen:
            return
        seen.add(id(obj))
        obj.root_origin = origin  # type: ignore[attr-defined]  # one report per model built, not per layer
        reason = f"a parameter of the model created at line {origin.span.line} and never moved"
        for name in obj.buffers:
            b = obj.attrs.get(name)
            if b is not None and b.kind == "tensor" and b.dev is not None and b.dev.is_cpu and not b.scalar:
                obj.attrs[name] = Val("tensor", b.dev, Origin(origin.span, reason, kind="param"))
        for c in [obj.attrs.get(name) for name in obj.children] + list(obj.items):
            if c is not None and c.obj is not None and c.obj.moved is None:
                self._own_params(c.obj, origin, seen)

    def plain_instance(self, node, info, args, kwargs) -> Val:
        """A module-level `cfg = Config()` of an imported file (whose calls are not followed): a plain
        class (or dataclass) with no `__init__` / `__new__` / `__post_init__` of its own and only project
        bases runs no code, so its instance is known (its fields' defaults, the class attributes)."""
        if not isinstance(info, ClassInfo) or info.is_module or \
                any(info.method(m) is not None for m in ("__init__", "__new__", "__post_init__")):
            return UNKNOWN
        own = {b.name for b in info.base_infos}
        if any(b not in own and b != "object" for b in info.bases):
            return UNKNOWN  # a library base may have an __init__ of its own
        obj = Obj("instance", cls=info, qual=info.name, origin=Origin(span_of(node), f"created at line {node.lineno}"),
                  created_line=node.lineno)
        if "dataclass" in decorators(info.node):
            self._dataclass_fields(info, obj, args, kwargs)
        elif args or kwargs:
            return UNKNOWN
        return Val("obj", obj=obj)

    def _dataclass_fields(self, info: ClassInfo, obj, args, kwargs) -> None:
        """`@dataclass class Config: device: str = "cuda"`: the generated __init__ binds each field
        to its argument or its default (`field(default=...)` too; `field(default_factory=F)`, also from a
        helper returning it, calls `F()` for each instance)."""
        fields = [st for b in reversed([info, *info.base_infos]) for st in b.node.body
                  if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
                  and "ClassVar" not in ast.unparse(st.annotation)]
        saved = self.enter(self.unit_of_index(info.home) or self.unit) if self.units else None
        try:
            for i, st in enumerate(fields):
                name = st.target.id
                if i < len(args):
                    v = args[i]
                elif name in kwargs:
                    v = kwargs[name]
                elif "__opaque__" in kwargs or st.value is None:
                    v = UNKNOWN
                else:
                    v = self._field_default(st.value)
                obj.attrs[name] = v
        finally:
            if saved is not None:
                self.leave(saved)

    def _field_default(self, value: ast.expr) -> Val:
        """The value a dataclass field declared as `= value` gets when no argument is given."""
        decl = self.eval(value, self.module_frame)
        if decl.kind == "obj" and decl.obj is not None and decl.obj.kind == "dataclass_field":
            keys = decl.obj.keys
            if "default" in keys:
                return keys["default"]
            if "default_factory" in keys:
                return self.call(value, keys["default_factory"], None, [], {}, self.module_frame)
            return UNKNOWN
        if isinstance(value, ast.Call) and (FileIndex.dotted(value.func) or "").rsplit(".", 1)[-1] == "field":
            d = next((k.value for k in value.keywords if k.arg == "default"), None)  # a `field` not resolved
            return self.eval(d, self.module_frame) if d is not None else UNKNOWN
        return decl

    def builds_modules(self, fn) -> bool:
        cached = self.builds_modules_cache.get(id(fn))
        if cached is not None:
            return cached
        found = False
        for sub in walk(fn):
            if isinstance(sub, ast.Call):
                name = FileIndex.dotted(sub.func) or ""
                q = self.index.qualify(name)
                last = q.rsplit(".", 1)[-1]
                if q.startswith("torch.nn.") and last in T.NN_MODULES and last not in T.PARAM_FREE_MODULES \
                        and last not in T.DATA_PARALLEL:
                    found = True
                    break
                info = self.index.classes.get(name)
                if info is None and self.project is not None and name:  # a module class of another project file
                    pv = self.project_val(q)
                    info = pv.func if pv is not None and pv.kind == "class" and isinstance(pv.func, ClassInfo) else None
                if info is not None and info.is_module and not any(
                        (info.home or self.index).qualify(b).rsplit(".", 1)[-1] in T.DATA_PARALLEL for b in info.bases):
                    found = True
                    break
        self.builds_modules_cache[id(fn)] = found
        return found


# torch.nn base classes that hold no parameter or buffer of their own: a subclass that adds none (a loss built
# on `_Loss` that keeps param-free losses and activations) has no device; others (nn.Linear ...) are on the cpu
_NO_STATE_BASES = frozenset({"torch.nn.modules.loss._Loss", "torch.nn.modules.module.Module"})


def _own_method_of_standalone_self(fref: FuncRef, self_val: Val | None) -> bool:
    """A method called on the `self` a method checked on its own stands for (`x = self._make_pad(n)` in
    forward): it runs on that same object (its module's device), so what it returns is known as the inlined
    code would be. Only a straight-line helper that sets no attribute of `self` (one that swaps a submodule is
    reported where the caller's own pass sees it); calls on other objects stay unfollowed there."""
    if not (fref.kind == "method" and self_val is not None and self_val.kind in ("module", "obj")
            and self_val.obj is not None and getattr(self_val.obj, "standalone", False)
            and self_val.obj.cls is not None and fref.owner is not None):
        return False
    found = self_val.obj.cls.method(fref.node.name)
    return found is not None and found[0] is fref.node and not _sets_self_attributes(fref.node) \
        and not _branches(fref.node)


def _own_closure(fref: FuncRef, frame) -> bool:
    """A function defined in the body being run and called there (`def get_device(): ...` in an `__init__`
    checked on its own): its code is that body's own, its free names are that frame's, so following it is
    inlining it, whatever tests it makes."""
    return fref.closure is not None and fref.closure is frame


def _branches(fn) -> bool:
    """A test or a loop in the method's body: which path it takes may depend on what its caller's context
    fixes (a flag, a tracing or training mode), which a method checked on its own does not know; a
    straight-line helper computes the same whatever that context is."""
    return any(isinstance(n, (ast.If, ast.IfExp, ast.For, ast.While, ast.Try, ast.Match)) for n in ast.walk(fn))


def _sets_self_attributes(fn) -> bool:
    """`self.x = ...` (or `+=`, `self.x[i] = ...`) anywhere in the method's own body. Not cached: the analysis
    never writes to the tree, and a table keyed by node would keep every edit's tree alive in the server."""
    a = fn.args
    first = (a.posonlyargs + a.args)[:1]
    me = first[0].arg if first else None
    for n in ast.walk(fn):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            while isinstance(t, (ast.Subscript, ast.Attribute)) and not (
                    isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)):
                t = t.value
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                return True
    return False


def _ancestors(info, seen=None) -> list:
    """The project classes `info` derives from (its `base_infos`, at any depth)."""
    seen = set() if seen is None else seen
    out = []
    for b in getattr(info, "base_infos", None) or []:
        if id(b) not in seen:
            seen.add(id(b))
            out.append(b)
            out.extend(_ancestors(b, seen))
    return out
