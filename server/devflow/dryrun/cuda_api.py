"""The virtual accelerator: `torch.cuda` answers as a machine with --gpus devices, and every way a
program puts a tensor on a device (factories with device=, Tensor.to / .cuda / .cpu, torch.tensor,
the default device, Generator) yields a VirtualTensor on that virtual device."""

from __future__ import annotations

import contextlib
import sys
import types

import torch

from devflow.dryrun import generators, recorder
from devflow.dryrun.dispatch import Settings, virtual_device
from devflow.dryrun.vtensor import CPU, VirtualTensor, real, type_name, vdevice

_state = {"current": 0}


def current_device() -> int:
    return _state["current"]


def _check_ordinal(dev: torch.device):
    if dev.type == "cuda" and dev.index is not None and not 0 <= dev.index < Settings.devices:
        raise RuntimeError("CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously "
                           "reported at some other API call, so the stacktrace below might be incorrect.")


def _check_rng_states(states) -> None:
    """torch.cuda.set_rng_state(_all): the virtual GPU draws from the cpu generator, so the states
    are only checked as CUDA's generators check them (cpu ByteTensors)."""
    for state in states:
        generators.rng_state(state)


def _set_device(device):
    idx = device if isinstance(device, int) else torch.device(device).index
    if idx is None:
        return
    _check_ordinal(torch.device("cuda", idx))
    _state["current"] = idx


class _DeviceContext:
    """torch.cuda.device(i): a context that makes i the current device."""

    def __init__(self, device):
        self.idx = device if isinstance(device, int) or device is None else torch.device(device).index

    def __enter__(self):
        self.prev = _state["current"]
        if self.idx is not None and self.idx >= 0:
            _set_device(self.idx)

    def __exit__(self, *exc):
        _state["current"] = self.prev
        return False


class _Event:
    def __init__(self, *a, **k):
        import time
        self._time = time.perf_counter
        self.t = None

    def record(self, stream=None):
        self.t = self._time()

    def synchronize(self):
        pass

    def query(self):
        return True

    def wait(self, stream=None):
        pass

    def elapsed_time(self, other):
        return ((other.t or 0.0) - (self.t or 0.0)) * 1000.0


