"""`copy.deepcopy(...)` of the program's own objects.

A deep copy of an object of a project class (a config, an agent's settings) is another object of that
class with copies of its attributes: `agent_config = deepcopy(self.config)` keeps `use_GPU`, the device,
the hyperparameters. A copy of a module keeps the device its parameters were on when copied; while the
module's `__init__` still runs (`self.old_policy = deepcopy(self)`), that is the device its submodules
and buffers built so far share.
"""

from __future__ import annotations

from devflow.analysis.lattice import Dev, join
from devflow.analysis.values import Obj, Val

_CONTAINERS = ("list", "tuple", "dict")


def is_project_instance(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind == "instance" and v.obj.cls is not None \
        and not getattr(v.obj, "standalone", False)


def _copy_val(v: Val, memo: dict) -> Val:
    o = v.obj
    if o is None:
        return v
    if is_project_instance(v):
        return deep_copy_instance(v, memo)
    if v.kind == "obj" and o.kind in _CONTAINERS:
        c = memo.get(id(o))
        if c is None:
            c = memo[id(o)] = Obj(o.kind, qual=o.qual)
            c.items = [_copy_val(i, memo) for i in o.items]
            c.keys = {k: _copy_val(i, memo) for k, i in o.keys.items()}
        return Val("obj", obj=c, elem=_copy_val(v.elem, memo) if v.elem is not None else None, text=v.text)
    return v  # modules, tensors, devices, numbers: shared (a module copy's own placement is not followed)


def deep_copy_instance(v: Val, memo: dict | None = None) -> Val:
    """The copy of an object of a project class: same class, copies of its attributes."""
    memo = {} if memo is None else memo
    src = v.obj
    c = memo.get(id(src))
    if c is None:
        c = memo[id(src)] = Obj("instance", qual=src.qual, cls=src.cls, origin=src.origin)
        c.attrs = {k: _copy_val(a, memo) for k, a in src.attrs.items()}
    return Val("obj", obj=c, text=v.text)


def copied_device(src: Obj) -> Dev | None:
    """The device of the module `src` as a copy of it is made: its own, or, while its `__init__` still runs,
    the one its submodules and buffers built so far share."""
    if src.dev is not None:
        return src.dev
    dev = None
    for name in (*src.children, *src.buffers):
        v = src.attrs.get(name)
        d = v.obj.dev if v is not None and v.kind == "module" and v.obj is not None else \
            v.dev if v is not None and v.kind == "tensor" and not v.scalar else None
        if d is None:
            continue
        dev = d if dev is None else join(dev, d)
    return dev
