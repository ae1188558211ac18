"""VirtualTensor: a wrapper tensor whose data is a real cpu tensor (or a meta tensor above
--meta-above) and whose `device` is virtual ("cuda:0", "cpu", ...).

To C++ (autograd, the dispatcher) the wrapper is a cpu tensor, so the autograd engine, hooks and
optimizers work unchanged; Python sees the virtual device through `device`, `is_cuda`,
`get_device()` and `type()`. Every aten op on a wrapper goes through dispatch.run_op, which
applies CUDA's device rules and runs the op on the real data.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import _disable_current_modes as _plain

CPU = torch.device("cpu")


class VirtualTensor(torch.Tensor):
    # elem: the real data; vdev: the virtual device; origin: (kind, file, line) where this
    # lineage got its device (created / moved / loaded), propagated through ops.
    @staticmethod
    def __new__(cls, elem: torch.Tensor, vdev: torch.device, origin=None):
        r = torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(),
            dtype=elem.dtype, layout=elem.layout, device=elem.device, requires_grad=elem.requires_grad)
        r.elem = elem
        r.vdev = vdev
        r.origin = origin
        return r

    # off until dispatch.py installs its hook (the ambient device of each torch call)
    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        from devflow.dryrun.dispatch import run_op
        return run_op(func, args, kwargs or {})

    # -- what Python sees ------------------------------------------------------------------------
    @property
    def device(self):
        return self.vdev

    @property
    def is_cuda(self):
        return self.vdev.type == "cuda"

    @property
    def is_cpu(self):
        return self.vdev.type == "cpu"

    @property
    def is_meta(self):
        return self.vdev.type == "meta"

    def get_device(self):
        return self.vdev.index if self.vdev.type == "cuda" and self.vdev.index is not None else -1

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            return type_name(self.dtype, self.vdev)
        if isinstance(dtype, type):  # torch.cuda.FloatTensor, the legacy type objects
            dtype = f"{dtype.__module__}.{dtype.__name__}"
        if isinstance(dtype, str) and ".cuda." in dtype:
            dtype = dtype.replace(".cuda.", ".")
            return self.to(_dtype_of_type_name(dtype)).cuda()
        return super().type(dtype, non_blocking, **kwargs)

    # The real data is read outside the dry run's hook: under it, the plain `elem`'s own ops (the
    # detach that tolist / numpy / repr make, inference mode's aliasing) would come back as wrappers,
    # which have no memory to read.
    def tolist(self):
        with _plain():
            return self.elem.tolist()

    def untyped_storage(self):
        return self.elem.untyped_storage()

    def data_ptr(self):
        return self.elem.data_ptr()

    def __repr__(self, *, tensor_contents=None):
        with _plain():
            text = repr(self.elem.detach())
        if not text.endswith(")"):
            return text
        inner, tail = text[:-1], ""
        if self.vdev.type != "cpu":  # torch prints the device before the dtype
            cut = inner.rfind(", dtype=")
            inner, tail = (inner[:cut], inner[cut:]) if cut >= 0 else (inner, "")
            inner += f", device='{self.vdev}'"
        grad = ""
        if self.grad_fn is not None:
            grad = f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            grad = ", requires_grad=True"
        prefix = "Parameter containing:\n" if getattr(self, "_is_param", False) else ""
        return f"{prefix}{inner}{tail}{grad})"

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        # torch.save / pickling / DataLoader worker queues: the plain data; torch.save tags its
        # storage with the virtual device (wrappers.py) as a GPU run would write it.
        from devflow.dryrun import wrappers
        return wrappers.reduce_virtual(self, proto)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with torch.no_grad(), _plain():
            new = VirtualTensor(self.elem.clone(), self.vdev, self.origin)
        new.requires_grad_(self.requires_grad)
        if getattr(self, "_is_param", False):
            new._is_param = True
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new

    def numpy(self, *, force=False):
        from devflow.dryrun import recorder
        if self.vdev.type == "cuda" and not force:
            recorder.record_error(
                "DEV905", f"can't convert {self.vdev} device type tensor to numpy. Use Tensor.cpu() to copy "
                "the tensor to host memory first.", "TypeError", [self])
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        with _plain():
            return self.elem.detach().numpy()

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr.astype(dtype, copy=False) if dtype is not None else arr


def _data_get(self):
    return _DATA.__get__(self)


data_set_hook = None  # gpu_count follows `t.data = x` of tensors DataParallel moved


def _data_set(self, new):
    # `t.data = other` swaps the data under the same tensor object (Module.to, optimizer moves).
    if data_set_hook is not None:
        data_set_hook(self, new)
    if isinstance(self, VirtualTensor):
        if isinstance(new, VirtualTensor):
            _DATA.__set__(self, new)
            self.elem, self.vdev, self.origin = new.elem, new.vdev, new.origin
        else:
            _DATA.__set__(self, VirtualTensor(new, CPU))
            self.elem, self.vdev, self.origin = new, CPU, None
        return
    if isinstance(new, VirtualTensor):
        torch.utils.swap_tensors(self, _as_same_kind(self, new))
        return
    _DATA.__set__(self, new)


def _as_same_kind(old, new):
    new = new.detach()
    if isinstance(old, torch.nn.Parameter):
        new.requires_grad_(old.requires_grad)
        new._is_param = True
    return new


_DATA = torch._C.TensorBase.data


def install_data_property():
    torch.Tensor.data = property(_data_get, _data_set)


def type_name(dtype: torch.dtype, vdev: torch.device) -> str:
    names = {torch.float32: "FloatTensor", torch.float64: "DoubleTensor", torch.float16: "HalfTensor",
             torch.bfloat16: "BFloat16Tensor", torch.int64: "LongTensor", torch.int32: "IntTensor",
             torch.int16: "ShortTensor", torch.int8: "CharTensor", torch.uint8: "ByteTensor",
             torch.bool: "BoolTensor"}
    prefix = "torch.cuda." if vdev.type == "cuda" else "torch."
    return prefix + names.get(dtype, "Tensor")


def _dtype_of_type_name(name: str) -> torch.dtype:
    table = {"FloatTensor": torch.float32, "DoubleTensor": torch.float64, "HalfTensor": torch.float16,
             "LongTensor": torch.int64, "IntTensor": torch.int32, "ByteTensor": torch.uint8,
             "BoolTensor": torch.bool, "BFloat16Tensor": torch.bfloat16}
    return table.get(name.rsplit(".", 1)[-1], torch.float32)


def vdevice(t) -> torch.device:
    return t.vdev if isinstance(t, VirtualTensor) else t.device


def real(t):
    return t.elem if isinstance(t, VirtualTensor) else t
