"""Recognise PyTorch cross-device error and warning texts.

Standard library only: this module is injected into debuggees by source (see dap_expression.py).
`parse_message(text)` returns a dict (family, devices, argument, op, ...) or None when the text is
not a device-placement message.  Covers every wording in ../shared/corpus/error_messages.txt,
from torch 0.1 ("tensors are on different GPUs") to the 2025 "but got weight is on cpu" form.
"""

from __future__ import annotations

import re

_DEV = r"(?:cpu|CPU|cuda(?::\d+)?|CUDA(?::\d+)?|meta|mps|xpu(?::\d+)?|hpu(?::\d+)?|privateuseone(?::\d+)?|[a-z_]+:\d+)"

# Legacy tensor type names ("torch.cuda.FloatTensor") and backend names ("CUDA", "GPU").
_TYPE_RE = re.compile(r"torch\.(?:(cuda|xpu|mps)\.)?[A-Za-z]+Tensor")


def normalize_device(text: str | None) -> str | None:
    """'CPU' -> 'cpu', 'GPU'/'CUDA' -> 'cuda', 'torch.cuda.FloatTensor' -> 'cuda', 'cuda:0' stays."""
    if text is None:
        return None
    t = text.strip().strip("'\"")
    m = _TYPE_RE.fullmatch(t)
    if m:
        return m.group(1) or "cpu"
    low = t.lower()
    if low == "gpu":
        return "cuda"
    return low


