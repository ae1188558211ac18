"""Moves called on values taken for numpy data.

A numpy array (or any numpy object) has no `.to()`, `.cuda()` or `.cpu()`: such a call raises, so where it
returns the receiver was in fact a tensor. This is how type-dispatching helpers read
(`if isinstance(X, np.ndarray): X = torch.from_numpy(X).to(d) else: X = X.to(d)`): the engine, which does not
split the paths by the isinstance test, sees numpy data reach the `else` move, whose result is on `d` all
the same."""

from __future__ import annotations

from devflow.analysis.values import Val

MOVERS = ("to", "cuda", "cpu")


def is_numpy_data(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind == "host" and v.obj.qual == "numpy"
