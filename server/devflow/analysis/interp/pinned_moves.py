"""A bare `.cuda()` written in a module's own method that runs while the module is still on the cpu (never
moved, so its parameters are on the cpu): the module puts its state on the current GPU whatever device it and
its inputs are on (ConvLSTM's `init_hidden` returning `torch.zeros(...).cuda()`, called from `forward`). That
state cannot combine with the module's own parameters, so when it meets a cpu value the written-in move is
out of place: it is blamed (reported where it is written), not the cpu side. Not while `__init__` runs: a
model that pins its state there and is moved to the GPU afterwards is consistent. Nor when the cpu side is
what the module's own (unmoved) parameters computed: that is the model left on the cpu (DEV106)."""

from __future__ import annotations


def pins_module_state(frame) -> bool:
    """The `.cuda()` being evaluated runs in a method of a module that is on the cpu and never moved, outside
    any `__init__`."""
    me = frame.env.get("self") if frame is not None else None
    if me is None or me.kind != "module" or me.obj is None:
        return False
    obj = me.obj
    if obj.moved is not None or obj.dev is None or not obj.dev.is_cpu:
        return False
    f = frame
    while f is not None:
        if getattr(f.node, "name", None) == "__init__":
            return False
        f = f.parent
    return True


def blames_pinned(cpu_side, dev_side) -> bool:
    """The accelerator side of a mix is such pinned state and the other side is on the cpu."""
    org = dev_side.origin
    return org is not None and getattr(org, "pinned", False) and cpu_side.dev is not None and cpu_side.dev.is_cpu \
        and (cpu_side.origin is None or cpu_side.origin.kind != "param")
