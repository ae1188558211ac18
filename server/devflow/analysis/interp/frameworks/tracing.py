"""torch.jit.trace records the devices of the tensors forward() builds as constants of the graph
(`torch.zeros(n)`, and `torch.zeros(n, device=x.device)` alike): the traced module builds them on the
trace-time device forever. Run on inputs on another device (after `.to(cuda)`, or traced on cuda and
run on the cpu), they meet the inputs there. A traced plain function (`torch.jit.trace(fn, example)`)
bakes the factories of its body alike. A cast to a tensor's device in forward() (`x = x.to(self.conv.weight.device)`,
detectron2's way to accept cpu inputs) is baked the same way (a device is not a tensor, so the tracer records
its value): the traced module keeps casting to the trace-time device, so once the module itself is moved
elsewhere its parameters meet the cast input, whatever device the caller's input is on."""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as F
from devflow.analysis import torch_api as T
from devflow.analysis.findings import Finding
from devflow.analysis.index import FileIndex
from devflow.analysis.lattice import definitely_differ, join
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of
from devflow.analysis.interp.movers import project_function


class Tracing:
    def run_traced_model(self, node, runner: Obj, name: str, args, kwargs, frame) -> Val:
        """`writer.add_graph(model, example)`: torch traces the model, calling it on the example inputs
        (a tuple of them is spread) where they are; a model on another device fails there."""
        return self.run_module_runner(node, F.MODULE_RUNNERS.get(runner.qual, {}).get(name), args, kwargs, frame)

    def run_module_runner(self, node, spec, args, kwargs, frame) -> Val:
        """A runner's call (`writer.add_graph(model, example)`, `torch.onnx.export(model, example, f)`):
        the model runs on the example where both are."""
        if spec is None or self.standalone:
            return UNKNOWN

        def arg(pos, param):
            if len(node.args) > pos and not any(isinstance(a, ast.Starred) for a in node.args[:pos + 1]):
                return args[pos], node.args[pos]
            kw = next((k for k in node.keywords if k.arg == param), None)
            return (kwargs.get(param, UNKNOWN), kw.value) if kw is not None else (None, None)

        mod, mod_node = arg(spec["module"], spec["module_param"])
        example, example_node = arg(spec["inputs"], spec["inputs_param"])
        if mod is None or example is None or mod.kind != "module":
            return UNKNOWN
        self._run_on_example(node, mod, mod_node, example, example_node, frame)
        return Val("const", const=None)

    def _run_on_example(self, node, mod: Val, mod_node, example: Val, example_node, frame) -> None:
        """Tracing calls the module on the example inputs (a tuple of them is spread) where they are: the
        call `model(*example)`, written where the user asked for the trace."""
        if example.kind == "obj" and example.obj is not None and example.obj.kind in ("tuple", "list"):
            inputs = list(example.obj.items)
            elts = example_node.elts if isinstance(example_node, (ast.Tuple, ast.List)) and \
                len(example_node.elts) == len(inputs) else [example_node] * len(inputs)
        else:
            inputs, elts = [example], [example_node]
        # the call the trace makes, `model(*example)`, written where the user asked for it
        calls = self.__dict__.setdefault("_traced_model_calls", {})
        call = calls.get(id(node))
        if call is None:
            call = calls[id(node)] = ast.copy_location(ast.Call(func=mod_node, args=elts, keywords=[]), node)
            call.end_lineno, call.end_col_offset = node.end_lineno, node.end_col_offset
        self.call_module(call, mod, inputs, {}, frame)

    def trace_call(self, node, args, kwargs, frame) -> Val:
        mod = args[0] if args else kwargs.get("func", kwargs.get("mod"))
        example = args[1] if len(args) > 1 else kwargs.get("example_inputs")
        if mod is None or example is None:
            return UNKNOWN
        if mod.kind == "module" and not self.standalone and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            # the tracer runs the module once on the example: a model on one device and an example on another
            # fail right here (`model.cuda(); torch.jit.trace(model, torch.rand(1, 3, 224, 224))`)
            mod_node = node.args[0] if node.args else next(k.value for k in node.keywords if k.arg in ("func", "mod"))
            example_node = node.args[1] if len(node.args) > 1 else next(
                k.value for k in node.keywords if k.arg == "example_inputs")
            self._run_on_example(node, mod, mod_node, example, example_node, frame)
        fn = mod.func if mod.kind == "func" and mod.bound is None and mod.func is not None \
            and getattr(mod.func, "kind", "") == "function" else None
        if fn is None and (mod.kind != "module" or mod.obj is None or mod.obj.cls is None):
            return UNKNOWN
        dev = None
        for v in ([example] if example.kind == "tensor" else
                  example.obj.items if example.kind == "obj" and example.obj is not None and example.obj.kind in ("tuple", "list") else []):
            if v.kind == "tensor":
                dev = join(dev, v.dev)
        if dev is None or not dev.known:
            return UNKNOWN
        baked = self._built_in_function(fn) if fn is not None else self._built_in_forward(mod.obj.cls)
        cast = self._cast_in_forward(mod.obj.cls) if fn is None and baked is None else None
        if baked is None and cast is None:
            return mod  # nothing device-dependent recorded: the trace runs wherever its parameters are
        if fn is not None:
            traced = Obj("traced", qual="torch.jit.trace", created_line=node.lineno)
            traced.traced = (dev, Origin(span_of(node), f"traced at line {node.lineno} with example inputs on "  # type: ignore[attr-defined]
                                         f"{dev.render()}"), baked)
            return Val("obj", obj=traced)
        src = mod.obj
        org = Origin(span_of(node), f"traced at line {node.lineno} with example inputs on {dev.render()}")
        obj = Obj("module", qual="torch.jit.trace", dev=src.dev, origin=src.origin, moved=src.moved,
                  created_line=node.lineno, training=src.training)
        obj.traced = (dev, org, baked or cast)  # type: ignore[attr-defined]
        obj.traced_cast = cast is not None  # type: ignore[attr-defined]
        return Val("module", obj=obj)

    def trace_saved(self, mod: Val, path: Val) -> None:
        """`traced.save("m.pt")` / `torch.jit.save(traced, "m.pt")`: the archive at that (literal) path
        holds the trace, its baked devices included."""
        if mod.kind == "module" and mod.obj is not None and getattr(mod.obj, "traced", None) is not None \
                and path.kind == "const" and isinstance(path.const, str):
            self.__dict__.setdefault("_saved_traces", {})[path.const] = mod.obj

    def trace_loaded(self, node, args, kwargs) -> Val | None:
        """`torch.jit.load("m.pt")` of a trace this program saved at that literal path: a module whose
        parameters are where they were saved (or at `map_location`) and whose graph keeps the baked devices."""
        path = args[0] if args else kwargs.get("f")
        src = self.__dict__.get("_saved_traces", {}).get(path.const) if path is not None and path.kind == "const" \
            and isinstance(path.const, str) else None
        if src is None:
            return None
        loc = args[1] if len(args) > 1 else kwargs.get("map_location")
        dev = self._as_device(loc) if loc is not None and not (loc.kind == "const" and loc.const is None) else src.dev
        if dev is None or not dev.known:
            return None
        obj = Obj("module", qual="torch.jit.load", dev=dev, created_line=node.lineno, training=src.training,
                  origin=Origin(span_of(node), f"loaded at line {node.lineno} from the trace saved to {path.const!r}"))
        obj.traced = src.traced  # type: ignore[attr-defined]
        obj.traced_cast = getattr(src, "traced_cast", False)  # type: ignore[attr-defined]
        return Val("module", obj=obj)

    def _built_in_function(self, fref):
        """The first torch factory call in a plain function's own body."""
        index = fref.unit.index if fref.unit is not None else self.index
        for n in ast.walk(fref.node):
            if isinstance(n, ast.Call):
                q = index.qualify(FileIndex.dotted(n.func) or "")
                if q.startswith("torch.") and q[6:] in T.FACTORIES:
                    return n, index
        return None

    def _built_in_forward(self, cls):
        """The first torch factory call in forward() (or a method it calls on self): a tensor the trace bakes."""
        return self._first_in_forward(cls, _is_factory)

    def _cast_in_forward(self, cls):
        """The first `t.to(u.device)` / `t.to(device=u.device)` in forward() (or a method it calls on self): a
        cast to a device read from a tensor at run time, which the trace records as the trace-time device."""
        return self._first_in_forward(cls, lambda call, _index: _cast_to_tensor_device(call))

    def _first_in_forward(self, cls, wanted):
        """The first call in forward() (or a method it calls on self, or a plain function of the class's file
        it calls: the tracer runs through them) that `wanted(call, index)` accepts. A function compiled by a
        torch.jit decorator (`@torch.jit.script_if_tracing`) is scripted, not traced: its devices stay
        run-time values."""
        found = cls.method("forward")
        if found is None:
            return None
        fns, seen = [found], set()
        while fns:
            fn, owner = fns.pop(0)
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            index = owner.home or self.index
            for n in ast.walk(fn):
                if not isinstance(n, ast.Call):
                    continue
                if wanted(n, index):
                    return n, index
                f = n.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                    m = cls.method(f.attr)
                    if m is not None:
                        fns.append(m)
                elif isinstance(f, ast.Name) and owner.home is not None:
                    helper = project_function(self, f.id, owner.home)
                    if helper is not None and not helper[0].decorator_list:
                        fns.append((helper[0], _Home(helper[1])))
        return None

    def traced_call(self, node, obj, arg_pairs, frame) -> bool:
        dev, org, (baked, _index) = obj.traced
        if getattr(obj, "traced_cast", False):
            return self._baked_cast_call(node, obj)
        for v, t in arg_pairs:
            if v.kind != "tensor" or v.dev is None or not v.dev.known or v.scalar or not definitely_differ(dev, v.dev):
                continue
            key = ("traced", span_of(node))
            if key in self.mix_origins:
                return True
            self.mix_origins.add(key)
            fn = obj.kind == "traced"
            related = [(org.span, org.reason), (span_of(baked), f"built on {dev.render()} at every call of the traced "
                                                                f"{'function' if fn else 'module'}")]
            self.add(Finding("DEV207", span_of(node),
                             f"`{t}` is on {v.dev.render()} but the {'function' if fn else 'module'} was {org.reason}: "
                             f"the tensor {'its body' if fn else 'forward()'} builds at line {baked.lineno} is baked into "
                             f"the trace on {dev.render()}; trace with example inputs on {v.dev.render()}"
                             f"{'' if fn else ' (after moving the model)'}", related, None))
            return True
        return False

    def _baked_cast_call(self, node, obj) -> bool:
        """A traced module whose forward() casts its input to a tensor's device. Called after the module was
        moved off the trace-time device, the input is cast to the trace-time device and meets the parameters;
        on that device, any input is cast to where the parameters are: nothing else to check (True either way)."""
        dev, org, (cast, _index) = obj.traced
        if obj.dev is None or not obj.dev.known or not definitely_differ(dev, obj.dev):
            return True
        key = ("traced", span_of(node))
        if key in self.mix_origins:
            return True
        self.mix_origins.add(key)
        where = obj.moved or obj.origin
        related = [(org.span, org.reason), (span_of(cast), f"casts to {dev.render()} at every call of the traced module")]
        if where is not None:
            related.append((where.span, where.reason))
        self.add(Finding("DEV207", span_of(node),
                         f"`{self.text(node.func)}` is on {obj.dev.render()} but the module was {org.reason}: forward() "
                         f"casts its input with `{self.text(cast)}` at line {cast.lineno}, baked into the trace as "
                         f"{dev.render()}, so its parameters meet an input on {dev.render()}; trace the module on "
                         f"{obj.dev.render()} (after moving it) or script the cast", related, None))
        return True


class _Home:
    """The file a followed helper function lives in, where `_first_in_forward` expects a class."""

    def __init__(self, home):
        self.home = home


def _is_factory(call: ast.Call, index) -> bool:
    q = index.qualify(FileIndex.dotted(call.func) or "")
    return q.startswith("torch.") and q[6:] in T.FACTORIES


def _cast_to_tensor_device(call: ast.Call) -> bool:
    """`t.to(u.device)` / `t.to(device=u.device)`: a cast whose device is read from a tensor when it runs."""
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "to"):
        return False
    target = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
    return isinstance(target, ast.Attribute) and target.attr == "device"
