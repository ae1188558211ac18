"""`dict(d)` of a dict the engine knows: a new dict holding the same entries (a shallow copy: the values are the
same objects, tensors on their devices), keyword arguments added on top (`dict(d, lr=0.1)`). What is known of
the source, its keys and whether they are all of them, carries over to the copy; later stores into either
dict do not reach the other."""

from __future__ import annotations

from devflow.analysis.values import Obj, Val


def copied_dict(src: Val, kwargs: dict) -> Val:
    d = Obj("dict")
    d.keys = {**src.obj.keys, **kwargs}
    for flag in ("exact", "opaque"):
        if getattr(src.obj, flag, False):
            setattr(d, flag, True)
    return Val("obj", obj=d, elem=src.elem)
