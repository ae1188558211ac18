"""A module class that overrides `nn.Module._apply` takes over what `.to()` / `.cuda()` / `.half()` do to its
state: the override may apply the move to tensors kept as plain attributes and re-derive the attributes it keeps
a device or dtype in (FLAMO's DSP base, whose stability maps build their bounds with `device=self.device`). So
after a move of such a module its plain tensor attributes (tensors and containers of tensors, parameters and
buffers aside), and every attribute the override itself assigns (`self.device = self.param.device`), are no
longer known: unknown stays silent, where the engine would otherwise keep them on the device they were set on."""

from __future__ import annotations

import ast

from devflow.analysis.values import UNKNOWN, Obj
from devflow.analysis.interp.held_tensors import tensor_leaves


def blur_state_of_apply_override(obj: Obj) -> bool:
    """Forget the plain state of `obj` that its class's `_apply` override may have moved; False if no override."""
    cls = obj.cls
    found = cls.method("_apply") if cls is not None and hasattr(cls, "method") else None
    if found is None:
        return False
    assigned = {t.attr for n in ast.walk(found[0]) for t in getattr(n, "targets", [getattr(n, "target", None)])
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    for name, v in list(obj.attrs.items()):
        if name in obj.buffers or name in obj.children:
            continue
        plain_tensor = v.kind == "tensor" and v.owner is None
        if name in assigned or plain_tensor or (v.kind == "obj" and tensor_leaves(v)):
            obj.attrs[name] = UNKNOWN
    return True
