"""`model.generate(**kwargs)` with `kwargs = {"input_ids": ids, "max_new_tokens": n}`: Python passes each entry
of a spread dict as a keyword argument, so a library model (whose forward is not followed) receives `ids` as
surely as in `model.generate(input_ids=ids)`. The call's keyword values already hold the spread dict's known
entries; these are the ones no keyword of the call names, each named by its keyword, as an explicit keyword
argument is (a project forward's parameter that never meets a tensor is dropped by that name)."""

from __future__ import annotations

import ast


def spread_keywords(node: ast.Call, kwargs: dict) -> list:
    """(value, keyword) for the keyword arguments that `**d` entries of `node` passed."""
    if not any(kw.arg is None for kw in node.keywords):
        return []
    named = {kw.arg for kw in node.keywords if kw.arg is not None}
    return [(v, k) for k, v in kwargs.items()
            if k not in named and not k.startswith("__") and getattr(v, "kind", "") == "tensor"]
