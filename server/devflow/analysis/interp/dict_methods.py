"""`update`, `setdefault` and `get` on a dict whose keys are all known, as Python runs them.

`d.update(other)` (a dict whose keys are all known too) and `d.update(k=v)` store the other's entries under
their keys, the dict's keys still all known; `d.setdefault("k", v)` gives the entry when the key is there,
else stores `v` and gives it; `d.get("k", v)` gives the entry, else `v` (None when not given). A wrapper building an observer's keywords (`kw = dict(defaults);
kw.update(cfg.get_kwargs(name)); kw.setdefault("dtype", cfg.dtype); Observer(**kw)`) so passes them all on.
Anything else (an argument of unknown keys, a key that is not a constant) returns None: the caller treats
the dict as changed in ways not known."""

from __future__ import annotations

from devflow.analysis.values import Val


def _exact(obj) -> bool:
    return obj is not None and obj.kind == "dict" and getattr(obj, "exact", False) and not getattr(obj, "opaque", False)


def known_dict_method(obj, name: str, args, kwargs) -> Val | None:
    if not _exact(obj) or "__opaque__" in kwargs:
        return None
    if name == "update" and len(args) <= 1:
        src = args[0] if args else None
        if src is not None and not (src.kind == "obj" and _exact(src.obj)):
            return None
        if src is not None:
            obj.keys.update(src.obj.keys)
        obj.keys.update(kwargs)
        return Val("const", const=None)
    if name == "get" and 1 <= len(args) <= 2 and not kwargs and args[0].kind == "const":
        try:
            hit = obj.keys.get(args[0].const)
        except TypeError:
            return None
        return hit if hit is not None else args[1] if len(args) == 2 else Val("const", const=None)
    if name == "setdefault" and 1 <= len(args) <= 2 and not kwargs and args[0].kind == "const":
        try:
            if args[0].const in obj.keys:
                return obj.keys[args[0].const]
            v = args[1] if len(args) == 2 else Val("const", const=None)
            obj.keys[args[0].const] = v
        except TypeError:
            return None
        return v
    return None