class _Stream:
    def __init__(self, *a, **k):
        self.device = torch.device("cuda", current_device())

    def synchronize(self):
        pass

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record()
        return event

    def query(self):
        return True

    def is_capturing(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# Whether the program itself asked if CUDA is there: a program written to run without CUDA too.
asked = {"availability": False}


def _note_asked():
    if asked["availability"]:
        return
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    if f is not None and recorder.is_user_file(f.f_code.co_filename):
        asked["availability"] = True


def _is_available():
    _note_asked()
    return True


def _device_count():
    _note_asked()
    return Settings.devices


def _properties(device=None):
    return types.SimpleNamespace(name="devflow virtual GPU", total_memory=80 * 2**30, major=9, minor=0,
                                 multi_processor_count=132, is_integrated=False, is_multi_gpu_board=False)


def _distinct(fn, name):
    def patched(*args, **kwargs):
        return fn(*args, **kwargs)

    patched.__name__ = patched.__qualname__ = name
    return patched


def install_cuda_module():
    c = torch.cuda
    zero = lambda *a, **k: 0  # noqa: E731
    none = lambda *a, **k: None  # noqa: E731
    patches = {
        "is_available": _is_available, "device_count": _device_count, "_lazy_init": none,
        "init": none, "is_initialized": lambda: True, "current_device": current_device,
        "set_device": _set_device, "device": _DeviceContext, "get_device_name": lambda d=None: "devflow virtual GPU",
        "get_device_properties": _properties, "get_device_capability": lambda d=None: (9, 0),
        "synchronize": none, "empty_cache": none, "ipc_collect": none, "memory_allocated": zero,
        "max_memory_allocated": zero, "memory_reserved": zero, "max_memory_reserved": zero,
        "reset_peak_memory_stats": none, "reset_max_memory_allocated": none, "memory_summary": lambda *a, **k: "",
        "mem_get_info": lambda d=None: (80 * 2**30, 80 * 2**30), "is_bf16_supported": lambda *a, **k: True,
        # the virtual GPU draws from the cpu generator, which torch.manual_seed seeds
        "manual_seed": none, "manual_seed_all": none,
        "seed": none, "seed_all": none, "get_rng_state": lambda d="cuda": torch.get_rng_state(),
        "set_rng_state": lambda s, d="cuda": _check_rng_states([s]),
        "get_rng_state_all": lambda: [torch.get_rng_state()],
        "set_rng_state_all": _check_rng_states, "Event": _Event, "Stream": _Stream,
        "current_stream": lambda d=None: _Stream(), "default_stream": lambda d=None: _Stream(),
        "stream": lambda s=None: contextlib.nullcontext(), "get_arch_list": lambda: ["sm_90"],
        "is_current_stream_capturing": lambda: False, "initial_seed": lambda: torch.initial_seed(),
        "reset_max_memory_cached": none, "reset_accumulated_memory_stats": none,
        "reset_accumulated_host_memory_stats": none, "reset_peak_host_memory_stats": none,
        "get_per_process_memory_fraction": lambda d=None: 1.0, "set_per_process_memory_fraction": none,
        "memory_snapshot": lambda *a, **k: [], "get_sync_debug_mode": zero, "set_sync_debug_mode": none,
        "get_allocator_backend": lambda: "native",
        # NVML readings: an idle GPU
        "utilization": zero, "temperature": zero, "power_draw": zero, "clock_rate": zero,
        "device_memory_used": zero, "memory_usage": zero,
    }
    for name, fn in patches.items():
        # One function object per name: torch._dynamo maps torch functions by identity and
        # rejects one object under two names.
        setattr(c, name, fn if isinstance(fn, type) else _distinct(fn, name))
    torch.backends.cudnn.is_available = lambda: True
    # Code that checks through the accelerator API sees the same device.
    acc = getattr(torch, "accelerator", None)
    if acc is not None:
        for name, fn in (("is_available", lambda: True), ("device_count", lambda: Settings.devices),
                         ("current_accelerator", lambda check_available=False: torch.device("cuda")),
                         ("current_device_index", current_device), ("set_device_index", _set_device),
                         ("synchronize", lambda d=None: None), ("current_stream", lambda d=None: _Stream()),
                         ("device_index", _DeviceContext)):
            if hasattr(acc, name):
                setattr(acc, name, fn)


# -- moves ----------------------------------------------------------------------------------------

class _Move(torch.autograd.Function):
    """A copy to another virtual device that autograd can go back through (the gradient returns
    to the source device, as on CUDA)."""

    @staticmethod
    def forward(ctx, x, vdev, dtype, origin):
        ctx.src, ctx.src_dtype = vdevice(x), x.dtype
        out = _orig["to"](x, dtype=dtype or x.dtype, copy=True)
        if not isinstance(out, VirtualTensor):
            out = VirtualTensor(out, vdev, origin)
        if vdev.type == "cuda" and Settings.meta_above is not None \
                and out.elem.numel() * out.elem.element_size() > Settings.meta_above:
            with torch.utils._python_dispatch._disable_current_modes():  # the data itself, not a wrapper
                out.elem = out.elem.to("meta")
        out.vdev, out.origin = vdev, origin
        return out

    @staticmethod
    def backward(ctx, grad):
        back = _orig["to"](grad, dtype=ctx.src_dtype, copy=True)
        if isinstance(back, VirtualTensor):
            back.vdev = ctx.src
        return back, None, None, None


def move(t, vdev: torch.device, dtype=None, copy=False):
    _check_ordinal(vdev)
    if vdevice(t) == vdev and not copy and (dtype is None or dtype == t.dtype):
        return t
    if vdev.type == "cpu" and vdevice(t).type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    origin = recorder.here("moved")
    if origin is not None:
        origin = origin[:3] + (getattr(t, "origin", None),) + origin[4:]
    else:
        origin = getattr(t, "origin", None)
    if not isinstance(t, VirtualTensor):
        t = VirtualTensor(t, CPU, None) if not t.requires_grad else t
    return _Move.apply(t, vdev, dtype, origin)


_orig = {}


def _to(self, *args, **kwargs):
    if args and isinstance(args[0], torch.Tensor):
        other = args[0]
        return move(self, vdevice(other), other.dtype, kwargs.get("copy", False))
    copy = kwargs.pop("copy", False)
    device, dtype, _non_blocking, _fmt = torch._C._nn._parse_to(*args, **kwargs)
    if device is None:
        return _orig["to"](self, *args, copy=copy, **kwargs)
    return move(self, virtual_device(device), dtype, copy or (len(args) > 3 and args[3] is True))


def _cuda(self, device=None, non_blocking=False, memory_format=None):
    if isinstance(device, int):
        dev = virtual_device(torch.device("cuda", device))
    elif device is None:
        dev = virtual_device(torch.device("cuda", current_device()))
    else:
        dev = virtual_device(device)
    return move(self, dev)


def _type_as(self, other):
    # C++'s type_as is self.to(other.options()): other's real device, the cpu, would keep self there
    return move(self, vdevice(other), other.dtype)


def _cpu(self, memory_format=None):
    return move(self, CPU)


def _default_vdevice():
    # torch.get_default_device() itself calls torch.tensor([]) for an index-less device: read the
    # DeviceContext (set_default_device, `with torch.device(...)`) directly.
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._device import DeviceContext

    for mode in reversed(_get_current_function_mode_stack()):
        if isinstance(mode, DeviceContext):
            d = torch.device(mode.device)
            return virtual_device(d) if d.type != "cpu" else CPU
    return CPU


def _created(t):
    if isinstance(t, VirtualTensor):
        t.origin = recorder.here("created") or t.origin
        return t
    return VirtualTensor(t, CPU, recorder.here("created"))


def _tensor(data, *args, dtype=None, device=None, requires_grad=False, pin_memory=False):
    vdev = virtual_device(device) if device is not None else _default_vdevice()
    t = _orig["tensor"](_host_values(data), *args, dtype=dtype, device="cpu")
    t = _created(t)
    if vdev != CPU:
        t = move(t, vdev)
        t.origin = recorder.here("created")
    if requires_grad:
        t.requires_grad_(True)
    return t


def _host_values(data):
    """torch.tensor([t0, t1, ...]) of 0-dim tensors reads each one's value from memory (GPU tensors
    too, into a cpu result): the wrappers' real data."""
    if isinstance(data, (list, tuple)) and any(isinstance(v, (VirtualTensor, list, tuple)) for v in data):
        return [v.elem if isinstance(v, VirtualTensor) else _host_values(v) for v in data]
    return data


def _as_tensor(data, dtype=None, device=None):
    if isinstance(data, torch.Tensor):
        vdev = virtual_device(device) if device is not None else vdevice(data)
        return move(data, vdev, dtype)
    return _tensor(data, dtype=dtype, device=device)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False, **kwargs):
    return _tensor(data, dtype=dtype or self.dtype, device=device if device is not None else vdevice(self),
                   requires_grad=requires_grad)


