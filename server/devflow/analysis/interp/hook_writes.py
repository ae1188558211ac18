"""Module hooks run outside the code that reads what they set. `m.register_forward_hook(self._hook)`
(and the pre-hook / backward-hook registrations) makes torch call `_hook(module, inputs, output)` every time
`m` runs, so an attribute the hook assigns on its own object (`self.hidden = output`) changes at each call of
`m`, wherever that call is. Forward and pre-forward hooks of a module object the interpreter holds are run
with the module's call (interp/forward_hooks.py); for the others (backward hooks, hooks on a receiver it does not
hold), what the rest of the object's code last wrote there (`self.hidden = None` in `__init__`) is not what a read
after `m(x)` sees: such an attribute is unknown for the rest of the run."""

from __future__ import annotations

import ast


HOOK_REGISTRATIONS = frozenset({
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_backward_hook",
})


def note_hook_registration(args: list) -> None:
    """`m.register_*_hook(fn, ...)`: the attributes `fn` assigns on its bound object become unknown there."""
    if not args:
        return
    hook = args[0]
    if hook.kind != "func" or hook.func is None or hook.bound is None or hook.bound.obj is None:
        return
    written = self_attributes_assigned(hook.func.node)
    if written:
        hook.bound.obj.hook_written |= written


def self_attributes_assigned(fn) -> frozenset:
    """Names `X` of `self.X = ...` (also augmented / annotated) in a method's body, `self` its first parameter."""
    params = getattr(getattr(fn, "args", None), "args", None)
    if not params:
        return frozenset()
    me = params[0].arg
    names = set()
    for node in ast.walk(fn):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            for leaf in _leaves(t):
                if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and leaf.value.id == me:
                    names.add(leaf.attr)
    return frozenset(names)


def _leaves(target):
    if isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from _leaves(e)
    else:
        yield target


def hook_written(obj, attr: str) -> bool:
    return attr in obj.hook_written



