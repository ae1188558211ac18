"""The aten-level hook. Every op on a VirtualTensor (and, through DeviceMode, every factory) comes
here: CUDA's device rules are checked on the virtual devices, a mix is recorded, and the op runs on
the real cpu data as CUDA would after the fix (operands on the majority device)."""

from __future__ import annotations

import os
import sys
import threading

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from devflow.dryrun import devrules, host_readers, recorder, rnn_checks
from devflow.dryrun.vtensor import CPU, VirtualTensor, vdevice

aten = torch.ops.aten
META = torch.device("meta")


class Settings:
    meta_above: int | None = None   # bytes: factories larger than this keep meta data
    devices: int = 1
    used_cuda = False               # the program put a tensor on a cuda device (see wrappers.flush)
    forked_after_cuda = False       # this process is a fork of one that had initialised CUDA


# CUDA is initialised lazily, by the first tensor put on a GPU; a process forked after that (a
# DataLoader worker under the default start method) cannot use CUDA at all.
REINIT = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the "
          "'spawn' start method")
INHERITED = ("CUDA error: initialization error (a cuda tensor of the parent process used in a forked subprocess; "
             "to use CUDA with multiprocessing, you must use the 'spawn' start method)")


def _after_fork_in_child():
    Settings.forked_after_cuda = Settings.used_cuda


os.register_at_fork(after_in_child=_after_fork_in_child)


_REINIT_LINES: set = set()


def _cuda_in_bad_fork(message: str, tensors=()):
    frames = recorder.user_frames(frame=sys._getframe(2))
    line = frames[0][:2] if frames else None
    if message is REINIT:
        _REINIT_LINES.add(line)
    elif line in _REINIT_LINES:
        return  # an op on the tensor this line just failed to put on the GPU: the same failure
    recorder.record_error("DEV909", message, "RuntimeError", list(tensors), frames=frames)


def virtual_device(dev) -> torch.device:
    """'cuda' -> cuda:<current>; a device string or object -> torch.device."""
    d = torch.device(dev) if not isinstance(dev, torch.device) else dev
    if d.type == "cuda":
        if Settings.forked_after_cuda:
            _cuda_in_bad_fork(REINIT)
        Settings.used_cuda = True
    if d.type == "cuda" and d.index is None:
        from devflow.dryrun.cuda_api import current_device
        return torch.device("cuda", current_device())
    return d


def _storage_device(vdev: torch.device, nbytes: int) -> torch.device:
    if vdev.type == "meta":
        return META
    if Settings.meta_above is not None and nbytes > Settings.meta_above:
        return META
    return CPU


_MIXED = object()


def _one_device(args, kwargs):
    """The virtual device all tensor operands share; None without tensor operands; _MIXED when
    they differ (then the full rule check runs)."""
    dev = None
    for group in (args, kwargs.values()):
        for x in group:
            if isinstance(x, torch.Tensor):
                d = x.vdev if isinstance(x, VirtualTensor) else x.device
                if dev is None:
                    dev = d
                elif d != dev:
                    return _MIXED
            elif isinstance(x, (list, tuple)):
                for v in x:
                    if isinstance(v, torch.Tensor):
                        d = v.vdev if isinstance(v, VirtualTensor) else v.device
                        if dev is None:
                            dev = d
                        elif d != dev:
                            return _MIXED
    return dev


def run_op(func, args, kwargs):
    if Settings.forked_after_cuda:
        inherited = [x for x in args if isinstance(x, VirtualTensor) and x.vdev.type == "cuda"]
        if inherited:
            _cuda_in_bad_fork(INHERITED, inherited[:1])
    if "device" not in kwargs and "generator" not in kwargs and func not in devrules.HOST_ARGUMENTS:
        # Most ops: every operand on one device, nothing to check; the result stays there.
        dev = _one_device(args, kwargs)
        if dev is not None and dev is not _MIXED:
            return _run_on(func, args, kwargs, dev)
    ops = devrules.operands(func, args, kwargs, vdevice)
    target = None
    mix = devrules.check(func, ops)
    if mix is not None:
        # In backward, a mix is the echo of the forward mix that saved these tensors: the forward
        # one is reported, and after its fix the backward one would not happen.
        if torch._C._current_graph_task_id() == -1:
            recorder.record_mix(func, mix)
        target = mix.device
    gen = kwargs.get("generator")
    if gen is not None:
        _check_generator(gen, kwargs.get("device"), ops)
    dev_kw = kwargs.get("device")
    if dev_kw is not None and func is aten._to_copy.default and torch.device(dev_kw).type != "cuda":
        # Moves from Python go through cuda_api.move and never reach aten with a device; a
        # _to_copy with device=cpu comes from C++ (autograd's ToCopyBackward, type_as), which
        # knows only the wrapper's real device: the virtual one stays.
        kwargs = dict(kwargs)
        kwargs.pop("device")
        dev_kw = None
    if dev_kw is not None and torch.device(dev_kw).type == "cpu" and _ambient.stack and not _has_tensor(args):
        # C++ composites (one_hot, losses) allocate with the options of their input, whose real
        # device is the cpu: inside a torch call on virtual-cuda tensors, that means the input's device.
        dev_kw = _ambient.stack[-1]
    elif dev_kw is not None and ops and torch.device(dev_kw).type == "cpu" and \
            (_ambient.stack or torch._C._current_graph_task_id() != -1):
        # a tensor built from tensors in C++ with their options (embedding's sparse gradient in
        # backward, from its indices and values): their real device is the cpu, their virtual one counts
        dev_kw = devrules.result_device(ops)
    if dev_kw is not None:
        target = virtual_device(dev_kw)
    elif target is None:
        target = devrules.result_device(ops) if ops else CPU

    real_args, real_kwargs, on_meta = _unwrap(args, kwargs)
    if dev_kw is not None:
        real_kwargs["device"] = META if on_meta or target.type == "meta" else CPU
    if func is aten._local_scalar_dense.default and on_meta:
        return _meta_scalar(real_args[0])
    out = func(*real_args, **real_kwargs)
    if dev_kw is not None and Settings.meta_above is not None and isinstance(out, torch.Tensor) \
            and out.device.type == "cpu" and out.numel() * out.element_size() > Settings.meta_above:
        out = out.to(META)
    origin = _origin_of(ops, target, func, dev_kw is not None)
    if _changes_shape(func):
        _refresh(args[0])
    result = _wrap(out, target, origin, args, func)
    host = devrules.HOST_RESULTS.get(func)
    return result if host is None else _on_host(result, host)


