"""`copy.deepcopy(model)`: another instance of the model's class, with copies of its submodules.
`copy.deepcopy(obj)` of an object of a project class (a config, an agent): another object of that class
with copies of its attributes (`agent_config = deepcopy(self.config)` keeps `use_GPU`, the device, ...).

A deep copy keeps the class (its methods and `forward`), every attribute, and every submodule and tensor
on the device it was on when copied: a target network (`self.target_net = deepcopy(self.q_net)`), an old
policy (`self.old_policy = deepcopy(self)`), an EMA model. Its submodules are new objects, so moving the
copy moves them and not the original's, and the other way round. Plain containers that hold modules
(a list of heads) are copied with them; other values (tensors, devices, numbers) are values.
"""

from __future__ import annotations

from devflow.analysis.lattice import Dev, join
from devflow.analysis.values import Obj, Origin, Val

_CONTAINERS = ("list", "tuple", "dict")


def _copy_val(v: Val, memo: dict) -> Val:
    o = v.obj
    if o is None:
        return v
    if v.kind == "module":
        return Val("module", obj=_copy_obj(o, o.origin, memo), text=v.text,
                   elem=_copy_val(v.elem, memo) if v.elem is not None else None)
    if is_project_instance(v):
        return deep_copy_instance(v, memo)
    if v.kind == "obj" and o.kind in _CONTAINERS:
        c = memo.get(id(o))
        if c is None:
            c = memo[id(o)] = Obj(o.kind, qual=o.qual)
            c.items = [_copy_val(i, memo) for i in o.items]
            c.keys = {k: _copy_val(i, memo) for k, i in o.keys.items()}
        return Val("obj", obj=c, elem=_copy_val(v.elem, memo) if v.elem is not None else None, text=v.text)
    return v


def _copy_obj(src: Obj, origin: Origin | None, memo: dict) -> Obj:
    done = memo.get(id(src))
    if done is not None:
        return done
    c = memo[id(src)] = Obj("module", qual=src.qual, cls=src.cls, dev=src.dev, origin=origin,
                            created_line=src.created_line, training=src.training, role=src.role)
    c.buffers, c.children = set(src.buffers), set(src.children)
    c.attrs = {k: _copy_val(v, memo) for k, v in src.attrs.items()}
    c.items = [_copy_val(i, memo) for i in src.items]  # a ModuleList's / Sequential's layers
    c.keys = {k: _copy_val(i, memo) for k, i in src.keys.items()}  # a ModuleDict's
    return c


def copied_device(src: Obj) -> Dev | None:
    """The device of the module `src` as a copy of it is made: its own, or, while its `__init__` still runs
    (`self.old_policy = deepcopy(self)`), the one its submodules and buffers built so far share."""
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


def deep_copy_module(src: Obj, dev: Dev, origin: Origin, line: int) -> Obj:
    """The copy of the module `src` (on `dev`) that `copy.deepcopy` makes at `origin` (line `line`)."""
    c = _copy_obj(src, origin, {})
    c.role, c.created_line, c.dev = "copy", line, dev
    return c


def is_project_instance(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind == "instance" and v.obj.cls is not None \
        and not getattr(v.obj, "standalone", False)


def deep_copy_instance(v: Val, memo: dict | None = None) -> Val:
    """The copy of an object of a project class: same class, copies of its attributes."""
    memo = {} if memo is None else memo
    src = v.obj
    c = memo.get(id(src))
    if c is None:
        c = memo[id(src)] = Obj("instance", qual=src.qual, cls=src.cls, origin=src.origin)
        c.attrs = {k: _copy_val(a, memo) for k, a in src.attrs.items()}
    return Val("obj", obj=c, text=v.text)
