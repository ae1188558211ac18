"""Class attributes that name a class or function (`distr_cls = Normal`, `layer_cls = nn.Linear`): Python reads
them through the instance (`self.distr_cls(...)`) as the object the class body bound, so the call builds what
that class builds. Only a plain name or dotted name, evaluated once in the file that defines the class, and only
while no file of the run stores `<anything>.attr` (an instance of its own would hide the class attribute)."""

from __future__ import annotations

import ast

from devflow.analysis.interp.class_attrs import class_binding, eval_in_home, instance_may_store
from devflow.analysis.values import Val


def class_reference(interp, cls, attr: str) -> Val | None:
    """The value `cls.attr` names when the class body (or a base's) binds it to a name: a library class or
    function (`qual`) or a project class / function; None for anything else."""
    from devflow.analysis.interp.expressions import _stores_attr  # (expressions imports this module)

    c, value = class_binding(cls, attr)
    if c is None or not isinstance(value, (ast.Name, ast.Attribute)) or \
            instance_may_store(interp, c.home, attr, _stores_attr):
        return None
    got = eval_in_home(interp, c.home, value, "_class_refs")
    return got if got.kind in ("qual", "class", "func") else None
