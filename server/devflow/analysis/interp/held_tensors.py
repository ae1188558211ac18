"""Tensors a module keeps in a plain Python container attribute: a list / tuple of tensors (a cache of
anchors), or a dict whose values are tensors or tuples of tensors (a message store `{node: (src, dst, t,
msg)}`). `.to()` moves parameters and buffers only, so every tensor such a container holds stays where it
was when the module moves, like a plain tensor attribute."""

from __future__ import annotations

from devflow.analysis.values import Obj, Val


def _parts(v: Val) -> list | None:
    if v.kind != "obj" or v.obj is None:
        return None
    if v.obj.kind in ("list", "tuple"):
        return v.obj.items + ([v.elem] if v.elem is not None else [])
    if v.obj.kind == "dict" and not v.obj.qual and not getattr(v.obj, "opaque", False):
        return list(v.obj.keys.values()) + ([v.elem] if v.elem is not None else [])
    return None


def tensor_leaves(v: Val, depth: int = 2) -> list | None:
    """The tensors a plain container holds, when it holds nothing else (and something), else None."""
    parts = _parts(v)
    if not parts:
        return None
    out = []
    for p in parts:
        if p.kind == "tensor":
            out.append(p)
            continue
        inner = tensor_leaves(p, depth - 1) if depth > 1 else None
        if inner is None:
            return None
        out.extend(inner)
    return out


def with_leaves(v: Val, make) -> Val:
    """The same container shape with each tensor `t` replaced by `make(t)` (a fresh container: the old one
    may be shared with a value read before)."""
    if v.kind == "tensor":
        return make(v)
    o = v.obj
    kept = Obj(o.kind, items=[with_leaves(i, make) for i in o.items])
    if o.kind == "dict":
        kept.keys = {k: with_leaves(x, make) for k, x in o.keys.items()}
    return Val("obj", obj=kept, elem=with_leaves(v.elem, make) if v.elem is not None else None)
