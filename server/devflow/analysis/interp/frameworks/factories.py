"""Library functions that build what users then place and feed (table framework_api.LIBRARY_FACTORIES,
an ast scan of the libraries' releases): `open_clip.create_model_and_transforms(name)` gives a model on
its `device=` (default "cpu") and image preprocessing that makes cpu tensors from images;
`whisper.load_model(name)` a model on the GPU when there is one; `sam_model_registry["vit_h"](ckpt)` a
model where the default device is; `open_clip.get_tokenizer(name)` a tokenizer whose token ids are cpu
tensors. Fed GPU tensors, the cpu model fails, as does a GPU model fed its cpu preprocessing."""

from __future__ import annotations

from devflow.analysis import framework_api as F
from devflow.analysis.lattice import CPU, CUDA, TOP, concrete
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class LibraryFactories:
    def library_factory_call(self, node, q: str, args, kwargs) -> Val:
        return self._factory_value(node, q, F.LIBRARY_FACTORIES[q], args, kwargs)

    def _factory_value(self, node, q: str, spec: dict | None, args, kwargs) -> Val:
        shown = q.removesuffix("[]").rsplit(".", 1)[-1] + ("[...]" if q.endswith("[]") else "")
        kind = spec["kind"] if spec else None
        if kind == "tuple":
            return Val("obj", obj=Obj("tuple", items=[self._factory_value(node, q, s, args, kwargs) for s in spec["items"]]))
        if kind == "model":
            dev, reason = self._factory_device(spec, args, kwargs, shown, node)
            if dev is None:
                return Val("module", obj=Obj("module", qual=q, dev=TOP))
            return Val("module", obj=Obj("module", qual=q, dev=dev, origin=Origin(span_of(node), reason),
                                         created_line=node.lineno, training=True))
        if kind == "image_transform":
            obj = Obj("transform", qual=shown)
            obj.attrs["to_tensor"] = Val("const", const=True)
            return Val("obj", obj=obj)
        if kind == "tokenizer":
            obj = Obj("tokenizer", qual=q)
            obj.attrs["cpu_ids"] = Val("const", const=True)  # called, it gives its token ids as a cpu tensor
            return Val("obj", obj=obj)
        if kind == "cpu_tensor":
            return Val("tensor", CPU, Origin(span_of(node), f"made on cpu by `{shown}()` at line {node.lineno}"))
        return UNKNOWN

    def _factory_device(self, spec, args, kwargs, shown: str, node):
        """Where the factory puts the model: its `device` argument, else the parameter's default; a factory
        without one builds it where the default device is. (None: not known.)"""
        line = node.lineno
        if spec.get("device") is None:
            if not self.default_dev.known:
                return None, ""
            return self.default_dev, f"built by `{shown}()` at line {line}"
        pos = spec.get("position")
        d = kwargs.get(spec["device"], args[pos] if pos is not None and len(args) > pos else None)
        if d is None and ("__opaque__" in kwargs or any(k.arg is None for k in node.keywords)):
            return None, ""  # `**kwargs` may carry it
        if d is None:
            default = spec.get("default")
            if default == "auto":  # "cuda" if torch.cuda.is_available() else "cpu": the machine's GPU
                return CUDA, f"put on the GPU by `{shown}()` at line {line} (its `device` defaults to cuda when available)"
            dev = concrete(default) if isinstance(default, str) else None
            if dev is None:
                return None, ""
            return dev, f"put on {dev.render()} by `{shown}()` at line {line} (its `device` defaults to \"{default}\")"
        if d.kind == "device" and d.dev is not None and d.dev.known:
            return d.dev, f"put on {d.dev.render()} by `{shown}()` at line {line}"
        if d.kind == "const" and isinstance(d.const, str) and concrete(d.const) is not None:
            return concrete(d.const), f"put on {d.const} by `{shown}()` at line {line}"
        return None, ""