def _on_host(results: tuple, indices: tuple) -> tuple:
    """The results a CUDA kernel returns on the cpu whatever the op's device, as plain cpu tensors: C++
    code reads their values straight from memory (a PackedSequence's batch sizes, in the RNN kernels
    and in backward), which a VirtualTensor wrapper does not have."""
    return type(results)(r.elem if i in indices else r for i, r in enumerate(results))


def _run_on(func, args, kwargs, target):
    """run_op for an op whose operands are all on `target` (no device=, no generator)."""
    real_args, real_kwargs, on_meta = _unwrap(args, kwargs)
    if func is aten._local_scalar_dense.default and on_meta:
        return _meta_scalar(real_args[0])
    out = func(*real_args, **real_kwargs)
    if _changes_shape(func):
        _refresh(args[0])
    return _wrap(out, target, _first_origin(args, kwargs), args, func)


def _first_origin(args, kwargs):
    for group in (args, kwargs.values()):
        for x in group:
            if isinstance(x, VirtualTensor):
                if x.origin is not None:
                    return x.origin
            elif isinstance(x, (list, tuple)):
                for v in x:
                    if isinstance(v, VirtualTensor) and v.origin is not None:
                        return v.origin
    return None


_SHAPE_CHANGING: dict = {}


def _changes_shape(func) -> bool:
    hit = _SHAPE_CHANGING.get(func)
    if hit is None:
        hit = _SHAPE_CHANGING[func] = func in _RESIZING or torch.Tag.inplace_view in func.tags
    return hit


_RESIZING = {aten.set_.source_Storage, aten.set_.source_Storage_storage_offset, aten.set_.source_Tensor,
             aten.resize_.default, aten.resize_as_.default, aten.set_.default}


def _refresh(t):
    """An op changed a wrapper's shape in place (t_, unsqueeze_, set_, resize_): the wrapper's own
    sizes are fixed at creation. Inside the op the dispatcher still holds the wrapper, so it cannot
    be swapped for a fresh one: restride the wrapper itself, below the Python and autograd keys (its
    storage is a placeholder sized at creation, which views of the same data fit). What does not fit
    (a resize_ to more elements) gets a fresh wrapper under the same Python object when it can."""
    if isinstance(t, VirtualTensor) and (t.shape != t.elem.shape or t.stride() != t.elem.stride()):
        e = t.elem
        try:
            with torch._C._DisableTorchDispatch(), torch._C._AutoDispatchBelowAutograd():
                torch._C.TensorBase.as_strided_(t, e.shape, e.stride(), e.storage_offset())
            return
        except RuntimeError:
            pass
        fresh = VirtualTensor(t.elem, t.vdev, t.origin)
        if getattr(t, "_is_param", False):
            fresh._is_param = True
        try:
            torch.utils.swap_tensors(t, fresh)
        except RuntimeError:
            pass


def _check_generator(gen, dev_kw, ops):
    from devflow.dryrun import generators

    want = virtual_device(dev_kw) if dev_kw is not None else devrules.result_device(ops) if ops else CPU
    generators.check(gen, want, ops)


