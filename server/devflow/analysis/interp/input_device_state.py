"""Project modules whose own tensors follow their input's device.

A module whose forward (or a method it runs on `self`) reassigns each of its own tensors to an input's device
before using them - `self.pl = self.pl.to(device=input.device)`, `self.table = self.table.to(x)` - cannot meet
that input on another device, wherever the module itself was left: calling it unmoved with accelerator inputs
is how such modules are meant to be used (kornia's augmentations sample their parameters on the cpu and are
never moved). Calling it is not a model-not-moved mix; its forward is interpreted instead.

Only the module's own state counts: buffers (`register_buffer`) and parameters (`nn.Parameter`) assigned in
its class or its project bases; a torch.nn layer held as an attribute has weights of its own that nothing
realigns, so such a module never qualifies.
"""

from __future__ import annotations

import ast

from devflow.analysis.walk import walk


def _self_attr(node) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _dotted(node) -> list[str]:
    """`torch.nn.Conv2d` -> ["torch", "nn", "Conv2d"]; [] for anything but a dotted name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return []
    return [node.id, *reversed(parts)]


def _classes(cls) -> list:
    """The class and its project bases, most derived first (each once)."""
    out, todo = [], [cls]
    while todo:
        c = todo.pop(0)
        if any(c is o for o in out):
            continue
        out.append(c)
        todo.extend(c.base_infos)
    return out


def _own_state(classes) -> tuple[set[str], bool]:
    """(names of the tensors the module owns, whether it holds a torch.nn layer)."""
    names, layer = set(), False
    for c in classes:
        for n in walk(c.node):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_buffer" \
                    and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
                names.add(n.args[0].value)
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and _self_attr(n.targets[0]) \
                    and isinstance(n.value, ast.Call):
                parts = _dotted(n.value.func)
                if parts[-1:] == ["Parameter"]:
                    names.add(_self_attr(n.targets[0]))
                elif "nn" in parts[:-1] and parts[-1][:1].isupper():
                    layer = True  # `self.fc = nn.Linear(...)`: weights nothing realigns
    return names, layer


def _input_device(arg, params: set[str]) -> bool:
    """`x.device` / `device=x.device` / `x` itself for a parameter `x` of the method: the input's device."""
    for n in walk(arg):
        if isinstance(n, ast.Attribute) and n.attr == "device":
            root = n.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in params:
                return True
    return isinstance(arg, ast.Name) and arg.id in params


def _realigned(fn) -> set[str]:
    """Names `self.N` reassigned in `fn` to `self.N.to(<an input's device>)`."""
    a = fn.args
    params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    params.discard("self")
    out = set()
    for n in walk(fn):
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
            continue
        name = _self_attr(n.targets[0])
        call = n.value
        if name is None or not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) \
                or call.func.attr != "to" or _self_attr(call.func.value) != name:
            continue
        if any(_input_device(x, params) for x in [*call.args, *(k.value for k in call.keywords)]):
            out.add(name)
    return out


def _reachable(cls, start: str) -> list:
    """The methods `start` runs on `self` (as dispatched from `cls`), transitively, `start` included."""
    found, todo, seen = [], [start], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        hit = cls.method(name)
        if hit is None:
            continue
        fn = hit[0]
        found.append(fn)
        for n in walk(fn):
            if isinstance(n, ast.Call):
                callee = _self_attr(n.func)
                if callee is not None:
                    todo.append(callee)
    return found


def follows_input_device(cls, cache: dict) -> bool:
    """True when the module's forward realigns every tensor the module owns to an input's device."""
    key = ("follows-input-device", id(cls))
    hit = cache.get(key)
    if hit is not None:
        return hit
    names, layer = _own_state(_classes(cls))
    result = False
    if names and not layer:
        moved = set()
        for fn in _reachable(cls, "forward"):
            moved |= _realigned(fn)
        result = names <= moved
    cache[key] = result
    return result