# (family, regex, role of each named group).  Order matters: specific forms first.
# Named groups: d1/d2 = devices (d1 found / d2 expected where the wording says so),
# arg = argument, op = kernel / method, t1/t2 = legacy tensor types.
_FAMILIES: list[tuple[str, str, str]] = [
    ("same-device-named",
     r"Expected all tensors to be on the same device, but got (?P<arg>\w+) is on (?P<d1>\S+?), "
     r"different from other tensors on (?P<d2>\S+?)(?:\s*\(when checking argument in method (?P<op>\w+)\)|[\s.!]*$)",
     "found-expected"),
    ("same-device",
     r"Expected all tensors to be on the same device, but found at least two devices\w*,?\s*"
     r"(?P<d1>\S+?) and (?P<d2>[^\s!]+?)!\s*"
     r"(?:\(when checking (?:argument|arugment)(?: for argument)? (?P<arg>\w+) in method (?P<op>\w+))?",
     "pair"),
    ("meta-expected-device",
     r"Tensor on device (?P<d1>\S+) is not on the expected device (?P<d2>[^\s!]+?)!",
     "found-expected"),
    ("conv-input-weight-type",
     r"Input type \((?P<t1>[\w.]+)\) and weight type \((?P<t2>[\w.]+)\) should be the same",
     "input-weight"),
    ("checkargs-device",
     r"Tensor for argument #\d+ '(?P<arg>\w+)' is on (?P<d1>\w+), but expected it to be on (?P<d2>\w+)"
     r"(?: \(while checking arguments for (?P<op>\w+)\))?",
     "found-expected"),
    ("expected-object-device-type",
     r"Expected object of device type (?P<d2>\w+) but got device type (?P<d1>\w+) for argument #\d+ "
     r"'(?P<arg>\w+)'(?: in call to (?P<op>\w+))?",
     "found-expected"),
    ("expected-object-backend",
     r"Expected object of backend (?P<d2>\w+) but got backend (?P<d1>\w+) for argument #\d+ '(?P<arg>\w+)'",
     "found-expected"),
    ("expected-type",
     r"expected type (?P<t2>torch\.[\w.]*Tensor) but got (?P<t1>torch\.[\w.]*Tensor)",
     "type-found-expected"),
    ("different-gpus", r"(?:tensors|arguments) are (?:located )?on different GPUs", "none"),
    ("invalid-combination",
     r"(?P<op>\w{1,100}) received an invalid combination of arguments - got \((?P<got>.*?)\)(?:, but expected (?P<exp>.*))?$",
     "combination"),
    ("index-device",
     r"indices should be either on (?P<d1>\w+) or on the same device as the indexed tensor \((?P<d2>[^)]+)\)",
     "index"),
    ("cat-devices",
     r"All input tensors must be on the same device\. Received (?P<d1>\S+) and (?P<d2>[^\s.!]+)",
     "pair"),
    ("dataparallel-module-device",
     r"module must have its parameters and buffers on device (?P<d2>\S+) \(device_ids\[0\]\) but found "
     r"one of them on device: (?P<d1>[^\s.!]+)",
     "found-expected"),
    ("ddp-device-ids",
     r"DistributedDataParallel device_ids and output_device arguments only work with (?P<rest>.*)",
     "ddp"),
    ("deserialize-cuda",
     r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False",
     "deserialize"),
    ("generator-device",
     r"Expected a '(?P<d2>[\w:]+)' (?:device type for generator|generator device) but found '(?P<d1>[\w:]+)'",
     "found-expected"),
    ("randperm-cpu", r"randperm is only implemented for CPU", "none"),
    ("fake-tensor-propagation",
     r"Unhandled FakeTensor Device Propagation for (?P<op>[\w.]+), found two different devices (?P<d1>\w+(?::\d+)?), (?P<d2>\w+(?::\d+)?)",
     "pair"),
    ("meta-copy", r"Cannot copy out of meta tensor; no data!", "meta-copy"),
    ("accelerate-offload-move", r"You can't move a model that has some modules offloaded to cpu or disk", "none"),
    ("bnb-dispatch-cpu", r"Some modules are dispatched on the CPU or the disk", "none"),
    ("state-steps-device",
     r"If capturable=(?:False|True), (?:params and )?state_steps (?:should not be|must be) CUDA tensors",
     "state-steps"),
    ("fused-optimizer-device",
     r"params, grads, exp_avgs, and exp_avg_sqs must have same dtype, device, and layout",
     "none"),
    ("metric-devices", r"Encountered different devices in metric calculation", "none"),
    ("expected-cuda-device", r"Expected a (?P<d2>cuda) device, but got: (?P<d1>\w+)", "found-expected"),
    ("numpy-cuda",
     r"can't convert (?P<d1>cuda(?::\d+)?|CUDA)(?: device type)? tensor to numpy", "numpy"),
    ("generate-input-ids-device",
     r"calling \.generate\(\) with the `input_ids` being on a device type different than your model's "
     r"device\. `input_ids` is on (?P<d1>\w+), whereas the model is on (?P<d2>\w+)",
     "found-expected"),
    ("rnn-hidden-device",
     r"Input and hidden tensors are not at the same device, found input tensor at (?P<d2>\S+) and "
     r"hidden tensor at (?P<d1>[^\s.!]+)",
     "found-expected"),
    ("invalid-gradient-device",
     r"Function (?P<op>\w+) returned an invalid gradient at index (?P<arg>\d+) - expected device "
     r"(?P<d2>\S+) but got (?P<d1>[^\s.!]+)",
     "found-expected"),
]

_COMPILED = [(fam, re.compile(rx), role) for fam, rx, role in _FAMILIES]
_META_CHECK = re.compile(r"\[meta-check: (?P<op>[\w.]+)\]")
_DDP_DEVICES = re.compile(r"device\(type='(\w+)'(?:, index=(\d+))?\)")
_EXC_PREFIX = re.compile(r"^\s*(?:[\w.]{1,200}\.)?(?P<exc>\w{0,100}(?:Error|Exception|Warning))\s*:\s*")

_HINTS = {
    "deserialize-cuda": "pass map_location=... to torch.load (e.g. map_location='cpu' or the training device)",
    "meta-copy": "weights were never materialised (meta/offloaded); load them or use Module.to_empty()",
    "accelerate-offload-move": "a model dispatched with device_map cannot be moved with .to(); drop the .to() call",
    "bnb-dispatch-cpu": "the quantized model does not fit on the GPU; adjust device_map or enable fp32 CPU offload",
    "state-steps-device": "optimizer 'step' state is on the wrong device after load_state_dict (capturable/fused mismatch)",
    "fused-optimizer-device": "fused optimizer: params, grads and state must share a device; move the optimizer state",
    "metric-devices": "move the metric object to the input's device (metric.to(device))",
    "numpy-cuda": "call .cpu() before converting the tensor to numpy",
    "randperm-cpu": "a CUDA default tensor type with a CPU-only op (DataLoader shuffle); pass a generator/device",
    "generator-device": "the torch.Generator's device does not match the default/target device",
    "different-gpus": "tensors on two different GPUs",
    "ddp-device-ids": "DDP device_ids must match the module's parameters' device; move the module before wrapping it",
}


