"""nn.Module objects and other heap objects: calling a module (its forward), moves (`.to`, `.cuda`)
propagated to submodules and buffers, module methods, optimizer / tokenizer / dict methods.
"""

from __future__ import annotations

import ast

from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.lattice import CPU, CUDA, TOP, Dev, concrete, definitely_differ
from devflow.analysis.values import ENCODING, UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of, FuncRef, is_dotted_name, DTYPES, HEAD_RESETTERS


class Modules:
    """Module objects: calls, moves and methods; methods of other heap objects."""

    def call_module(self, node, mod: Val, args, kwargs, frame, method: str = "") -> Val:
        obj = mod.obj
        arg_pairs = [(v, self.text(a)) for v, a in zip(args, node.args)] + \
                    [(v, kw.arg or "") for kw in node.keywords for v in [kwargs.get(kw.arg)] if v is not None] + \
                    self._spread.get(id(node), [])
        if obj is not None and obj.cls is None:
            arg_pairs += self._nested_tensors(args, node.args)  # `self.lstm(x, (h0, c0))`: every tensor goes in
        if isinstance(node.func, ast.Call):
            if obj is not None and obj.dev is not None and any(
                    v.kind == "tensor" and definitely_differ(obj.dev, v.dev) for v, _ in arg_pairs):
                return UNKNOWN  # DEV104 reports the module built in place; no cascade
        elif self._runs_inside(obj, frame, method):
            # a project submodule called from its parent's code: PyTorch raises inside its forward, where a
            # parameter meets the input; said there
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
            return UNKNOWN
        if obj is not None and obj.dev is not None and obj.dev.known and not obj.dispatched:
            return Val("tensor", obj.dev, obj.moved or obj.origin, scalar=obj.role in ("loss", "metric", "criterion"))
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
        origin = Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}", kind="placed")
        obj.move_call = move_text  # type: ignore[attr-defined]
        obj.move_recv = recv_text  # type: ignore[attr-defined]
        seen: set[int] = set()
        self._cur_move = (move_text, frame)
        self._move_rec(obj, dev, origin, frame, seen)
        pend = frame.pending_names.pop(recv_text, None)
        if pend is not None:
            pend.cancelled = True

    def _move_rec(self, obj: Obj, dev: Dev, origin: Origin, frame, seen: set) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if obj.dev is not None or obj.kind == "module":
            obj.dev = dev
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
                self.add(f)
        for name in list(obj.children):
            c = obj.attrs.get(name)
            if c is not None and c.obj is not None:
                self._move_rec(c.obj, dev, origin, frame, seen)
        for name in list(obj.buffers):
            b = obj.attrs.get(name)
            if b is not None and b.kind == "tensor":
                obj.attrs[name] = Val("tensor", dev, origin, scalar=b.scalar)
        for item in obj.items:
            if item.kind == "module" and item.obj is not None:
                self._move_rec(item.obj, dev, origin, frame, seen)
        self._left_behind(obj, dev, origin)

    def _left_behind(self, obj: Obj, dev: Dev, origin: Origin) -> None:
        """Plain tensor attributes (neither parameters nor buffers) stay where they are when the module
        moves. Those set in `__init__` are DEV105's; one set by another method before the move (a cache
        made by a `train()` override) is said to be left behind by this move."""
        for name, (st, fn) in getattr(obj, "attr_sets", {}).items():
            v = obj.attrs.get(name)
            if v is None or v.kind != "tensor" or name in obj.buffers or v.scalar or v.dev is None \
                    or not v.dev.is_cpu or not definitely_differ(CPU, dev) or getattr(fn, "name", "") == "__init__":
                continue
            obj.attrs[name] = Val("tensor", CPU, Origin(span_of(st), f"`self.{name}`, a plain tensor attribute set at line "
                                                      f"{st.lineno}, is not moved by {origin.reason.replace('moved by ', '')}"
                                                      f": `.to()` moves parameters and buffers only", kind="attr"))

    def parse_to_args(self, args, kwargs, recv_dev) -> Dev | None:
        """The device a `.to(...)` call moves to; `recv_dev` when it only changes the dtype; TOP if unknown."""
        cand = kwargs.get("device")
        if cand is None and args:
            cand = args[0]
        if cand is None:
            return recv_dev
        if cand.kind == "device":
            return cand.dev or TOP
        if cand.kind == "tensor":
            return cand.dev or TOP
        if cand.kind == "const" and isinstance(cand.const, str):
            return concrete(cand.const) or TOP
        if cand.kind == "const" and isinstance(cand.const, int) and not isinstance(cand.const, bool):
            return Dev("cuda", cand.const)
        if cand.kind == "qual" and cand.const.startswith("torch.") and cand.const.rsplit(".", 1)[-1] in DTYPES:
            return recv_dev
        return TOP

    def module_method(self, node, mod: Val, name: str, args, kwargs, frame) -> Val:
        obj = mod.obj
        recv_text = self.text(node.func.value)
        if name in ("to", "cuda", "cpu"):
            if name == "to":
                dev = self.parse_to_args(args, kwargs, obj.dev)
            elif name == "cuda":
                dev = Dev("cuda", args[0].const) if args and args[0].kind == "const" and isinstance(args[0].const, int) else CUDA
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
        if name in ("train", "eval"):
            mode = None if name == "train" and args and args[0].kind != "const" else \
                (name == "train") if not args else bool(args[0].const)
            via_super = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call) \
                and isinstance(node.func.value.func, ast.Name) and node.func.value.func.id == "super"
            self._set_mode(mod, mode, node, set(), not via_super)
            return mod
        if name in ("half", "float", "double", "bfloat16", "requires_grad_", "share_memory", "apply", "type",
                    "zero_grad", "to_empty"):
            return mod
        if name in ("parameters", "named_parameters", "buffers", "named_buffers"):
            return Val("params", obj=obj, const="named" if name.startswith("named") else None)
        if name == "state_dict" and obj.dev is not None and obj.dev.known and not getattr(obj, "standalone", False):
            org = obj.moved or self._snapshot_origin(obj, node, frame, f"`{self.text(node)}`")
            return Val("obj", obj=Obj("dict"), elem=Val("tensor", obj.dev, org))
        if name in ("register_buffer", "register_parameter") and len(args) >= 2 and args[0].kind == "const":
            obj.buffers.add(args[0].const)
            obj.attrs[args[0].const] = args[1]
            return Val("const", const=None)
        if name in ("add_module", "register_module") and len(args) >= 2 and args[1].kind == "module":
            # registered under a computed name too (`self.add_module(f"adapter_{i}", a)`): a child from now on
            key = args[0].const if args[0].kind == "const" else f"<added {id(args[1].obj)}>"
            obj.children.add(key)
            obj.attrs[key] = args[1]
            if args[1].obj is not None:
                args[1].obj.in_plain_container = False  # type: ignore[attr-defined]
            return Val("const", const=None)
        if name in ("append", "extend", "insert") and obj.qual.endswith(("ModuleList", "Sequential")):
            for a in args:
                if a.kind == "module":
                    obj.items.append(a)
            return Val("const", const=None)
        if name in ("forward", "generate", "update", "compute") or (obj.cls is None and name == "__call__"):
            if obj.cls is not None and obj.cls.method(name):
                found = obj.cls.method(name)
                self._interproc.add(id(node))
                return self.call_function(FuncRef(found[0], None, found[1], "method"), args, kwargs, mod, node)
            return self.call_module(node, mod, args, kwargs, frame, method=name)
        if name in HEAD_RESETTERS and obj.cls is None and obj.moved is not None and \
                definitely_differ(self.default_dev, obj.dev) and not getattr(obj, "standalone", False):
            mc = getattr(obj, "move_call", None)
            stmt = frame.stmt_stack[-1] if frame.stmt_stack else None
            fix = FixPlan("insert_after", span_of(stmt), text=f"{recv_text}{mc}",
                          title=f"Move the model again: `{recv_text}{mc}`") if mc and stmt is not None and is_dotted_name(recv_text) else None
            f = self.add(Finding("DEV102", span_of(node),
                                 f"`{self.text(node)}` builds a new head on cpu after `{recv_text}` was moved "
                                 f"({obj.moved.reason}); it stays on cpu", [(obj.moved.span, obj.moved.reason)], fix))
            frame.pending_names[recv_text] = f
            return Val("const", const=None)
        if name == "get_input_embeddings":
            return Val("module", obj=Obj("module", dev=TOP if obj.dispatched else obj.dev))
        return UNKNOWN

    def obj_method(self, node, r: Val, name: str, args, kwargs, frame) -> Val:
        obj = r.obj
        if obj is None:
            return UNKNOWN
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
            if name not in ("items", "keys", "values", "get", "copy"):
                obj.exact = False  # type: ignore[attr-defined]  # update / pop / setdefault ...: keys change
            if name in ("items",):
                return Val("obj", obj=Obj("iter"), elem=Val("obj", obj=Obj("tuple", items=[UNKNOWN, r.elem or self.elem_of_dict(obj)])))
            if name == "values":
                return Val("obj", obj=Obj("iter"), elem=r.elem or self.elem_of_dict(obj))
            if name == "get" and args and args[0].kind == "const":
                return obj.keys.get(args[0].const, UNKNOWN)
        if obj.kind == "optimizer":
            if name == "load_state_dict":
                mods = [m for m in obj.modules if m.kind == "module"]
                if mods and all(m.moved is None and (m.dev is None or m.dev.is_cpu) for m in mods) and \
                        any(m.dev is not None for m in mods):
                    obj.loaded_at = Origin(span_of(node), f"`{self.text(node.func)}()` at line {node.lineno}")
                    obj.load_frame = frame  # type: ignore[attr-defined]
            return UNKNOWN
        if obj.kind == "argparser":
            return self.argparser_method(node, obj, name, args, kwargs)
        if obj.kind == "tokenizer":
            if name in ("encode", "__call__", "apply_chat_template", "batch_encode_plus", "encode_plus"):
                rt = kwargs.get("return_tensors")
                if rt is not None and rt.kind == "const" and rt.const == "pt":
                    # encode() gives a tensor, apply_chat_template() one unless return_dict=True; the rest a BatchEncoding
                    rd = kwargs.get("return_dict")
                    encoding = name not in ("encode", "apply_chat_template") or (rd is not None and rd.kind == "const" and rd.const is True)
                    return Val("tensor", CPU, Origin(span_of(node), f"made on cpu by `{self.text(node.func)}()` at line {node.lineno}"),
                               batch=ENCODING if encoding else "")
            return UNKNOWN
        return UNKNOWN

    def argparser_method(self, node, parser: Obj, name: str, args, kwargs) -> Val:
        """argparse: `--device` (or any option whose default names a device) becomes the symbolic
        device `args.device`: whatever the command line says, the code means it as the accelerator."""
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
                wants_device = "device" in dest_name.lower() or (
                    default.kind == "const" and isinstance(default.const, str) and concrete(default.const) is not None
                    and not default.const.startswith("cpu"))
                if wants_device and default.kind in ("const", "device"):
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
