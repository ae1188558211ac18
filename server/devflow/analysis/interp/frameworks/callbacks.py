"""transformers' own generate() callbacks that keep a tensor on their `device` argument, which defaults
to the cpu (`MinLengthLogitsProcessor(min_len, eos_token_id)` keeps its eos ids there; table
framework_api.GENERATION_CPU_STATE, from the wheel): called with `input_ids` / `scores` on another
device, directly, through a `LogitsProcessorList`, or by `model.generate(logits_processor=...)` on the
model's device, they fail. Reported where the callback is built: the fix is its `device=`."""

from __future__ import annotations

from devflow.analysis import framework_api as F
from devflow.analysis.lattice import concrete
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class LibraryCallbacks:
    def library_callback(self, node, cls_name: str, args, kwargs) -> Val:
        """A callback of the table, built here: what it keeps, on which device (unknown: nothing)."""
        entry = F.GENERATION_CPU_STATE[cls_name]
        pos = entry["position"]
        d = kwargs.get(entry["param"], args[pos] if len(args) > pos else None)
        attr = entry["attrs"][0]
        if d is None:
            dev = concrete(entry["default"])
            reason = f"`{cls_name}` keeps its `{attr}` on {dev.render()}: built without `device=`, which defaults to \"{entry['default']}\""
        elif d.kind == "device" and d.dev is not None and d.dev.known:
            dev, reason = d.dev, f"`{cls_name}` keeps its `{attr}` on {d.dev.render()}"
        elif d.kind == "const" and isinstance(d.const, str) and concrete(d.const) is not None:
            dev, reason = concrete(d.const), f"`{cls_name}` keeps its `{attr}` on {d.const}"
        else:
            return Val("obj", obj=Obj("callback", qual=cls_name))
        obj = Obj("callback", qual=cls_name)
        obj.attrs["state"] = Val("tensor", dev, Origin(span_of(node), reason, "factory"), text=f"{cls_name}.{attr}")
        return Val("obj", obj=obj)

    def call_callbacks(self, node, fval: Val, args, frame) -> Val | None:
        """`processors(input_ids, scores)`: each callback of the list (or the one callback) meets them.
        None: no callback of the table in it (the ordinary rules apply)."""
        obj = fval.obj
        items = [fval] if obj.kind == "callback" else list(obj.items)
        callbacks = [v.obj for v in items if v.kind == "obj" and v.obj is not None and v.obj.kind == "callback"]
        if not callbacks:
            return None
        tensors = [(v, self.text(a)) for v, a in zip(args, node.args) if v.kind == "tensor"]
        # they read their state against `scores` (the second argument: input_ids, scores)
        scores = [(v, self.text(a)) for v, a in list(zip(args, node.args))[1:2] if v.kind == "tensor"]
        self.callbacks_meet(node, callbacks, scores or tensors, frame)
        return args[1] if len(args) > 1 and args[1].kind == "tensor" else UNKNOWN

    def generate_callbacks(self, node, mod: Val, kwargs, frame) -> None:
        """`model.generate(logits_processor=..., stopping_criteria=...)`: generate() calls them with the
        running input_ids and scores, on the model's device."""
        dev = mod.obj.dev if mod.obj is not None else None
        if dev is None or not dev.known or mod.obj.dispatched or getattr(mod.obj, "standalone", False):
            return
        for key in ("logits_processor", "stopping_criteria"):
            v = kwargs.get(key)
            if v is None or v.kind != "obj" or v.obj is None:
                continue
            items = [v] if v.obj.kind == "callback" else list(v.obj.items) if v.obj.kind == "list" else []
            callbacks = [x.obj for x in items if x.kind == "obj" and x.obj is not None and x.obj.kind == "callback"]
            scores = Val("tensor", dev, mod.obj.origin or Origin(span_of(node), "the model's device"), text="scores")
            self.callbacks_meet(node, callbacks, [(scores, "scores")], frame)

    def callbacks_meet(self, node, callbacks, tensors, frame) -> None:
        for cb in callbacks:
            state = cb.attrs.get("state")
            if state is not None and tensors:
                self.check_mix(node, [(state, state.text), *tensors], frame)
