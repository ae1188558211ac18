"""DEV205-DEV208: devices that frameworks around torch fix on their own (found by the interpreter's
`frameworks` part from the generated framework knowledge)."""

from __future__ import annotations

from devflow.rules.base import Rule


class GeneratorOnOtherDevice(Rule):
    """DEV205: `g = torch.Generator()` (cpu) passed as `generator=g` to draw a tensor on the accelerator."""

    code = "DEV205"


class PackedLengthsNotOnCpu(Rule):
    """DEV206: `pack_padded_sequence(x, lengths)` with `lengths` on the accelerator (must be a cpu tensor or a list)."""

    code = "DEV206"


class TracedModuleOnOtherDevice(Rule):
    """DEV207: a module traced with example inputs on one device, run on inputs on another: the tensors its
    forward() builds were baked into the trace on the trace-time device."""

    code = "DEV207"


class CollectiveTensorOnWrongDevice(Rule):
    """DEV208: a torch.distributed collective given a tensor its process group's backend cannot communicate
    (a cpu tensor on an NCCL group), or an NCCL object collective in processes sharing the current GPU."""

    code = "DEV208"


RULES = [GeneratorOnOtherDevice(), PackedLengthsNotOnCpu(), TracedModuleOnOtherDevice(), CollectiveTensorOnWrongDevice()]
