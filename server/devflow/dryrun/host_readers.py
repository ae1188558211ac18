"""C++ functions that write a result into fresh memory, which a VirtualTensor wrapper does not have.

`ctc_loss` (mean reduction) and `pad_packed_sequence` fill its `lengths` result that way: it runs here as the same computation in
differentiable torch ops, which the dry run sees op by op (and autograd through them), with `lengths`
a plain cpu tensor as CUDA returns it. (A PackedSequence's batch sizes, which C++ reads from memory,
are plain cpu tensors already: see dispatch._on_host.)"""

from __future__ import annotations

import torch

from devflow.dryrun.vtensor import VirtualTensor

_VF = torch._C._VariableFunctions


def _pad_packed_sequence(args, kwargs):
    data, batch_sizes, batch_first, padding_value, total_length = (list(args) + [None] * 5)[:5]
    batch_first = kwargs.get("batch_first", batch_first)
    padding_value = kwargs.get("padding_value", padding_value)
    total_length = kwargs.get("total_length", total_length)
    if isinstance(batch_sizes, VirtualTensor):
        batch_sizes = batch_sizes.elem
    sizes = [int(b) for b in batch_sizes.tolist()]
    steps, batch = len(sizes), sizes[0]
    rows = []
    for chunk in data.split(sizes):
        if chunk.shape[0] < batch:
            fill = chunk.new_full((batch - chunk.shape[0], *chunk.shape[1:]), padding_value)
            chunk = torch.cat([chunk, fill])
        rows.append(chunk)
    out = torch.stack(rows)
    if total_length is not None and total_length > steps:
        out = torch.cat([out, out.new_full((total_length - steps, *out.shape[1:]), padding_value)])
    if batch_first:
        out = out.transpose(0, 1)
    lengths = [sum(1 for s in sizes if s > b) for b in range(batch)]
    with torch.utils._python_dispatch._disable_current_modes():
        return out, torch.tensor(lengths, dtype=torch.int64)


def _lengths(v) -> list:
    if isinstance(v, torch.Tensor):
        if isinstance(v, VirtualTensor):
            v = v.elem
        with torch.utils._python_dispatch._disable_current_modes():
            return [int(n) for n in v.reshape(-1).tolist()]
    return [int(n) for n in v]


def _ctc_loss(args, kwargs):
    """torch.ctc_loss reads its lengths on the host (a tensor's wherever it is), moves its targets
    to the device of log_probs, and for the mean reduction divides by a tensor it fills in C++ (memory
    a wrapper does not have): the same steps here, the loss itself computed per sample by the kernel."""
    names = ("log_probs", "targets", "input_lengths", "target_lengths", "blank", "reduction", "zero_infinity")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    log_probs, targets = bound["log_probs"], bound["targets"]
    il, tl = _lengths(bound["input_lengths"]), _lengths(bound["target_lengths"])
    reduction = bound.get("reduction", 1)
    reduction = _REDUCTIONS.get(reduction, reduction)  # F.ctc_loss names it
    if isinstance(targets, torch.Tensor) and targets.device != log_probs.device:
        targets = targets.to(log_probs.device)
    from devflow.dryrun import dispatch

    res = dispatch.call_on(log_probs, _VF.ctc_loss, log_probs, targets, il, tl, bound.get("blank", 0), 0,
                           bound.get("zero_infinity", False))
    if reduction == 1:
        return (res / torch.tensor(tl, dtype=res.dtype, device=res.device).clamp_min(1)).mean()
    return res.sum() if reduction == 2 else res


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
READERS = {_VF._pad_packed_sequence: _pad_packed_sequence, _VF.ctc_loss: _ctc_loss,
           torch.nn.functional.ctc_loss: _ctc_loss}


def call(func, args, kwargs):
    """Runs `func` (one of READERS) on the program's tensors as the dry run can."""
    return READERS[func](args, kwargs)
