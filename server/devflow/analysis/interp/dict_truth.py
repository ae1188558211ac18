"""Truthiness of an empty dict: `if self.embedding_sizes:` on a `{}` the code built is False.

A dict literal tracks its keys (`exact`) through subscript stores and dict methods; one with no key is
falsy, so the branch under the test is decided (a categorical embedding absent, the cpu stand-in of the
`else` taken). Only while the dict stayed in code the engine follows: handed to a call it does not follow
(`config.fill(overrides)`), it may have been filled, and its truth is not known any more."""

from __future__ import annotations

from devflow.analysis.values import Obj


def known_empty_dict(obj: Obj) -> bool:
    return obj.kind == "dict" and not obj.keys and getattr(obj, "exact", False) \
        and not getattr(obj, "opaque", False) and not getattr(obj, "escaped", False)


def mark_escaped(args, kwargs) -> None:
    """The dicts among the arguments of a call whose effect is not known."""
    for v in [*args, *kwargs.values()]:
        if v.kind == "obj" and v.obj is not None and v.obj.kind == "dict":
            v.obj.escaped = True  # type: ignore[attr-defined]