def _split_exc_type(text: str) -> tuple[str | None, str]:
    m = _EXC_PREFIX.match(text)
    if m:
        return m.group("exc"), text[m.end():]
    return None, text


def parse_message(text: str, exc_type: str | None = None) -> dict | None:
    """Parse one error/warning text; None when it is not a cross-device message."""
    if not text:
        return None
    # Device messages are short; bounding the input bounds the regex work on huge texts.
    first = str(text).strip()[:20000]
    prefix_type, body = _split_exc_type(first)
    exc_type = exc_type or prefix_type
    for family, rx, role in _COMPILED:
        m = rx.search(body)
        if m:
            return _build(family, role, m, body, exc_type)
    m = _META_CHECK.search(body)
    if m:
        return {"family": "meta-check", "exc_type": exc_type, "devices": [], "found_device": None,
                "expected_device": None, "argument": None, "op": m.group("op"), "kind": "error",
                "hint": None, "message": body.strip()[:2000]}
    return None


def _build(family: str, role: str, m: re.Match, body: str, exc_type: str | None) -> dict:
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    found = expected = None
    devices: list[str] = []
    if role in ("found-expected", "index"):
        found, expected = normalize_device(g.get("d1")), normalize_device(g.get("d2"))
        if role == "index":
            # "indices ... on cpu or ... the indexed tensor (cpu)": the indexed tensor's device is
            # the odd one (a cpu tensor indexed by accelerator indices).
            found, expected = normalize_device(g.get("d2")), None
        devices = [d for d in (found, expected) if d]
    elif role == "pair":
        devices = [normalize_device(g["d1"]), normalize_device(g["d2"])]
    elif role == "input-weight":
        inp, wt = normalize_device(g["t1"]), normalize_device(g["t2"])
        devices = [inp, wt]
        found, expected = wt, inp  # the input decides; report the weight as the odd one
        g.setdefault("arg", "weight")
    elif role == "type-found-expected":
        found, expected = normalize_device(g["t1"]), normalize_device(g["t2"])
        devices = [found, expected]
    elif role == "combination":
        types = [normalize_device(t.group(0)) for t in _TYPE_RE.finditer(body)]
        uniq = list(dict.fromkeys(types))
        if len(uniq) < 2:
            return None  # an ordinary argument-type error, not a device mix
        devices = uniq
    elif role == "ddp":
        devices = []
        for dtype, idx in _DDP_DEVICES.findall(g.get("rest", "")):
            devices.append(dtype if idx == "" else f"{dtype}:{idx}")
        ids = re.search(r"device_ids \[?([\d, ]+)\]?", g.get("rest", ""))
        if ids:
            expected = "cuda:" + ids.group(1).split(",")[0].strip()
            if expected not in devices:
                devices.append(expected)
        odd = [d for d in devices if d != expected]
        found = odd[0] if odd else None
    elif role == "deserialize":
        devices, found, expected = ["cuda", "cpu"], "cuda", "cpu"
    elif role == "meta-copy":
        devices, found = ["meta"], "meta"
    elif role == "state-steps":
        devices = ["cuda", "cpu"]
    elif role == "numpy":
        found = normalize_device(g.get("d1"))
        devices, expected = [found, "cpu"], "cpu"
    op = g.get("op")
    mc = _META_CHECK.search(body)
    if mc and not op:
        op = mc.group("op")
    kind = "warning" if family == "generate-input-ids-device" or (exc_type or "").endswith("Warning") else "error"
    return {
        "family": family,
        "exc_type": exc_type,
        "devices": [d for d in devices if d],
        "found_device": found,
        "expected_device": expected,
        "argument": g.get("arg"),
        "op": op,
        "kind": kind,
        "hint": _HINTS.get(family),
        "message": body.strip()[:2000],
    }


def is_device_error(text: str, exc_type: str | None = None) -> bool:
    return parse_message(text, exc_type) is not None
