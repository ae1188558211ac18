"""accelerate's Accelerator (tables in analysis/framework_api.py, generated from the accelerate wheel):
`prepare()` hands each object to a `prepare_*` method by its type: a DataLoader then yields its batches
on the accelerator's device, a module is moved there; anything else (a bare tensor, a criterion's
weights) comes back as it is, on the device it was on. `Accelerator(cpu=True)` keeps all on the cpu."""

from __future__ import annotations

from devflow.analysis import framework_api as F
from devflow.analysis.lattice import CPU, Dev
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of
from devflow.analysis.interp.optimizer_restore import restore_saved_groups

_LOADER, _MODULE = "torch.utils.data.DataLoader", "torch.nn.Module"


class Accelerators:
    def new_accelerator(self, node, kwargs) -> Val:
        flag = kwargs.get(F.ACCELERATOR_CPU_FLAG) if F.ACCELERATOR_CPU_FLAG else None
        if "__opaque__" in kwargs or (flag is not None and not (flag.kind == "const" and isinstance(flag.const, bool))):
            return UNKNOWN  # `Accelerator(cpu=args.cpu)`: where it runs is the command line's choice
        on_cpu = flag is not None and flag.const is True
        dev = CPU if on_cpu else Dev("sym", key=("accelerator", id(node)), text=f"accelerator.{F.ACCELERATOR_DEVICE}", accel=True)
        return Val("obj", obj=Obj("accelerator", qual="accelerate.Accelerator", dev=dev,
                                  origin=Origin(span_of(node), f"the Accelerator of line {node.lineno}")))

    def accelerator_attr(self, acc: Obj, attr: str) -> Val:
        if attr == F.ACCELERATOR_DEVICE and acc.dev is not None:
            return Val("device", acc.dev, acc.origin)
        return UNKNOWN

    def accelerator_method(self, node, acc: Obj, name: str, args, kwargs, frame) -> Val:
        if name == F.ACCELERATOR_PREPARE:
            if "__opaque__" in kwargs or any(a.kind == "unknown" and a.const == "*" for a in args):
                return UNKNOWN
            out = [self.prepared(node, acc, a, frame) for a in args]
            return out[0] if len(out) == 1 else Val("obj", obj=Obj("tuple", items=out))
        if name in F.ACCELERATOR_PLACES.values() and args:
            return self.prepared(node, acc, args[0], frame, only=name)
        if F.ACCELERATOR_RESTORES.get(name) == "cpu" and not self.standalone:
            self._restore_optimizers(node, acc, frame)
        return UNKNOWN

    def _restore_optimizers(self, node, acc: Obj, frame) -> None:
        """`accelerator.load_state(dir)`: each prepared optimizer's `load_state_dict` gets a state loaded onto the cpu
        (in one process), so a project optimizer's param_groups tensors stay there (interp/optimizer_restore.py)."""
        ckpt = Obj("ckpt", qual="accelerate", origin=Origin(span_of(node), f"loaded onto the cpu by `{self.text(node.func)}()` "
                                                                           f"at line {node.lineno}"))
        for opt in getattr(acc, "prepared_optimizers", ()):
            if getattr(opt, "project_optimizer", False):
                restore_saved_groups(self, node, opt, ckpt, frame, receiver=_name_of(frame, opt))

    def prepared(self, node, acc: Obj, v: Val, frame, only: str = "") -> Val:
        """What `prepare()` gives back for one object."""
        places = F.ACCELERATOR_PLACES
        if v.kind == "obj" and v.obj is not None and v.obj.kind == "loader" and places.get(_LOADER) in ("", only or places.get(_LOADER)):
            loader = Obj("loader", origin=Origin(span_of(node), f"the DataLoader prepared at line {node.lineno}"))
            loader.attrs["batch"] = self._on_accelerator(v.obj.attrs.get("batch", UNKNOWN), acc, node)
            return Val("obj", obj=loader)
        if v.kind == "module" and v.obj is not None and places.get(_MODULE) in ("", only or places.get(_MODULE)):
            if acc.dev is not None and not v.obj.dispatched:
                self.move_module(node, v, acc.dev, frame, self.text(node), self.text(node.func))
            return v
        if v.kind == "obj" and v.obj is not None and (v.obj.kind == "optimizer" or getattr(v.obj, "project_optimizer", False)):
            acc.__dict__.setdefault("prepared_optimizers", []).append(v.obj)  # restored by `load_state`
        return v  # optimizers, schedulers (wrapped, same parameters) and anything else: as they are

    def _on_accelerator(self, batch: Val, acc: Obj, node) -> Val:
        """accelerate sends every tensor of a batch (in dicts, lists, tuples) to its device."""
        org = Origin(span_of(node), f"a batch of the DataLoader prepared at line {node.lineno}, on the accelerator's device")
        if batch.kind == "tensor":
            return Val("tensor", acc.dev, org, batch=batch.batch)
        if batch.kind == "obj" and batch.obj is not None and batch.obj.kind in ("dict", "list", "tuple"):
            o = batch.obj
            moved = Obj(o.kind, origin=o.origin, items=[self._on_accelerator(i, acc, node) for i in o.items],
                        keys={k: self._on_accelerator(i, acc, node) for k, i in o.keys.items()})
            if hasattr(o, "exact"):
                moved.exact = o.exact  # type: ignore[attr-defined]
            return Val("obj", obj=moved, elem=self._on_accelerator(batch.elem, acc, node) if batch.elem is not None else None)
        return UNKNOWN


def _name_of(frame, obj: Obj) -> str:
    """A local name bound to this object (`optimizer`), for a fix written where the load is."""
    return next((n for n, v in frame.env.items() if v.kind == "obj" and v.obj is obj and n.isidentifier()), "")
