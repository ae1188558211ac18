"""Random generators on virtual devices, and CUDA's check that an op's generator is on the device
type the op runs on ("Expected a 'cuda' device type for generator but found 'cpu'").

A virtual cuda generator is a real cpu generator (the data it draws for is on the cpu). The
dispatcher hands an op a fresh Python object for the same C++ generator, so the virtual device is
kept in a table keyed by the C++ generator (`_cdata`), not on the Python object; a generator not in
the table is a real one, on its real device (cpu).
"""

from __future__ import annotations

import weakref

import torch

from devflow.dryrun import recorder
from devflow.dryrun.vtensor import CPU

_orig_generator = torch._C.Generator
# _cdata -> (virtual device, origin) of the generators made by the program, alive
_DEVICES: dict[int, tuple[torch.device, object]] = {}
# where the default device was last set to an accelerator (set_default_device / set_default_tensor_type)
_default_origin: dict = {}


class VirtualGenerator(torch._C.Generator):
    """torch.Generator(device="cuda"): a cpu generator that says it is on the virtual device."""

    def __new__(cls, device="cpu"):
        return _orig_generator.__new__(cls, "cpu")

    def __init__(self, device="cpu"):
        from devflow.dryrun.dispatch import virtual_device

        self._vdev = virtual_device(device) if device is not None else CPU
        cdata = self._cdata
        _DEVICES[cdata] = (self._vdev, recorder.here("created"))
        weakref.finalize(self, _DEVICES.pop, cdata, None)

    @property
    def device(self):
        return self._vdev

    def set_state(self, new_state):
        return super().set_state(rng_state(new_state))


def rng_state(state):
    """An RNG state for a generator: a cpu ByteTensor on a GPU machine too (CUDA's generators check
    it as the cpu's do); the real data, which C++ reads from memory."""
    from devflow.dryrun.vtensor import VirtualTensor

    if isinstance(state, VirtualTensor):
        if state.vdev.type != "cpu":
            # a state loaded with map_location="cuda" (a checkpoint's RNG states): CUDA raises; the
            # run goes on with the state as if it had been brought to the cpu
            recorder.record_error("DEV911", "RNG state must be a torch.ByteTensor", "TypeError", [state])
        return state.elem
    return state


def set_rng_state(new_state) -> None:
    """torch.set_rng_state."""
    torch.default_generator.set_state(rng_state(new_state))


def device_of(gen) -> torch.device:
    hit = _DEVICES.get(getattr(gen, "_cdata", None))
    return hit[0] if hit else gen.device


def note_default_device(device: torch.device):
    """set_default_device(cuda) was called here: a factory that allocates on the default device
    names this line as where its device came from."""
    if device.type != "cpu":
        _default_origin.update(device=device, origin=recorder.here("default device", callers=1))
    else:
        _default_origin.clear()


def check(gen, op_device: torch.device, ops):
    """An op that runs on op_device draws from gen: CUDA requires the same device type. An op on
    the default device names the line that made it the default (the program's own generator or
    a library's, e.g. a sampler's, on the cpu is the usual mismatch)."""
    gdev = device_of(gen)
    if gdev.type == op_device.type:
        return
    hit = _DEVICES.get(getattr(gen, "_cdata", None))
    gen_origin = hit[1] if hit else None
    operands = [{"name": "generator", "device": str(gdev), "shape": [], "dtype": "torch.Generator",
                 "origins": recorder.origins_json(gen_origin)}]
    operands += [recorder.operand_json(o.name, o.tensor) for o in ops]
    default = _default_origin.get("origin") if _default_origin.get("device") == op_device else None
    if default is not None:
        operands.append({"name": "the op's output", "device": str(op_device), "shape": [], "dtype": "",
                         "origins": recorder.origins_json(default)})
    recorder.record_error("DEV904", f"Expected a '{op_device.type}' device type for generator but found "
                          f"'{gdev.type}'", "generator", [], extra={"operands": operands})


def default_generators(devices: int) -> tuple:
    return tuple(VirtualGenerator(torch.device("cuda", i)) for i in range(devices))
