"""A value of unknown kind that was moved with `.to(device)` / `.cuda()` and is then called.

`x.to(d)` / `x.cuda()` on an object the analysis cannot type (what `torch.hub.load(...)` returns, a factory of an
unresolved package) gives it back on that device, whether it is a tensor or a module (the value is kept as a tensor
there, origin kind "unknown-moved"). A tensor is not callable: a call of the moved value, `m(x)`, runs an nn.Module
whose parameters and buffers sit on that device, so an input on another device meets them in its forward.
"""

from __future__ import annotations

from devflow.analysis.values import Obj, Val


def moved_callable(fval: Val) -> Val | None:
    """The module that a called value of unknown kind, moved to a known device, must be; None otherwise."""
    origin = fval.origin
    if fval.kind != "tensor" or origin is None or origin.kind != "unknown-moved" or fval.dev is None \
            or not fval.dev.known:
        return None
    return Val("module", obj=Obj("module", dev=fval.dev, origin=origin, moved=origin), text=fval.text)
