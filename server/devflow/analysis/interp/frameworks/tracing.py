"""torch.jit.trace records the devices of the tensors forward() builds as constants of the graph
(`torch.zeros(n)`, and `torch.zeros(n, device=x.device)` alike): the traced module builds them on the
trace-time device forever. Run on inputs on another device (after `.to(cuda)`, or traced on cuda and
run on the cpu), they meet the inputs there."""

from __future__ import annotations

import ast

from devflow.analysis import torch_api as T
from devflow.analysis.findings import Finding
from devflow.analysis.index import FileIndex
from devflow.analysis.lattice import definitely_differ, join
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class Tracing:
    def trace_call(self, node, args, kwargs) -> Val:
        mod = args[0] if args else kwargs.get("func", kwargs.get("mod"))
        example = args[1] if len(args) > 1 else kwargs.get("example_inputs")
        if mod is None or example is None or mod.kind != "module" or mod.obj is None or mod.obj.cls is None:
            return UNKNOWN
        dev = None
        for v in ([example] if example.kind == "tensor" else
                  example.obj.items if example.kind == "obj" and example.obj is not None and example.obj.kind in ("tuple", "list") else []):
            if v.kind == "tensor":
                dev = join(dev, v.dev)
        if dev is None or not dev.known:
            return UNKNOWN
        baked = self._built_in_forward(mod.obj.cls)
        if baked is None:
            return mod  # nothing device-dependent recorded: the trace runs wherever its parameters are
        src = mod.obj
        org = Origin(span_of(node), f"traced at line {node.lineno} with example inputs on {dev.render()}")
        obj = Obj("module", qual="torch.jit.trace", dev=src.dev, origin=src.origin, moved=src.moved,
                  created_line=node.lineno, training=src.training)
        obj.traced = (dev, org, baked)  # type: ignore[attr-defined]
        return Val("module", obj=obj)

    def _built_in_forward(self, cls):
        """The first torch factory call in forward() (or a method it calls on self): a tensor the trace bakes."""
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
                q = index.qualify(FileIndex.dotted(n.func) or "")
                if q.startswith("torch.") and q[6:] in T.FACTORIES:
                    return n, index
                f = n.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                    m = cls.method(f.attr)
                    if m is not None:
                        fns.append(m)
        return None

    def traced_call(self, node, obj, arg_pairs, frame) -> bool:
        dev, org, (baked, _index) = obj.traced
        for v, t in arg_pairs:
            if v.kind != "tensor" or v.dev is None or not v.dev.known or v.scalar or not definitely_differ(dev, v.dev):
                continue
            key = ("traced", span_of(node))
            if key in self.mix_origins:
                return True
            self.mix_origins.add(key)
            related = [(org.span, org.reason), (span_of(baked), f"built on {dev.render()} at every call of the traced module")]
            self.add(Finding("DEV207", span_of(node),
                             f"`{t}` is on {v.dev.render()} but the module was {org.reason}: the tensor forward() builds "
                             f"at line {baked.lineno} is baked into the trace on {dev.render()}; trace with example inputs on "
                             f"{v.dev.render()} (after moving the model)", related, None))
            return True
        return False
