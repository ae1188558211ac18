"""Clamping to tensor bounds has no wrapped-number exception. `torch.clamp(x, min=a, max=b)` (and `x.clamp(...)`,
`clip`, the in-place forms) with a tensor bound dispatches to clamp's Tensor overload, whose device check covers
`self`, `min` and `max` alike: a 0-dim cpu bound with a cuda `x` raises "Expected all tensors to be on the same
device ... (when checking argument for argument max in method wrapper_CUDA_clamp_Tensor)", where an arithmetic
operator would take the same 0-dim tensor as a number (Swin Transformer V2's
`torch.clamp(self.logit_scale, max=torch.log(torch.tensor(1. / 0.01)))`). A Python number bound takes the
Scalar overload and mixes with anything; it is not a tensor operand here."""

from __future__ import annotations

from devflow.analysis.values import Val

CLAMP_OPS = frozenset({"clamp", "clamp_", "clip", "clip_"})


def clamp_operand(v: Val) -> Val:
    """`v` as an operand of a clamp to tensor bounds: a tensor that must share the others' device, 0-dim or not."""
    if v.kind != "tensor" or not v.scalar:
        return v
    out = v.with_text(v.text)
    out.scalar = False
    return out
