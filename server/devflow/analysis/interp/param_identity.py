"""A parameter is one object wherever it is kept: `Module.to()` swaps a parameter's data in place
(`param.data = fn(param.data)`), so a plain list or tuple on the module that holds it (`self.arch =
[self.alpha]`, `self.alphas.append((name, p))` over named_parameters()) sees the move. A buffer is
replaced by a new tensor instead: a container holding the old one keeps it where it was."""

from __future__ import annotations

from devflow.analysis.lattice import join
from devflow.analysis.values import Obj, Val

_MAX_DEPTH = 4


def param_of(val: Val, owner: Obj) -> Val:
    """`val`, a tensor just registered as a parameter of `owner`, tagged with it."""
    return Val("tensor", val.dev, val.origin, scalar=val.scalar, dims=val.dims, owner=owner)


def carry_params(holder: Obj, moved: set, dev, origin) -> None:
    """After a move: the parameters of the modules moved (ids in `moved`) that `holder` keeps in its plain
    containers move with them."""
    for name, v in list(holder.attrs.items()):
        if v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple", "dict"):
            _carry(v.obj, moved, dev, origin, 0, set())
            if v.elem is not None:
                holder.attrs[name] = Val("obj", obj=v.obj, elem=_moved(v.elem, moved, dev, origin, 0, set()),
                                         text=v.text)


def _carry(c: Obj, moved: set, dev, origin, depth: int, seen: set) -> None:
    if depth > _MAX_DEPTH or id(c) in seen:
        return
    seen.add(id(c))
    c.items = [_moved(v, moved, dev, origin, depth, seen) for v in c.items]
    for k, v in list(c.keys.items()):
        c.keys[k] = _moved(v, moved, dev, origin, depth, seen)


def _moved(v: Val, moved: set, dev, origin, depth: int, seen: set) -> Val:
    if v.kind == "tensor" and v.owner is not None and id(v.owner) in moved:
        return Val("tensor", dev, origin, scalar=v.scalar, dims=v.dims, owner=v.owner)
    if v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple", "dict"):
        _carry(v.obj, moved, dev, origin, depth + 1, seen)
        if v.elem is not None:
            return Val("obj", obj=v.obj, elem=_moved(v.elem, moved, dev, origin, depth + 1, seen), text=v.text)
    return v


def placed_so_far(obj: Obj):
    """The device of a module still being built (its `__init__` iterating `self.named_parameters()`): where
    its submodules and parameters made so far are, as the class call decides it at the end (calls.py);
    None when it holds none yet."""
    dev = None
    for name in obj.children:
        c = obj.attrs.get(name)
        if c is not None and c.obj is not None:
            dev = c.obj.dev if dev is None else join(dev, c.obj.dev)
    for name in obj.buffers:
        b = obj.attrs.get(name)
        if b is not None and b.kind == "tensor" and not b.scalar:
            dev = b.dev if dev is None else join(dev, b.dev)
    return dev
