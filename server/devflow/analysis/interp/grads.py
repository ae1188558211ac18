"""`torch.autograd.grad(outputs, inputs)`: one gradient per input, each on that input's device (a
gradient has its tensor's device and shape). So `w - lr * g` over a module's parameters and their
gradients stays on the module's device, and a cpu tensor combined with such a gradient is a mix."""

from __future__ import annotations

from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class Gradients:
    def autograd_grads(self, node, args, kwargs, frame) -> Val:
        inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
        if inputs is None or "__opaque__" in kwargs:
            return UNKNOWN
        org = Origin(span_of(node), f"the gradients of `{self.text(node)}`, each on its input's device")
        if inputs.kind == "tensor":
            return Val("obj", obj=Obj("tuple", items=[_grad(inputs, org)]))
        if inputs.kind == "obj" and inputs.obj is not None and inputs.obj.kind in ("list", "tuple") \
                and inputs.obj.items and inputs.elem is None:
            return Val("obj", obj=Obj("tuple", items=[_grad(v, org) for v in inputs.obj.items]))
        if inputs.kind in ("params", "obj"):
            return Val("obj", obj=Obj("tuple"), elem=_grad(self.iter_elem(inputs, None, frame), org))
        return UNKNOWN


def _grad(v: Val, org: Origin) -> Val:
    """The gradient of `v`: a tensor on `v`'s device (unknown when that is)."""
    if v.kind != "tensor" or v.dev is None or not v.dev.known:
        return UNKNOWN
    return Val("tensor", v.dev, org)
