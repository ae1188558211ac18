"""`model.generate(**kwargs)` with `kwargs = {"input_ids": ids, "max_new_tokens": n}`: Python passes each entry
of a spread dict as a keyword argument, so a library model (whose forward is not followed) receives `ids` as
surely as in `model.generate(input_ids=ids)`. The call's keyword values already hold the spread dict's known
entries; these are the ones no keyword of the call names, each described by where it came from."""

from __future__ import annotations

import ast


def spread_keywords(node: ast.Call, kwargs: dict, text) -> list:
    """(value, description) for the keyword arguments that `**d` entries of `node` passed."""
    spreads = [kw.value for kw in node.keywords if kw.arg is None]
    if not spreads:
        return []
    named = {kw.arg for kw in node.keywords if kw.arg is not None}
    source = text(spreads[0])
    return [(v, f"{source}[{k!r}]") for k, v in kwargs.items()
            if k not in named and not k.startswith("__") and getattr(v, "kind", "") == "tensor"]
