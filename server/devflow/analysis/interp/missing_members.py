"""A member a plain project class cannot have: Python looks an attribute up on the instance, then on the
class and its bases; a class whose every base is a project class (or `object`), none with `__getattr__` /
`__getattribute__`, no class decorator or metaclass, and no class-level binding of the name, has no such
member, and reading it raises AttributeError. A path that reads it ends there: when one of several objects
(`self.model = A() if t == "a" else B()`) lacks the method called, the call runs on the others."""

from __future__ import annotations

import ast

_LOOKUP_HOOKS = ("__getattr__", "__getattribute__")


def lacks_member(cls, attr: str) -> bool:
    """True when instances of `cls` (a project ClassInfo) have no member `attr` besides those set on the
    instance itself: every class on the way is known and none can supply it."""
    return _lacks(cls, attr, set())


def _lacks(cls, attr: str, seen: set) -> bool:
    if id(cls) in seen:
        return True
    seen.add(id(cls))
    node = cls.node
    if node.decorator_list or any(k.arg == "metaclass" for k in node.keywords):
        return False  # may add members this lookup does not see
    if attr in cls.methods or any(h in cls.methods for h in _LOOKUP_HOOKS) or _binds(node, attr) \
            or any(_sets_on_self(fn, attr) for fn in cls.methods.values()):
        return False
    linked = {b.name for b in cls.base_infos}
    for base in cls.bases:
        if base != "object" and base.rsplit(".", 1)[-1] not in linked:
            return False  # a library base (or one not resolved): its members are not known
    return all(_lacks(b, attr, seen) for b in cls.base_infos)


def _sets_on_self(fn, attr: str) -> bool:
    """A method stores `self.<attr>` (or calls setattr): instances may have it where this run did not look."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Store):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr":
            return True
    return False


def _binds(node: ast.ClassDef, attr: str) -> bool:
    """The class body binds `attr` (an assignment, a nested def or class, an import): a class attribute."""
    for st in node.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and st.name == attr:
            return True
        targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, (ast.AnnAssign, ast.AugAssign)) else []
        if any(isinstance(n, ast.Name) and n.id == attr for t in targets for n in ast.walk(t)):
            return True
        if isinstance(st, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name.split(".")[0]) == attr for a in st.names):
            return True
        if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign,
                               ast.AugAssign, ast.Import, ast.ImportFrom, ast.Expr, ast.Pass)):
            return True  # an `if` / `for` / `with` in the class body may bind anything
    return False


def getattr_hook(cls, attr: str):
    """(def, owner) of the `__getattr__` Python calls for `attr` on an instance of `cls` (a project ClassInfo):
    no class on the way defines or binds `attr`, and one defines `__getattr__` (a wrapper handing every other
    member, `.to()` included, to the object it wraps). None when the lookup does not reach it, or may not."""
    if attr.startswith("__") or not _no_class_member(cls, attr, set()):
        return None
    return cls.method("__getattr__")


def _no_class_member(cls, attr: str, seen: set) -> bool:
    if id(cls) in seen:
        return True
    seen.add(id(cls))
    node = cls.node
    if node.decorator_list or any(k.arg == "metaclass" for k in node.keywords) or attr in cls.methods \
            or "__getattribute__" in cls.methods or _binds(node, attr):
        return False
    linked = {b.name for b in cls.base_infos}
    if any(base != "object" and base.rsplit(".", 1)[-1] not in linked for base in cls.bases):
        return False  # a library base: its members are not known
    return all(_no_class_member(b, attr, seen) for b in cls.base_infos)
