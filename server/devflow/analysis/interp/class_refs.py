"""Class attributes that name a class or function (`distr_cls = Normal`, `layer_cls = nn.Linear`): Python reads
them through the instance (`self.distr_cls(...)`) as the object the class body bound, so the call builds what
that class builds. Only a plain name or dotted name, evaluated once in the file that defines the class, and only
while no file of the run stores `<anything>.attr` (an instance of its own would hide the class attribute)."""

from __future__ import annotations

import ast

from devflow.analysis.values import Val


def class_reference(interp, cls, attr: str) -> Val | None:
    """The value `cls.attr` names when the class body (or a base's) binds it to a name: a library class or
    function (`qual`) or a project class / function; None for anything else."""
    from devflow.analysis.interp.expressions import _all_bases, _stores_attr  # (expressions imports this module)

    for c in [cls] + list(_all_bases(cls)):
        for st in c.node.body:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
            if not any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                continue
            value = st.value
            if not isinstance(value, (ast.Name, ast.Attribute)):
                return None
            main = getattr(interp, "main_unit", None)
            indexes = [interp.index, c.home, main.index if main is not None else None] + \
                [u.index for u in getattr(interp, "units", {}).values() if u is not None]
            if any(ix is not None and _stores_attr(ix, attr) for ix in indexes):
                return None
            cache = interp.__dict__.setdefault("_class_refs", {})
            key = (id(st), attr)
            if key not in cache:
                unit = interp.unit_of_index(c.home) if interp.units else None
                saved = interp.enter(unit) if unit is not None and unit is not interp.unit else None
                try:
                    got = interp.eval(value, interp.module_frame)
                finally:
                    if saved is not None:
                        interp.leave(saved)
                cache[key] = got if got.kind in ("qual", "class", "func") else None
            return cache[key]
    return None
