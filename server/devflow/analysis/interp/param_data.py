"""`module.weight.data = t`: the parameter now holds `t`'s storage, so it is where `t` is, whatever the
module's device was. A module whose every parameter and buffer is re-pointed so (a pruned copy of a
layer built on the cpu and filled from a GPU layer's slices) is on that device from then on."""

from __future__ import annotations

from devflow.analysis.values import Val


def rebind_param_data(owner, name: str, val: Val) -> None:
    if owner is None or owner.kind != "module" or name not in owner.buffers or val.kind != "tensor":
        return
    old = owner.attrs.get(name)
    owner.attrs[name] = Val("tensor", val.dev, val.origin, scalar=old.scalar if old is not None else False)
    devs = [b.dev for n in owner.buffers if (b := owner.attrs.get(n)) is not None and b.kind == "tensor" and not b.scalar]
    devs += [c.obj.dev for n in owner.children if (c := owner.attrs.get(n)) is not None and c.obj is not None
             and c.obj.dev is not None]
    if devs and all(d is not None and d.known and d == devs[0] for d in devs):
        owner.dev = devs[0]
