"""The dry run's pad_packed_sequence (dryrun/host_readers.py) is torch's, op for op: same values,
shape, strides, lengths and gradient, for both layouts and a longer total_length."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402

from devflow.dryrun import host_readers  # noqa: E402


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("total_length", [None, 9])
def test_pad_packed_sequence_matches_torch(batch_first, total_length):
    x = torch.randn((4, 7, 3) if batch_first else (7, 4, 3), requires_grad=True)
    packed = pack_padded_sequence(x, torch.tensor([7, 5, 3, 2]), batch_first=batch_first, enforce_sorted=False)
    n = total_length or packed.batch_sizes.size(0)
    args = (packed.data, packed.batch_sizes, batch_first, 0.5, n)
    want, want_lengths = torch._C._VariableFunctions._pad_packed_sequence(*args)
    got, got_lengths = host_readers.call(torch._C._VariableFunctions._pad_packed_sequence, args, {})
    assert torch.equal(got, want) and got.stride() == want.stride()
    assert torch.equal(got_lengths, want_lengths) and got_lengths.dtype == torch.int64
    weights = torch.arange(want.numel(), dtype=want.dtype).view_as(want)
    (g_want,) = torch.autograd.grad((want * weights).sum(), x, retain_graph=True)
    (g_got,) = torch.autograd.grad((got * weights).sum(), x)
    assert torch.equal(g_got, g_want)
