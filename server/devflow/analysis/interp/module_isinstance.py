"""`isinstance(m, C)` of a module built from a project class whose bases are project classes and
`torch.nn.Module` itself, nothing else: its classes are exactly those project classes, `nn.Module` and
`object`. So `isinstance(m, nn.Identity)` (any other torch class, or a project class not among its bases)
is False and `isinstance(m, nn.Module)` True, and the branch the code takes is known: a loss that registers
its bin positions as a buffer `if not isinstance(self.transform, nn.Identity)` does so for its STFT module.
A base the index does not resolve (a library class, a torch container) may derive from anything: undecided,
except `abc.ABC`, which only lends its metaclass (`class QuantModuleBase(nn.Module, ABC)`).

A module built by a torch.nn class itself (`nn.Linear(16, 8)`) is exactly of that class: `isinstance(m,
nn.Linear)` and `isinstance(m, nn.Module)` are True, `isinstance(m, C)` of a project class C False (no torch
class derives from the project's); another torch class may be one of its bases: undecided. A quantizer's
`if isinstance(model, nn.Linear): model = PTQWrapper(model)` so wraps it."""

from __future__ import annotations

from devflow.analysis.interp.modules import any_base

MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
NEUTRAL_BASES = frozenset({"abc.ABC"})


def derives_from(info, base, seen=None) -> bool:
    """`info` is the project class `base` or derives from it."""
    seen = seen if seen is not None else set()
    if info is base:
        return True
    if id(info) in seen:
        return False
    seen.add(id(info))
    return any(derives_from(b, base, seen) for b in info.base_infos)


def module_isinstance(obj, types: list, index) -> bool | None:
    """True / False when decided for a project module `obj` and the classes `types`, else None."""
    if obj is not None and obj.kind == "module" and obj.cls is None and types and (obj.qual or "").startswith("torch.nn."):
        return _torch_module_isinstance(obj.qual, types)
    if obj is None or obj.kind != "module" or obj.cls is None or not types:
        return None
    if any_base(obj.cls, index, lambda q, resolved: not resolved and q not in MODULE_BASES and q not in NEUTRAL_BASES):
        return None  # a base that is not a project class nor nn.Module itself
    for t in types:
        if t.kind == "class" and t.func is not None and hasattr(t.func, "base_infos"):
            if derives_from(obj.cls, t.func):
                return True
        elif t.kind == "qual" and isinstance(t.const, str) and t.const.startswith("torch."):
            if t.const in MODULE_BASES:
                return True
        else:
            return None  # a class not known here
    return False


def _torch_module_isinstance(qual: str, types: list) -> bool | None:
    undecided = False
    for t in types:
        if t.kind == "class" and t.func is not None and hasattr(t.func, "base_infos"):
            continue  # a project class: never a base of a torch.nn class
        if t.kind == "qual" and isinstance(t.const, str) and (t.const == qual or t.const in MODULE_BASES):
            return True
        undecided = True
    return None if undecided else False
