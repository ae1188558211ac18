"""A `TypedDict` class is a plain dict at run time: `_GenerateRequest(kwargs=kwargs, loop=loop)` builds
`{"kwargs": kwargs, "loop": loop}`, so `req["kwargs"]` is the value given, as for `dict(kwargs=...)`."""

from __future__ import annotations

from devflow.analysis.values import Obj, Val


def typed_dict_call(args: list, kwargs: dict) -> Val:
    d = Obj("dict")
    d.keys = {k: v for k, v in kwargs.items() if k != "__opaque__"}
    d.exact = not args and "__opaque__" not in kwargs  # type: ignore[attr-defined]
    if args or "__opaque__" in kwargs:
        d.opaque = True  # type: ignore[attr-defined]  (a mapping given positionally: keys unknown)
    return Val("obj", obj=d)
