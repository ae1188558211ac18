"""The rule catalogue: every rule's code, name, family, one-line summary, fix applicability, doc page.

The CLI (SARIF `helpUri`) and the language server (`codeDescription`) read this; it imports
nothing heavy, so it is cheap to import anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DOC_BASE = "https://github.com/devflow-dev/devflow/blob/main/docs/rules/"

FAMILIES = {
    "DEV1": "module placement",
    "DEV2": "tensors created or left on cpu",
    "DEV3": "checkpoints and optimizer resume",
    "DEV4": "AMP, GradScaler and fused optimizers on resume",
    "DEV5": "device_map, accelerate and PEFT",
    "DEV6": "default devices and wrappers",
    "DEV9": "dynamic: found by running the script (devflow dryrun)",
}


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str
    fix: Literal["safe", "unsafe"] | None
    # "error": the flagged code raises a cross-device error when it runs; "warning": it misbehaves
    # or fails only elsewhere (another machine, a multi-process launch, a later resume).
    severity: Literal["error", "warning"] = "error"

    @property
    def family(self) -> str:
        return FAMILIES[self.code[:4]]

    @property
    def doc_path(self) -> str:
        return f"docs/rules/{self.code}.md"

    @property
    def doc_url(self) -> str:
        return doc_url(self.code)


def doc_url(code: str) -> str:
    """Stable URL of a rule's documentation page."""
    return f"{DOC_BASE}{code}.md"


_RULES = [
    RuleInfo("DEV101", "module-added-after-move", "Module assigned onto a model after the model was moved to a device", "safe"),
    RuleInfo("DEV102", "submodules-built-after-move", "A method or function that builds new submodules is applied after the move", "unsafe"),
    RuleInfo("DEV103", "modules-in-python-container", "Submodules kept in a plain Python list or dict are not moved with the model", "unsafe"),
    RuleInfo("DEV104", "module-created-in-forward", "Module with parameters created inside forward() stays on cpu and is re-initialised every call", "unsafe"),
    RuleInfo("DEV105", "tensor-attribute-not-buffer", "Tensor stored as a plain attribute is not moved by Module.to(); register it as a buffer", "unsafe"),
    RuleInfo("DEV106", "model-not-moved", "Model left on cpu while its inputs are moved to a device", "unsafe"),
    RuleInfo("DEV107", "discarded-tensor-to", "Result of Tensor.to()/.cuda()/.cpu() is discarded (tensors are not moved in place)", "safe"),
    RuleInfo("DEV108", "metric-or-criterion-not-moved", "Metric or criterion module left on cpu while it is fed device tensors", "unsafe"),
    RuleInfo("DEV201", "factory-without-device", "Tensor created without device= is combined with a tensor on another device", "unsafe"),
    RuleInfo("DEV202", "input-not-moved", "Input tensor left on cpu is passed to a model on another device", "unsafe"),
    RuleInfo("DEV203", "loss-weight-on-cpu", "Loss weight tensor on cpu while the loss is computed on another device", "unsafe"),
    RuleInfo("DEV204", "index-on-wrong-device", "Tensor indexed by an index tensor on another device", "unsafe"),
    RuleInfo("DEV205", "generator-on-other-device", "A torch.Generator on one device draws a tensor on another device", "unsafe"),
    RuleInfo("DEV206", "packed-lengths-not-on-cpu", "pack_padded_sequence() is given lengths on an accelerator; they must be on the cpu", "unsafe"),
    RuleInfo("DEV207", "traced-module-on-other-device", "A torch.jit.trace'd module runs on another device than the one it was traced on, and its forward builds tensors", None),
    RuleInfo("DEV208", "collective-tensor-on-wrong-device", "A torch.distributed collective is given a tensor its process group's backend cannot communicate (a cpu tensor on NCCL)", None),
    RuleInfo("DEV209", "dataparallel-output-on-cpu", "A DataParallel module's forward returns a cpu tensor, which DataParallel cannot gather onto its output device", None),
    RuleInfo("DEV301", "load-without-map-location", "torch.load without map_location in code that may run without the checkpoint's GPU", "unsafe", "warning"),
    RuleInfo("DEV302", "optimizer-state-loaded-before-move", "optimizer.load_state_dict() before the model is moved leaves the optimizer state on cpu", "unsafe"),
    RuleInfo("DEV303", "map-location-on-load-state-dict", "map_location passed to load_state_dict() instead of torch.load()", "safe"),
    RuleInfo("DEV304", "optimizer-state-created-before-move", "Optimizer state created (in __init__, or by a first step()) before the model is moved", "unsafe"),
    RuleInfo("DEV401", "fused-optimizer-resume", "Fused/foreach optimizer resumed from a checkpoint with its step state on the wrong device", "unsafe"),
    RuleInfo("DEV402", "gradscaler-state-not-restored", "GradScaler state is not saved with the checkpoint or not restored on resume", "unsafe", "warning"),
    RuleInfo("DEV501", "move-dispatched-model", "`.to()`/`.cuda()` on a model dispatched with device_map", "unsafe"),
    RuleInfo("DEV502", "inputs-on-wrong-device-for-device-map", "Inputs left on cpu (or on a fixed device) for a model dispatched with device_map", "unsafe", "warning"),
    RuleInfo("DEV503", "device-map-auto-with-peft-training", "device_map=\"auto\" model parallelism combined with PEFT/QLoRA training", "unsafe", "warning"),
    RuleInfo("DEV601", "default-device-leak", "A global default device / tensor type, or a library default device, mismatches the model", "unsafe"),
    RuleInfo("DEV602", "conversion-after-move", "SyncBatchNorm / DataParallel conversion applied after the model was moved", "unsafe"),
]

RULES: dict[str, RuleInfo] = {r.code: r for r in _RULES}

# Found by `devflow dryrun` while the script runs with CUDA emulated, not by the static engine:
# they have no checker in ALL_RULES, and the dry run attaches the static rule's fix when one
# explains the same line.
_DYNAMIC = [
    RuleInfo("DEV901", "cross-device-op", "An op received tensors on different devices (CUDA's \"Expected all tensors to be on the same device\")", None),
    RuleInfo("DEV902", "cpu-tensor-device-index", "A cpu tensor was indexed by an index tensor on a device", None),
    RuleInfo("DEV903", "wrapper-device-check", "DataParallel / DistributedDataParallel / RNN device check failed", None),
    RuleInfo("DEV904", "generator-device", "A random generator on another device than the tensor it fills", None),
    RuleInfo("DEV905", "cuda-tensor-to-numpy", "A cuda tensor was converted to numpy without .cpu()", None),
    RuleInfo("DEV906", "checkpoint-needs-cuda", "A checkpoint saved on cuda was loaded without map_location (fails on a machine without CUDA)", None),
    RuleInfo("DEV907", "device-error-raised", "The run stopped at a device error raised by library code", None),
    RuleInfo("DEV908", "pin-device-tensor", "pin_memory() of a tensor already on a device (a DataLoader with pin_memory=True over cuda tensors)", None),
    RuleInfo("DEV909", "cuda-in-forked-worker", "CUDA used in a forked DataLoader worker after the parent initialised CUDA", None),
    RuleInfo("DEV910", "dataparallel-moved-only-on-one-gpu", "DataParallel over every GPU moved its module itself because there is one GPU; with 2 or more its forward fails", None, "warning"),
    RuleInfo("DEV911", "host-argument-on-device", "An argument CUDA reads on the host (pack_padded_sequence's lengths, an RNG state) is on a device", None),
]

DYNAMIC_RULES: dict[str, RuleInfo] = {r.code: r for r in _DYNAMIC}
