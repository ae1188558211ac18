"""DEV2xx: tensors created or left on cpu that meet tensors on another device (found by the interpreter)."""

from __future__ import annotations

from devflow.rules.base import Rule


class FactoryWithoutDevice(Rule):
    """DEV201: `torch.zeros(n)` (no device=) combined with a tensor on the accelerator."""

    code = "DEV201"


class InputNotMoved(Rule):
    """DEV202: a batch / input left on cpu is fed to a model (or op) on another device."""

    code = "DEV202"


class LossWeightOnCpu(Rule):
    """DEV203: `CrossEntropyLoss(weight=w)` with `w` on cpu while logits are on the accelerator."""

    code = "DEV203"


class IndexOnWrongDevice(Rule):
    """DEV204: a cpu tensor indexed by an index tensor on the accelerator."""

    code = "DEV204"


class DataParallelOutputOnCpu(Rule):
    """DEV209: a DataParallel module whose forward returns a cpu tensor: the gather onto device_ids[0] refuses it."""

    code = "DEV209"


RULES = [FactoryWithoutDevice(), InputNotMoved(), LossWeightOnCpu(), IndexOnWrongDevice(), DataParallelOutputOnCpu()]
