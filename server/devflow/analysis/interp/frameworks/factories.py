"""Library functions that build what users then place and feed (table framework_api.LIBRARY_FACTORIES,
an ast scan of the libraries' releases): `open_clip.create_model_and_transforms(name)` gives a model on
its `device=` (default "cpu") and image preprocessing that makes cpu tensors from images;
`whisper.load_model(name)` a model on the GPU when there is one; `sam_model_registry["vit_h"](ckpt)` a
model where the default device is; `open_clip.get_tokenizer(name)` a tokenizer whose token ids are cpu
tensors. Fed GPU tensors, the cpu model fails, as does a GPU model fed its cpu preprocessing.

An object moved by copy (a DGL graph: `dgl.graph((src, dst))`, `dgl.batch(graphs)`) is on its `device=`
when given, else where the data it is built from is: the cpu for host data (lists, numpy arrays), the
tensors' or graphs' device otherwise, unknown when any of them is. Its `.to(device)` returns the moved
copy and leaves it where it was, as a tensor's does (so a dropped result is DEV107)."""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as F
from devflow.analysis.lattice import CPU, CUDA, TOP, concrete
from devflow.analysis.values import COPY_MOVED, UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


def _data_devices(v: Val, depth: int = 0) -> dict | None:
    """{device: origin} of the tensors in a value an object is built from; empty for host data (constants,
    numpy, names of dtypes), None when some part is not known."""
    if depth > 4:
        return None
    if v.kind == "tensor":
        return {v.dev: v.origin} if v.dev is not None and v.dev.known else None
    if v.kind in ("const", "qual"):
        return {}
    if v.kind == "obj" and v.obj is not None:
        if v.obj.kind == "host":
            return {}
        if v.obj.kind in ("tuple", "list", "dict"):
            out: dict = {}
            for item in [*v.obj.items, *v.obj.keys.values(), *([v.elem] if v.elem is not None else [])]:
                got = _data_devices(item, depth + 1)
                if got is None:
                    return None
                out = {**got, **out}
            return out
    return None


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
        if kind == "moved_by_copy":
            return self._copy_moved_value(node, shown, spec, args, kwargs)
        return UNKNOWN

    def _copy_moved_value(self, node, shown: str, spec: dict, args, kwargs) -> Val:
        if spec.get("device") is not None:
            pos = spec.get("position")
            d = kwargs.get(spec["device"], args[pos] if pos is not None and len(args) > pos else None)
            if d is not None and not (d.kind == "const" and d.const is None):
                dev, reason = self._factory_device(spec, args, kwargs, shown, node)
                return Val("tensor", dev, Origin(span_of(node), reason), batch=COPY_MOVED) if dev is not None else UNKNOWN
        if "__opaque__" in kwargs or any(k.arg is None for k in node.keywords) or \
                any(isinstance(a, ast.Starred) for a in node.args):
            return UNKNOWN
        devs: dict = {}
        for v in [*args, *(v for k, v in kwargs.items() if k != spec.get("device"))]:
            got = _data_devices(v)
            if got is None:
                return UNKNOWN
            devs = {**got, **devs}
        if len(devs) > 1:
            return UNKNOWN
        if not devs:
            return Val("tensor", CPU, Origin(span_of(node), f"built on cpu from host data by `{shown}()` at line {node.lineno}"),
                       batch=COPY_MOVED)
        dev, src = next(iter(devs.items()))
        return Val("tensor", dev, Origin(span_of(node), f"built by `{shown}()` at line {node.lineno} from data on "
                                         f"{dev.render()}" + (f" ({src.reason})" if src is not None else "")), batch=COPY_MOVED)

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
        dev = self._as_device(d) if d.kind in ("device", "const") else None
        if dev is None or not dev.known:
            return None, ""
        return dev, f"put on {d.const if d.kind == 'const' else dev.render()} by `{shown}()` at line {line}"
