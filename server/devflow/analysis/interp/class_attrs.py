"""Class attributes read through an instance (`self.attr` where the class body, or a base's, binds `attr`).

Python finds `attr` on the class when the instance has none of its own, so the value is what the class body
bound. Three readers use it: literals (`device = "cuda"`), registries (`METRICS = {...}`) and references to a class
or function (`distr_cls = Normal`)."""

from __future__ import annotations

import ast


def all_bases(cls):
    for b in cls.base_infos:
        yield b
        yield from all_bases(b)


def class_binding(cls, attr: str):
    """(the class that binds `attr` in its body, the value expression): the first such statement of `cls` or of a
    base, in lookup order; (None, None) when none binds it."""
    for c in [cls] + list(all_bases(cls)):
        for st in c.node.body:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                return c, st.value
    return None, None


def instance_may_store(interp, home, attr: str, stores_attr) -> bool:
    """Some file of the run stores `<anything>.attr`: an instance attribute of its own would hide the class's."""
    main = getattr(interp, "main_unit", None)
    indexes = [interp.index, home, main.index if main is not None else None] + \
        [u.index for u in getattr(interp, "units", {}).values() if u is not None]
    return any(ix is not None and stores_attr(ix, attr) for ix in indexes)


def eval_in_home(interp, home, value: ast.expr, cache_name: str):
    """`value` evaluated once, at module level of the file that defines the class (memoised per expression)."""
    cache = interp.__dict__.setdefault(cache_name, {})
    key = id(value)
    if key not in cache:
        unit = interp.unit_of_index(home) if interp.units else None
        saved = interp.enter(unit) if unit is not None and unit is not interp.unit else None
        try:
            cache[key] = interp.eval(value, interp.module_frame)
        finally:
            if saved is not None:
                interp.leave(saved)
    return cache[key]
