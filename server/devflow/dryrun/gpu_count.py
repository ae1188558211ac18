"""nn.DataParallel over "every GPU" when the dry run has one virtual GPU: what a machine with more
GPUs would do differently.

DataParallel without device_ids uses every GPU. With exactly one, it moves its module to
device_ids[0] when it is built; with two or more it only checks, in forward, and raises if a
parameter or buffer is elsewhere. A script written for several GPUs passes a 1-GPU run silently.

The dry run does what one GPU does (the module is moved, the run goes on as on a 1-GPU machine) and
keeps a counterfactual: each tensor that move changed gets a slot holding where it would be on a
machine with more GPUs (a 0-element shadow tensor on that device). Later moves that happen on any
machine follow it: Module._apply (to / cuda / cpu / half ..., on the wrapper, the module or a
submodule) applies the same function to the shadow, `t.data = x` puts it on x's device, and a
slot whose tensor the user replaced is dropped (the new tensor is where it is on every machine).
At that DataParallel's first forward, a tensor whose slot is off device_ids[0] is DEV910.

A device list counts as "every GPU" when it is None or the device_ids of a DataParallel built
without them (sync_batchnorm's convert_model passes `module.device_ids` on). A list the program
builds (`[0]`, `list(range(torch.cuda.device_count()))`) is taken as written: one GPU on purpose
or not, the dry run cannot tell, and an unknown stays silent.
"""

from __future__ import annotations

import contextlib
import sys
import weakref

import torch
import torch.nn as nn

from devflow.dryrun import recorder
from devflow.dryrun.vtensor import VirtualTensor, vdevice

CODE = "DEV910"
_EVERY_GPU: dict[int, list] = {}      # id -> device_ids lists that DataParallel filled itself
_SLOTS: dict[int, "_Slot"] = {}       # id(tensor) -> its counterfactual (the slot holds the tensor)
_HOMES: dict[int, list] = {}          # id(module) -> [(slot, "_parameters"/"_buffers", name)]
_WATCHES: dict[int, "_Watch"] = {}    # id(DataParallel) -> construction site, until its first forward
_state = {"applying": 0, "unmirrored": False, "installed": False}


def is_every_gpu(device_ids) -> bool:
    return device_ids is None or _EVERY_GPU.get(id(device_ids)) is device_ids


def remember_every_gpu(device_ids: list) -> None:
    _EVERY_GPU[id(device_ids)] = device_ids


class _Slot:
    def __init__(self, tensor, origin):
        self.tensor = tensor
        self.origin = origin    # where the tensor got its device before DataParallel moved it
        self.shadow = _shadow(vdevice(tensor), tensor.dtype)

    def where(self) -> torch.device:
        return self.shadow.vdev


class _Watch:
    def __init__(self, dp, frames):
        self.dp = weakref.ref(dp)
        self.frames = frames


def _shadow(dev: torch.device, dtype) -> VirtualTensor:
    from torch.utils._python_dispatch import _disable_current_modes
    with _disable_current_modes():
        return VirtualTensor(torch.empty(0, dtype=dtype), dev, None)


def moving_every_gpu_module(dp, module: nn.Module, src: torch.device):
    """Called by DataParallel.__init__ (device_ids: every GPU, and there is one) just before it
    moves `module` to `src`: remember where each tensor stays on a machine with more GPUs, and
    return the context to make the move in (a move only one GPU makes, not followed by the slots)."""
    _install()
    for m in module.modules():
        for kind in ("_parameters", "_buffers"):
            for name, t in getattr(m, kind).items():
                if t is None:
                    continue
                slot = _live_slot(t)
                if slot is None and vdevice(t) != src:
                    slot = _SLOTS[id(t)] = _Slot(t, getattr(t, "origin", None))
                if slot is not None:
                    homes = _HOMES.setdefault(id(m), [])
                    if not any(s is slot and k == kind and n == name for s, k, n, _ in homes):
                        homes.append((slot, kind, name, weakref.ref(m)))
    _WATCHES[id(dp)] = _Watch(dp, recorder.user_frames(limit=2, frame=sys._getframe(2)))
    return _unmirrored()


@contextlib.contextmanager
def _unmirrored():
    _state["unmirrored"] = True
    try:
        yield
    finally:
        _state["unmirrored"] = False


def _live_slot(t):
    slot = _SLOTS.get(id(t))
    return slot if slot is not None and slot.tensor is t else None


