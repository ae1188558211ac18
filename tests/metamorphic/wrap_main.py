"""Wrap the script's top-level code (everything but imports, definitions and the docstring, plus
the body of `if __name__ == "__main__":`) in a function called from a new main guard. Names
that functions read or declare `global` stay module globals (`global` in the new function)."""

from __future__ import annotations

import ast

from .project import NotApplicable, Project
from .scopes import FUNCS, fresh, module_names


def _is_main_guard(s: ast.stmt) -> bool:
    t = s.test if isinstance(s, ast.If) else None
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__")


def _definition_time_loads(s: ast.stmt) -> set[str]:
    """Names a def / class statement evaluates when it runs (not when it is called)."""
    parts: list[ast.AST] = list(s.decorator_list)
    if isinstance(s, FUNCS):
        parts += [d for d in s.args.defaults + s.args.kw_defaults if d is not None]
        parts += [a.annotation for a in ast.walk(s.args) if isinstance(a, ast.arg) and a.annotation]
        parts += [s.returns] if s.returns else []
    else:
        parts += s.bases + [k.value for k in s.keywords]
        for b in s.body:
            parts += list(_definition_time_nodes(b)) if isinstance(b, FUNCS + (ast.ClassDef,)) else [b]
    return {n.id for p in parts for n in ast.walk(p) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _definition_time_nodes(s):
    yield from s.decorator_list
    if isinstance(s, FUNCS):
        yield from (d for d in s.args.defaults + s.args.kw_defaults if d is not None)
    else:
        yield from s.bases


def _imported_by_others(proj: Project) -> bool:
    """Another project file imports the entry (its top-level code then runs on import, not as a script)."""
    parts = proj.entry[:-3].split("/")
    stem = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]  # a package is imported by its folder
    for name, tree in proj.trees.items():
        if name == proj.entry:
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Import) and any(stem in a.name.split(".") for a in n.names):
                return True
            if isinstance(n, ast.ImportFrom) and (stem in (n.module or "").split(".")
                                                  or any(a.name == stem for a in n.names)):
                return True
    return False


def wrap_main(proj: Project) -> Project:
    tree = proj.entry_tree
    if _imported_by_others(proj):
        raise NotApplicable("the script is imported by another project file")
    head, body = [], []
    defs = []
    for i, s in enumerate(tree.body):
        if i == 0 and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            head.append(s)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            head.append(s)
        elif isinstance(s, FUNCS + (ast.ClassDef,)):
            defs.append(s)
        elif _is_main_guard(s) and not s.orelse:
            body.extend(s.body)
        else:
            body.append(s)
    trivial = len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)
    if not body or trivial:
        raise NotApplicable("no top-level code outside the main guard")
    wrapped = ast.Module(body=body, type_ignores=[])
    assigned = module_names(wrapped)
    if any(_definition_time_loads(d) & assigned for d in defs):
        raise NotApplicable("a definition reads a top-level name when it is defined")
    read_in_defs = {n.id for d in defs for n in ast.walk(d) if isinstance(n, ast.Name)}
    declared_global = {x for n in ast.walk(tree) if isinstance(n, ast.Global) for x in n.names}
    keep_global = sorted(assigned & (read_in_defs | declared_global))
    name = fresh("main", set(module_names(tree)))
    fn = ast.parse(f"def {name}():\n    pass").body[0]
    fn.body = ([ast.Global(names=keep_global)] if keep_global else []) + body
    guard = ast.parse(f'if __name__ == "__main__":\n    {name}()').body[0]
    tree.body = head + defs + [fn, guard]
    return proj
