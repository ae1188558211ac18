"""Forward hooks: `module.register_forward_hook(hook)` / `register_forward_pre_hook(hook)`.

`nn.Module.__call__` runs each pre-hook as `hook(module, args)` before `forward` (a value it returns replaces the
positional arguments: a tuple, or one value wrapped in one) and each forward hook as `hook(module, args, output)`
after it (a value it returns replaces the output); `with_kwargs=True` hooks get the keyword arguments too. Feature
extractors and Grad-CAM keep what their hooks see (`self.activations = output`), so a later computation with it meets
the device of the hooked layer's output, not an unknown value.

The hooks registered on a module object are kept on it (the per-check heap), in registration order.
"""

from __future__ import annotations

from devflow.analysis.values import UNKNOWN, Obj, Origin, Val, module_tree
from devflow.analysis.interp.frames import span_of

REGISTER = {"register_forward_hook": "forward", "register_forward_pre_hook": "pre"}


def runs_registered_hook(name: str, receiver: Val | None) -> bool:
    """Whether the hooks this registration adds are run here: forward and pre-forward hooks of a module object,
    and forward hooks of a part of a library module (interp/hook_writes.py blurs what the others write)."""
    if name not in REGISTER or receiver is None or receiver.obj is None:
        return False
    return receiver.kind == "module" or (receiver.kind == "attr" and name == "register_forward_hook"
                                         and receiver.obj.kind == "module")


def register_hook(obj: Obj, name: str, args, kwargs, part: bool = False) -> Val:
    """`part`: a forward hook on a part of the library module `obj` (`model.layer4` of a torchvision ResNet, a
    part the analysis does not hold as an object): it runs when `obj` runs, on `obj`'s device."""
    hook = args[0] if args else kwargs.get("hook")
    if hook is None or hook.kind not in ("func", "partial", "method", "obj", "module"):
        return UNKNOWN  # a hook the analysis cannot run
    with_kwargs = kwargs.get("with_kwargs")
    entry = ("part" if part else REGISTER[name], hook, with_kwargs is not None and with_kwargs.kind == "const" and with_kwargs.const is True)
    obj.__dict__.setdefault("forward_hooks", []).append(entry)
    handle = Obj("hook_handle")
    handle.hooked = (obj, entry)  # type: ignore[attr-defined]
    return Val("obj", obj=handle)  # the RemovableHandle: `handle.remove()` takes the hook off


def remove_hook(handle: Obj) -> Val:
    owner, entry = handle.hooked  # type: ignore[attr-defined]
    hooks = getattr(owner, "forward_hooks", [])
    if entry in hooks:
        hooks.remove(entry)
    return Val("const", const=None)


def run_pre_hooks(interp, node, mod: Val, args: list, kwargs: dict, frame) -> list:
    for kind, hook, with_kwargs in getattr(mod.obj, "forward_hooks", ()):
        if kind != "pre" or interp.budget <= 0:
            continue
        packed = Val("obj", obj=Obj("tuple", items=list(args)))
        extra = [Val("obj", obj=Obj("dict", keys=dict(kwargs)))] if with_kwargs else []
        got = interp.call(node, hook, None, [mod, packed] + extra, {}, frame)
        if got.kind == "obj" and got.obj is not None and got.obj.kind == "tuple" and not with_kwargs and got.elem is None:
            args = list(got.obj.items)
        elif got.kind == "tensor" and not with_kwargs:
            args = [got]
    return args


def run_forward_hooks(interp, node, mod: Val, args: list, kwargs: dict, out: Val, frame, kinds=("forward",),
                      owner: Obj | None = None) -> Val:
    """`owner`: the object holding the hooks, when `mod` (what the hooks get as their module) is not it."""
    for kind, hook, with_kwargs in getattr(owner or mod.obj, "forward_hooks", ()):
        if kind not in kinds or interp.budget <= 0:
            continue
        packed = Val("obj", obj=Obj("tuple", items=list(args)))
        extra = [Val("obj", obj=Obj("dict", keys=dict(kwargs)))] if with_kwargs else []
        got = interp.call(node, hook, None, [mod, packed] + extra + [out], {}, frame)
        if not (got.kind == "const" and got.const is None):
            out = got  # (a hook whose result is not known may have replaced the output: unknown)
    return out


def run_inner_hooks(interp, node, mod: Val, frame) -> None:
    """A library module's forward is not run here, but torch runs the hooks of the submodules it calls: each
    hooked submodule's hooks see an output on that submodule's device (its inputs are not known)."""
    for i, sub in enumerate(module_tree(mod.obj)):
        if getattr(sub, "forward_hooks", None) and sub.dev is not None and sub.dev.known:
            out = Val("tensor", sub.dev, sub.moved or Origin(span_of(node), f"the output of a hooked part of the model "
                                                                            f"called at line {node.lineno}"))
            run_forward_hooks(interp, node, UNKNOWN if i == 0 else Val("module", obj=sub), [UNKNOWN], {}, out, frame, kinds=("part",) if i == 0 else ("forward", "part"), owner=sub)