def _from_numpy(arr):
    return _created(_orig["from_numpy"](arr))


def _pin_memory(self, device=None):
    """Pinning copies a cpu tensor into page-locked memory; CUDA refuses a tensor already on a GPU.
    The mix is recorded (at the DataLoader that pins, when one does) and the tensor goes on unpinned,
    as after the fix."""
    if not isinstance(self, VirtualTensor):
        return self
    if self.vdev.type != "cpu":
        from devflow.dryrun import wrappers
        recorder.record_error(
            "DEV908", f"cannot pin '{type_name(self.dtype, self.vdev)}' only dense CPU tensors can be pinned",
            "pin_memory", [self], frames=wrappers.pinning_loader_frames(sys._getframe(1)))
        return self
    out = VirtualTensor(self.elem.clone(), CPU, self.origin)  # a copy, as pinning makes one
    out.requires_grad_(self.requires_grad)
    out._pinned = True
    return out


def _is_pinned(self, device=None):
    return getattr(self, "_pinned", False)


def _set_default_tensor_type(t):
    name = t if isinstance(t, str) else getattr(t, "__module__", "") + "." + getattr(t, "__name__", "")
    if ".cuda." in name or name.startswith("torch.cuda"):
        _orig["set_default_tensor_type"](name.replace(".cuda.", ".").replace("torch.cuda", "torch"))
        _set_default_device("cuda")
        return
    _set_default_device("cpu")
    _orig["set_default_tensor_type"](t)


def _set_default_device(device):
    _orig["set_default_device"](device)
    generators.note_default_device(virtual_device(device) if device is not None else CPU)


def _parse_to(*args, **kwargs):
    """torch._C._nn._parse_to (Module.to's argument parser): `to(tensor)` takes the tensor's
    virtual device, not the cpu its data is on."""
    out = _orig["parse_to"](*args, **kwargs)
    other = args[0] if args and isinstance(args[0], torch.Tensor) else kwargs.get("tensor")
    if isinstance(other, VirtualTensor):
        return (other.vdev,) + tuple(out[1:])
    return out


def install_moves():
    T = torch.Tensor
    _orig["parse_to"] = torch._C._nn._parse_to
    torch._C._nn._parse_to = _parse_to
    _orig.update(to=T.to, tensor=torch.tensor, as_tensor=torch.as_tensor, from_numpy=torch.from_numpy,
                 set_default_tensor_type=torch.set_default_tensor_type, set_default_device=torch.set_default_device)
    T.to, T.cuda, T.cpu, T.new_tensor, T.type_as = _to, _cuda, _cpu, _new_tensor, _type_as
    T.pin_memory = _pin_memory
    T.is_pinned = _is_pinned
    torch.tensor, torch.as_tensor, torch.from_numpy = _tensor, _as_tensor, _from_numpy
    torch.Generator = generators.VirtualGenerator
    torch.set_rng_state = torch.random.set_rng_state = generators.set_rng_state
    torch.set_default_tensor_type = _set_default_tensor_type
    torch.set_default_device = _set_default_device
    torch.cuda.default_generators = generators.default_generators(Settings.devices)


# -- AMP --------------------------------------------------------------------------------------------

def install_autocast():
    """autocast("cuda") runs as cpu autocast (float16 by default, as on CUDA): the same ops change
    dtype; the data is on the cpu."""
    from torch.amp import autocast_mode

    cls = autocast_mode.autocast
    orig_init = cls.__init__

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if device_type == "cuda":
            device_type = "cpu"
            dtype = dtype or torch.float16
        orig_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    cls.__init__ = __init__
    orig_enabled = torch.is_autocast_enabled

    def is_autocast_enabled(device_type=None):
        if device_type == "cuda":
            return orig_enabled("cpu")
        return orig_enabled() if device_type is None else orig_enabled(device_type)

    torch.is_autocast_enabled = is_autocast_enabled
