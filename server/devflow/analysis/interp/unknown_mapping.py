"""`config[key] = v` on a value the engine knows nothing of (a yaml / json config, a dict some library
built): whatever mapping it is, reading `config[key]` back gives `v` (the `__setitem__` / `__getitem__`
contract), while its other entries stay unknown. Only string keys: a tensor or a list is not indexed by one."""

from __future__ import annotations

from devflow.analysis.values import Obj, Val


def mapping_with_item(base: Val, key: Val, val: Val) -> Val | None:
    """A dict of unknown extent holding `val` under the constant string `key`, for an unknown `base`."""
    if base.kind != "unknown" or base.const is not None or key.kind != "const" or not isinstance(key.const, str):
        return None
    obj = Obj("dict")
    obj.keys[key.const] = val
    obj.exact = False  # type: ignore[attr-defined]  # its other keys are not known
    return Val("obj", obj=obj)
