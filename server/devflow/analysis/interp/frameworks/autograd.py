"""torch.autograd.Function subclasses: `Fn.apply(*args)` runs the static `forward(ctx, *args)`;
autograd later runs `backward(ctx, *grads)` with each gradient on the device of the output it
belongs to, and `ctx.saved_tensors` gives back what forward passed to `ctx.save_for_backward`.
So a tensor saved (or kept on ctx) on one device and combined in backward with a gradient on
another is a device mix, raised during `loss.backward()`: both passes are run at the apply call,
so the mix is reported inside backward where it happens."""

from __future__ import annotations

from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import FuncRef, span_of

_FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


def autograd_function(info) -> bool:
    from devflow.analysis.interp.frameworks.entries import _bases
    return any(q in _FUNCTION_BASES for q in _bases(info))


def autograd_apply_of(base: Val) -> Val | None:
    """`Fn.apply` / `Fn().apply` of a project torch.autograd.Function subclass, as a callable value."""
    info = base.func if base.kind == "class" else base.obj.cls if base.kind == "obj" and base.obj is not None else None
    return Val("autograd", func=info) if info is not None and autograd_function(info) else None


class AutogradFunctions:
    def autograd_apply(self, node, info, args, kwargs) -> Val:
        fwd, bwd = info.method("forward"), info.method("backward")
        if fwd is None or self.standalone:
            return UNKNOWN
        ctx = Val("obj", obj=Obj("autograd_ctx"), text="ctx")
        out = self.call_function(FuncRef(fwd[0], None, fwd[1], "staticmethod"), [ctx] + list(args), kwargs, None, node)
        if bwd is not None:
            outs = out.obj.items if out.kind == "obj" and out.obj is not None and out.obj.kind == "tuple" else [out]
            org = Origin(span_of(node), f"the gradient of `{self.text(node)}`'s output, on that output's device (autograd)")
            grads = [Val("tensor", o.dev, org) if o.kind == "tensor" and o.dev is not None and o.dev.known else UNKNOWN
                     for o in outs]
            if any(g.kind == "tensor" for g in grads):
                self.call_function(FuncRef(bwd[0], None, bwd[1], "staticmethod"), [ctx] + grads, {}, None, node)
        return out

    def autograd_ctx_method(self, r: Val, name: str, args) -> Val:
        if name == "save_for_backward":
            r.obj.attrs["saved_tensors"] = Val("obj", obj=Obj("tuple", items=list(args)))
        return Val("const", const=None)
