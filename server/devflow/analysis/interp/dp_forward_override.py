"""A module whose `forward` is overridden on the instance (`model.forward = model.forward`, `self.forward =
self._fast_forward`, a hook library wrapping it) under nn.DataParallel over several GPUs.

`Module.__call__` looks `forward` up on the instance first. DataParallel's `replicate()` gives each replica a
copy of the module's instance `__dict__` (`_replicate_for_data_parallel`), so an instance-level forward is
copied as it is: a method bound to the original module. Every replica then runs the original module's forward,
with the original's parameters on device_ids[0], on the input chunk scattered to its own GPU ("Expected all
tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0")."""

from __future__ import annotations

from devflow.analysis.values import Obj, Val

_CALLABLE_KINDS = ("attr", "func", "method")


def bound_instance_forward(obj: Obj) -> Val | None:
    """The callable stored as `forward` on the module instance `obj` when it is bound to `obj` itself (a
    method of the original module); None when there is none or where it comes from is not known."""
    fwd = obj.attrs.get("forward")
    if fwd is None or fwd.kind not in _CALLABLE_KINDS:
        return None
    recv = fwd.bound
    if recv is None or recv.kind != "module" or recv.obj is not obj:
        return None
    return fwd
