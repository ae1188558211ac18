"""C++ functions that write a result into fresh memory, which a VirtualTensor wrapper does not have.

`pad_packed_sequence` fills its `lengths` result that way: it runs here as the same computation in
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


READERS = {_VF._pad_packed_sequence: _pad_packed_sequence}


def call(func, args, kwargs):
    """Runs `func` (one of READERS) on the program's tensors as the dry run can."""
    return READERS[func](args, kwargs)
