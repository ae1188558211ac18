"""Move the model classes (nn.Module subclasses) of the entry script into their own module and
import them. What the classes need at module level (helper functions, constants such as a global
`device`) moves with them when it is bound exactly once; the script's imports are copied."""

from __future__ import annotations

import ast

from .project import NotApplicable, Project
from .scopes import FUNCS, fresh, module_names, reads_and_writes


def _import_table(tree: ast.Module) -> dict[str, str]:
    out = {}
    for s in tree.body:
        if isinstance(s, ast.Import):
            for a in s.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(s, ast.ImportFrom) and s.module and not s.level:
            for a in s.names:
                out[a.asname or a.name] = f"{s.module}.{a.name}"
    return out


def _dotted(e: ast.expr, imports: dict[str, str]) -> str | None:
    parts = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    if not isinstance(e, ast.Name):
        return None
    return ".".join([imports.get(e.id, e.id), *reversed(parts)])


def _is_model(cls: ast.ClassDef, imports, models: set[str]) -> bool:
    for b in cls.bases:
        d = _dotted(b, imports) or ""
        if d.startswith("torch.nn.") or d in models:
            return True
    return False


def _bound(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, FUNCS + (ast.ClassDef,)):
        return {stmt.name}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if all(isinstance(t, ast.Name) for t in targets):
            return {t.id for t in targets}
    return set()


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def split_module(proj: Project, what: str = "models") -> Project:
    """what: "models" (the nn.Module classes, into `networks`) or "functions" (the module-level functions
    other than the entry point, into `helpers`: a user's utils module)."""
    tree = proj.entry_tree
    imports = _import_table(tree)
    models: set[str] = set()
    for s in tree.body:
        if what == "models" and isinstance(s, ast.ClassDef) and _is_model(s, imports, models):
            models.add(s.name)
        elif what == "functions" and isinstance(s, FUNCS) and s.name not in ("main", "run", "train"):
            models.add(s.name)
    if not models:
        raise NotApplicable("no nn.Module class in the script" if what == "models" else "no helper function")
    # how often each module-level name is bound, and names declared global anywhere
    counts: dict[str, int] = {}
    for s in tree.body:
        for n in ast.walk(s) if not isinstance(s, FUNCS + (ast.ClassDef,)) else []:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                counts[n.id] = counts.get(n.id, 0) + 1
        for name in _bound(s):
            if isinstance(s, FUNCS + (ast.ClassDef,)):
                counts[name] = counts.get(name, 0) + 1
    globals_declared = {x for n in ast.walk(tree) if isinstance(n, ast.Global) for x in n.names}
    by_name = {name: s for s in tree.body for name in _bound(s)}
    top_level = module_names(tree)
    moved: list[ast.stmt] = [s for s in tree.body if isinstance(s, (ast.ClassDef, *FUNCS)) and s.name in models]
    if any(isinstance(n, ast.Global) for s in moved for n in ast.walk(s)):
        raise NotApplicable("a moved definition rebinds a module global")
    todo = list(moved)
    while todo:
        s = todo.pop()
        for name in reads_and_writes([s])[0] - set(imports) - _bound(s):
            dep = by_name.get(name)
            if dep is None:
                if name in top_level:
                    raise NotApplicable(f"the model classes read `{name}`, bound by a statement that cannot move")
                continue
            if dep in moved:
                continue
            if counts.get(name, 0) != 1 or name in globals_declared:
                raise NotApplicable(f"the model classes read `{name}`, which is rebound")
            moved.append(dep)
            todo.append(dep)
    moved_ids = {id(s) for s in moved}
    order = [s for s in tree.body if id(s) in moved_ids]
    taken = proj.module_names() | set(top_level) | {"buggy", "fixed", "fixture"}
    mod = fresh("networks" if what == "models" else "helpers", taken)
    # the new module sits next to the script; inside a package it is imported relatively
    folder = proj.entry.rpartition("/")[0]
    package = bool(folder) and f"{folder}/__init__.py" in proj.trees
    header = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    first = next(i for i, s in enumerate(tree.body) if id(s) in moved_ids)
    names = sorted({n for s in order for n in _bound(s)})
    imp = ast.parse(f"from {'.' if package else ''}{mod} import {', '.join(names)}").body[0]
    rest = [s for s in tree.body if id(s) not in moved_ids]
    rest.insert(sum(1 for s in tree.body[:first] if id(s) not in moved_ids), imp)
    tree.body = rest
    docstring = []
    proj.trees[f"{folder}/{mod}.py" if folder else f"{mod}.py"] = ast.Module(body=[*docstring, *[_copy_import(s) for s in header], *order], type_ignores=[])
    return proj


def _copy_import(s: ast.stmt) -> ast.stmt:
    return ast.parse(ast.unparse(s)).body[0]