def _unwrap(args, kwargs):
    on_meta = False

    def un(x):
        nonlocal on_meta
        if isinstance(x, VirtualTensor):
            if x.elem.device.type == "meta":
                on_meta = True
            return x.elem
        if isinstance(x, (list, tuple)) and x and any(isinstance(v, torch.Tensor) for v in x):
            return type(x)(un(v) for v in x) if not hasattr(x, "_fields") else type(x)(*[un(v) for v in x])
        return x

    real_args = [un(a) for a in args]
    real_kwargs = {k: un(v) for k, v in kwargs.items()}
    if on_meta:  # some operands are too large to hold: compute this op on meta
        real_args = [_to_meta(a) for a in real_args]
        real_kwargs = {k: _to_meta(v) for k, v in real_kwargs.items()}
    return real_args, real_kwargs, on_meta


def _to_meta(x):
    if isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() > 0:
        return x.to(META)
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], torch.Tensor):
        return type(x)(_to_meta(v) for v in x)
    return x


def _meta_scalar(t):
    # Data held on meta has no values: a neutral value keeps the script going (documented).
    if t.dtype == torch.bool:
        return False
    return 0.0 if t.dtype.is_floating_point or t.dtype.is_complex else 0


def _origin_of(ops, target, func, created):
    if created or not ops:
        return recorder.here("created")
    for o in ops:
        if o.device == target and isinstance(o.tensor, VirtualTensor) and o.tensor.origin is not None:
            return o.tensor.origin
    return None


def _wrap(out, vdev, origin, args, func=None):
    if isinstance(out, torch.Tensor) and not isinstance(out, VirtualTensor):
        for a in args:  # in-place and out= ops return their self: keep the program's object
            if isinstance(a, VirtualTensor) and a.elem is out:
                return a
        if _inference_mode() and func is not None and _is_view(func) and not out.is_inference():
            # a view of a normal tensor under inference_mode is a normal tensor (autograd then
            # shares its base's version counter, which an inference wrapper refuses)
            with torch.inference_mode(False):
                return VirtualTensor(out, vdev, origin)
        return VirtualTensor(out, vdev, origin)
    if isinstance(out, (list, tuple)):
        wrapped = [_wrap(o, vdev, origin, args, func) for o in out]
        return type(out)(wrapped) if not hasattr(out, "_fields") else type(out)(*wrapped)
    return out


_inference_mode = torch.is_inference_mode_enabled
_VIEWS: dict = {}


def _is_view(func) -> bool:
    hit = _VIEWS.get(func)
    if hit is None:
        rets = func._schema.returns
        hit = _VIEWS[func] = bool(rets) and rets[0].alias_info is not None and not rets[0].alias_info.is_write
    return hit


def _has_tensor(args) -> bool:
    return any(isinstance(a, torch.Tensor) for a in args)


class _Ambient(threading.local):
    def __init__(self):
        self.stack: list = []


_ambient = _Ambient()


def _first_device(args, kwargs):
    for group in (args, kwargs.values()):
        for a in group:
            if isinstance(a, VirtualTensor):
                if a.vdev.type != "cpu":
                    return a.vdev
            elif isinstance(a, (list, tuple)):
                for v in a:
                    if isinstance(v, VirtualTensor) and v.vdev.type != "cpu":
                        return v.vdev
    return None


from torch.utils._device import _device_constructors  # noqa: E402

_FACTORIES = _device_constructors()


def _ambient_torch_function(cls, func, types, args=(), kwargs=None):
    """VirtualTensor.__torch_function__: remembers, during each torch call from Python on virtual
    tensors, the virtual device of its tensor arguments (see run_op: allocations inside C++
    composites). A subclass hook runs only for calls that have a virtual tensor argument, which is
    cheaper than a mode that sees every call."""
    kwargs = kwargs or {}
    if func in host_readers.READERS:
        return host_readers.call(func, args, kwargs)
    if func in rnn_checks.CHECKED:
        args = rnn_checks.checked(args, kwargs)
    # A factory called from Python (torch.arange(n) with a 0-dim cuda n) allocates where its
    # device= says: only allocations inside other ops follow their inputs.
    dev = None if func in _FACTORIES else _first_device(args, kwargs)
    if dev is None:
        return _call_plain(func, types, args, kwargs)
    _ambient.stack.append(dev)
    try:
        return _call_plain(func, types, args, kwargs)
    finally:
        _ambient.stack.pop()


def call_on(tensor, func, *args):
    """Calls the torch function func as the hook would for a call on `tensor` (host_readers' own calls)."""
    _ambient.stack.append(vdevice(tensor))
    try:
        return _call_plain(func, (), args, {})
    finally:
        _ambient.stack.pop()


# calls func with subclasses' __torch_function__ off, in C (as torch.Tensor's own hook does)
_call_plain = torch._C._disabled_torch_function_impl


VirtualTensor.__torch_function__ = classmethod(_ambient_torch_function)


class DeviceMode(TorchDispatchMode):
    """Active for the whole run: factories (`torch.zeros(..., device="cuda")`) and ops on plain
    tensors go through run_op too, so every tensor carries a virtual device and an origin."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing is compiled under a dry run (torch.compile runs eagerly); wrapping the hook in
        # dynamo.disable would import torch._dynamo (seconds) for nothing.
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return run_op(func, args, kwargs or {})
