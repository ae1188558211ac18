"""`nn.ModuleDict` entries. `d[key] = module` is `ModuleDict.__setitem__`, i.e. `add_module(key, module)`:
the module becomes a registered child (moved with the dict's owner) stored under `key`, and `d[key]` reads
it back. A key not known where it is read (`for k in self.obs_shapes: x = self.randomizers[k](x)`) may name
any entry: when every entry is alike (modules of one class on one device, or all None) one stands for all;
otherwise the entry read is not known."""

from __future__ import annotations

from devflow.analysis.values import Val


def is_module_dict(obj) -> bool:
    """A torch `nn.ModuleDict` (not a project subclass, whose `__setitem__` may differ)."""
    return obj is not None and obj.kind == "module" and obj.cls is None and obj.qual.endswith("ModuleDict")


def _storable(val: Val) -> bool:
    return val.kind == "module" and val.obj is not None or val.kind == "const" and val.const is None


def store_entry(obj, key: Val, val: Val) -> bool:
    """`d[key] = val` on a ModuleDict: record the entry under its key when that is a known string. A module
    entry is also one of the container's items, which `.to()` / `.train()` walk as for a ModuleList."""
    if not is_module_dict(obj) or not _storable(val):
        return False
    if key.kind == "const" and isinstance(key.const, str):
        obj.keys[key.const] = val
    if val.kind == "module" and not any(val.obj is i.obj for i in obj.items):
        obj.items.append(val)
    return True


def entries_from_dict(obj, mapping) -> list:
    """`nn.ModuleDict({"a": m, ...})` with every key known: its entries under their keys; returns the
    modules among them (the container's items)."""
    for k, v in mapping.keys.items():
        if isinstance(k, str) and _storable(v):
            obj.keys[k] = v
    return [v for v in mapping.keys.values() if v.kind == "module" and v.obj is not None]


def read_entry(obj, key: Val) -> Val | None:
    """`d[key]` on a ModuleDict: the entry under a known key; with another key the entry all of them
    share (None when they differ, or when there is none)."""
    if not is_module_dict(obj):
        return None
    if key.kind == "const" and isinstance(key.const, str) and key.const in obj.keys:
        return obj.keys[key.const]
    vals = [*obj.items, *(v for v in obj.keys.values() if not any(v is i for i in obj.items))]
    if not vals:
        return None
    if all(v.kind == "const" and v.const is None for v in vals):
        return vals[0]
    first = vals[0].obj if vals[0].kind == "module" else None
    if first is not None and all(v.kind == "module" and v.obj is not None and v.obj.cls is first.cls and
                                 v.obj.dev == first.dev and v.obj.role == first.role for v in vals):
        return vals[0]
    return None
