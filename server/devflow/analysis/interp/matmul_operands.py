"""Matrix products take no 0-dim operand: `a @ b` (Tensor.__matmul__, torch.matmul) raises "both arguments
to matmul need to be at least 1D" for a 0-dim tensor. So an operand of `@` that runs has a dimension, and is
never the 0-dim cpu tensor that mixes with any device: `torch.tensor(np.eye(k)) @ w.T` (host data made a
tensor on the cpu, which the engine otherwise takes for a possible 0-dim scalar) meets a cuda `w` on two
devices (algostability#2). The product of two 1-D operands is 0-dim: it may be one where both operands may."""

from __future__ import annotations

from devflow.analysis.values import Val

MATMUL = "matmul"  # the function (`torch.matmul`) and method (`Tensor.matmul`) that `@` calls


def matmul_operand(v: Val) -> Val:
    """`v` as an operand of a matrix product: a tensor with at least one dimension."""
    if v.kind != "tensor" or not v.scalar:
        return v
    out = v.with_text(v.text)
    out.scalar = False
    out.zero_dim = False
    out.dims = max(v.dims, 1)
    return out
