"""CUDA's device rules for one aten op: which operands must share a device, and the words CUDA
uses when they do not (texts as a real GPU prints them, see docs/dryrun.md).

An op's tensors must all be on one device, except
  * 0-dim cpu tensors (CUDA reads them as scalars),
  * cpu index tensors of an indexed cuda tensor (aten.index / index_put);
and a cpu tensor indexed by a cuda index fails with its own message; tensors a kernel reads on the
host (HOST_ARGUMENTS) must be on the cpu.
Copies (to, copy_) cross devices by design.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

aten = torch.ops.aten
CPU_DEVICE = torch.device("cpu")

CROSS_DEVICE_OK = {
    aten._to_copy.default, aten.copy_.default, aten.copy.default, aten._copy_from.default,
    aten._copy_from_and_resize.default, aten.detach.default, aten.alias.default, aten.lift_fresh.default,
    aten.lift_fresh_copy.default, aten._local_scalar_dense.default, aten.is_same_size.default,
    aten.set_.source_Tensor, aten._has_compatible_shallow_copy_type.default, aten.set_.source_Storage,
    aten.set_.source_Storage_storage_offset, aten.to.device, aten.to.dtype_layout, aten.to.other,
}
INDEX_OPS = {aten.index.Tensor, aten.index_put_.default, aten.index_put.default, aten._index_put_impl_.default,
             aten._unsafe_index.Tensor, aten._unsafe_index_put.default}
# Tensors a CUDA kernel reads on the host: they must be cpu tensors whatever the op's device, and take
# no part in its same-device check (pack_padded_sequence's lengths; the PackedSequence it returns keeps
# its batch sizes on the cpu: HOST_RESULTS, by result index).
HOST_ARGUMENTS = {aten._pack_padded_sequence.default: ("lengths",)}
# Arguments a kernel accepts on any device: CTC's lengths are copied to the host and its targets
# moved to the device of log_probs by ctc_loss itself (cuDNN's path wants them all on the cpu).
ANY_DEVICE = {aten._ctc_loss.Tensor: ("targets", "input_lengths", "target_lengths"),
              aten._ctc_loss.default: ("targets",)}
HOST_RESULTS = {aten._pack_padded_sequence.default: (1,)}
CONV_OPS = {aten.convolution.default, aten._convolution.default, aten.conv2d.default, aten.conv1d.default,
            aten.conv3d.default, aten.conv_transpose2d.input, aten.conv_transpose1d.default}


@dataclass
class Operand:
    name: str          # the schema argument ("self", "mat2", "weight", "tensors[1]")
    tensor: object     # the tensor as the program holds it (VirtualTensor or plain)
    device: torch.device


@dataclass
class Mix:
    kind: str          # "DEV901" ... (see recorder.KINDS)
    message: str       # CUDA's words
    operands: list     # the operands that disagree, first the one on the reference device
    device: torch.device  # where CUDA would have run it after the fix (the majority device)


def operands(func, args, kwargs, vdevice) -> list[Operand]:
    """Every tensor argument with its schema name and virtual device."""
    out: list[Operand] = []
    schema_args = func._schema.arguments

    def add(name, value):
        if isinstance(value, torch.Tensor):
            out.append(Operand(name, value, vdevice(value)))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                if isinstance(v, torch.Tensor):
                    out.append(Operand(f"{name}[{i}]" if len(value) > 1 else name, v, vdevice(v)))

    for i, value in enumerate(args):
        add(schema_args[i].name if i < len(schema_args) else f"arg{i}", value)
    for name, value in kwargs.items():
        add(name, value)
    return out


def _scalar_like(op: Operand) -> bool:
    return op.device.type == "cpu" and op.tensor.dim() == 0


def check(func, ops: list[Operand]) -> Mix | None:
    if func in CROSS_DEVICE_OK or len(ops) < 2:
        return None
    if func in INDEX_OPS:
        return _check_index(func, ops)
    host = HOST_ARGUMENTS.get(func)
    if host is not None:
        return _check_host(func, ops, host)
    free = ANY_DEVICE.get(func)
    if free is not None:
        ops = [o for o in ops if o.name not in free]
    return _check_same_device(func, ops)


def _check_same_device(func, ops: list[Operand]) -> Mix | None:
    checked = [o for o in ops if not _scalar_like(o)]
    devices = _distinct(o.device for o in checked)
    if len(devices) < 2:
        return None
    target = _majority(checked)
    if func in CONV_OPS:
        msg = _conv_message(ops)
        if msg:
            return Mix("DEV901", msg, [checked[0]] + [o for o in checked if o.device != checked[0].device], target)
    first = checked[0]
    odd = next(o for o in checked if o.device != first.device)
    if _is_tensor_iterator(func):
        msg = (f"Expected all tensors to be on the same device, but found at least two devices, "
               f"{_order(first.device, odd.device)}!")
    else:
        msg = (f"Expected all tensors to be on the same device, but got {_base(odd.name)} is on {odd.device}, "
               f"different from other tensors on {first.device} (when checking argument in method "
               f"wrapper_CUDA_{_kernel_name(func)})")
    return Mix("DEV901", msg, [first, odd] + [o for o in checked if o.device != first.device and o is not odd],
               target)


# c10's ScalarType names, as CUDA's messages print them
_SCALAR_NAMES = {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
                 torch.uint8: "Byte", torch.bool: "Bool", torch.float32: "Float", torch.float64: "Double",
                 torch.float16: "Half", torch.bfloat16: "BFloat16"}


def _check_host(func, ops: list[Operand], host: tuple) -> Mix | None:
    device_ops = [o for o in ops if o.name not in host]
    odd = next((o for o in ops if o.name in host and o.device.type != "cpu"), None)
    if odd is not None:
        t = odd.tensor
        msg = (f"'{odd.name}' argument should be a 1D CPU int64 tensor, but got {t.dim()}D {odd.device} "
               f"{_SCALAR_NAMES.get(t.dtype, str(t.dtype))} tensor")
        return Mix("DEV911", msg, [odd], result_device(device_ops) if device_ops else CPU_DEVICE)
    return _check_same_device(func, device_ops)


def _check_index(func, ops: list[Operand]) -> Mix | None:
    self_op = ops[0]
    index_ops = [o for o in ops[1:] if o.name.startswith("indices")]
    others = [o for o in ops[1:] if not o.name.startswith("indices")]
    if self_op.device.type == "cpu" and any(o.device.type != "cpu" for o in index_ops):
        odd = next(o for o in index_ops if o.device.type != "cpu")
        return Mix("DEV902", "indices should be either on cpu or on the same device as the indexed tensor (cpu)",
                   [self_op, odd], odd.device)
    bad = [o for o in index_ops if o.device.type != "cpu" and o.device != self_op.device]
    bad += [o for o in others if not _scalar_like(o) and o.device != self_op.device]
    if bad:
        return Mix("DEV901", f"Expected all tensors to be on the same device, but found at least two devices, "
                             f"{_order(self_op.device, bad[0].device)}!", [self_op] + bad, self_op.device)
    return None


def _conv_message(ops: list[Operand]) -> str | None:
    by = {o.name: o for o in ops}
    inp, weight, bias = by.get("input"), by.get("weight"), by.get("bias")
    if inp is None or weight is None:
        return None
    from devflow.dryrun.vtensor import type_name
    if inp.device != weight.device:
        return (f"Input type ({type_name(inp.tensor.dtype, inp.device)}) and weight type "
                f"({type_name(weight.tensor.dtype, weight.device)}) should be the same")
    if bias is not None and bias.device != inp.device:
        return (f"Input type ({type_name(inp.tensor.dtype, inp.device)}) and bias type "
                f"({type_name(bias.tensor.dtype, bias.device)}) should be the same")
    return None


def _is_tensor_iterator(func) -> bool:
    name = func._schema.name
    return torch.Tag.pointwise in func.tags or name.startswith("aten::_foreach_") or name in _ITERATOR_OPS


_ITERATOR_OPS = {"aten::where", "aten::lerp_", "aten::lerp", "aten::addcmul_", "aten::addcdiv_",
                 "aten::masked_fill_", "aten::masked_fill", "aten::clamp", "aten::clamp_"}


def _kernel_name(func) -> str:
    base = func._schema.name.split("::", 1)[1]
    return base if not base.startswith("_") else "_" + base


def _base(name: str) -> str:
    return name.split("[", 1)[0]


def _order(a: torch.device, b: torch.device) -> str:
    # CUDA names the accelerator first ("cuda:0 and cpu").
    return f"{b} and {a}" if a.type == "cpu" and b.type != "cpu" else f"{a} and {b}"


def _distinct(devs) -> list:
    seen: list = []
    for d in devs:
        if d not in seen:
            seen.append(d)
    return seen


def _majority(ops: list[Operand]) -> torch.device:
    counts: dict = {}
    for o in ops:
        counts[o.device] = counts.get(o.device, 0) + 1
    best = max(counts.values())
    tied = [d for d in counts if counts[d] == best]
    # A tie goes to the accelerator: the fix a user makes is to move the stray cpu tensor.
    return next((d for d in tied if d.type != "cpu"), tied[0])


def result_device(ops: list[Operand]) -> torch.device:
    """Where an op without a mix runs: the device of its non-scalar operands."""
    for o in ops:
        if not _scalar_like(o):
            return o.device
    for o in ops:
        if o.device.type != "cpu":
            return o.device
    return ops[0].device if ops else CPU_DEVICE
