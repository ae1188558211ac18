"""`.to()` of a collated batch object moves it in place, wherever the call is written.

A torch_geometric `Batch` / `Data` (`Data.to` applies the move to every field and returns the same object)
and a transformers `BatchEncoding` (`.to` replaces its tensors and returns itself) are moved in place: after
`out = model(batch.to(device))` the name `batch` holds the moved batch too, as after the statement
`batch.to(device)`. (A tensor's `.to()` returns a copy: that rule is for these batch objects only.)
"""

from __future__ import annotations

import ast

from devflow.analysis.values import ENCODING, GRAPH, Val


def batch_moved_in_place(func: ast.expr, recv: Val | None, out: Val) -> str | None:
    """The name a call `name.to(...)` / `name.cuda()` moves in place, when `name` is such a batch object."""
    if not isinstance(func, ast.Attribute) or func.attr not in ("to", "cuda", "cpu") \
            or not isinstance(func.value, ast.Name) or recv is None or recv.kind != "tensor" or out.kind != "tensor":
        return None
    if recv.batch == GRAPH or (recv.batch == ENCODING and func.attr == "to"):
        return func.value.id
    return None