def first_forward(dp, module: nn.Module, src: torch.device, checked_ok: bool) -> None:
    """DataParallel's first forward: with more GPUs it would raise here if a tensor is off src."""
    watch = _WATCHES.pop(id(dp), None)
    if watch is None or watch.dp() is not dp or not checked_ok:
        return  # not an every-GPU wrapper, or the real check already reported this forward
    params = ((n, t) for n, t in module.named_parameters())
    buffers = ((n, t) for n, t in module.named_buffers())
    for qualname, t in (*params, *buffers):
        slot = _live_slot(t)
        if slot is not None and slot.where() != src:
            _report(watch, qualname, t, slot, src)
            break
    if not _WATCHES:
        _prune()


def _report(watch: _Watch, qualname: str, t, slot: _Slot, src: torch.device) -> None:
    where = slot.where()
    torch_says = (f"module must have its parameters and buffers on device {src} (device_ids[0]) but found one of "
                  f"them on device: {where}")
    message = (f"With 2 or more GPUs this forward raises \"{torch_says}\" ({qualname} is on {where}). "
               f"DataParallel without device_ids uses every GPU; with exactly one it moves the module to {src} "
               f"itself, so this script runs on 1 GPU and fails on 2 or more. Move the module to {src} after its "
               "last change, before its first forward.")
    operand = {"name": qualname, "device": str(where), "shape": list(t.shape), "dtype": str(t.dtype),
               "origins": recorder.origins_json(slot.origin)}
    notes = []
    for i, (path, line, _fn) in enumerate(watch.frames):
        notes.append({"path": path, "line": line, "message": "DataParallel built here over every GPU (device_ids "
                      "left to its default)" if i == 0 else "DataParallel built in the call from here"})
    recorder.RECORDER.add(CODE, message, "DataParallel.forward", [operand],
                          recorder.user_frames(frame=sys._getframe(2)), severity="warning", extra={"notes": notes})


def _prune():
    # No wrapper waits for its forward: keep the slots whose tensors are still in a module (a
    # later every-GPU wrapper may wrap them), drop the rest.
    live = {}
    for key, homes in list(_HOMES.items()):
        homes[:] = [h for h in homes if _home_holds(h)]
        if not homes:
            del _HOMES[key]
        for slot, *_ in homes:
            live[id(slot.tensor)] = slot
    _SLOTS.clear()
    _SLOTS.update(live)


def _home_holds(home) -> bool:
    slot, kind, name, ref = home
    m = ref()
    return m is not None and getattr(m, kind).get(name) is slot.tensor


# -- the moves every machine makes ----------------------------------------------------------------

def _install():
    if _state["installed"]:
        return
    _state["installed"] = True
    plain_apply = nn.Module._apply

    def _apply(self, fn, recurse=True):
        homes = _HOMES.get(id(self))
        if homes:
            homes[:] = [h for h in homes if h[3]() is self and _home_holds(h)]
        _state["applying"] += 1
        try:
            out = plain_apply(self, fn, recurse)
        finally:
            _state["applying"] -= 1
        for slot, kind, name, _ref in homes or ():
            _follow(slot, getattr(self, kind).get(name), fn)
        return out

    nn.Module._apply = _apply
    from devflow.dryrun import vtensor
    vtensor.data_set_hook = _data_set


def _follow(slot: _Slot, now, fn):
    if now is None or _SLOTS.get(id(slot.tensor)) is not slot:
        return
    if now is not slot.tensor:  # fn returned a new tensor (buffers, a new Parameter): same slot
        _SLOTS.pop(id(slot.tensor), None)
        slot.tensor = now
        _SLOTS[id(now)] = slot
    if _state["unmirrored"]:
        return
    try:
        with torch.no_grad(), recorder.RECORDER.muted():
            moved = fn(slot.shadow)
    except Exception:  # noqa: BLE001 - a function the shadow cannot take: unknown, forget the slot
        _SLOTS.pop(id(slot.tensor), None)
        return
    if isinstance(moved, torch.Tensor):
        slot.shadow = _shadow(vdevice(moved), moved.dtype)


def _data_set(tensor, new):
    # `t.data = x` by the program (not inside Module._apply): t is where x is, on every machine
    if _state["applying"] or not isinstance(new, torch.Tensor):
        return
    slot = _live_slot(tensor)
    if slot is not None:
        slot.shadow = _shadow(vdevice(new), new.dtype)
