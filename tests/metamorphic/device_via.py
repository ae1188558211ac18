"""Pass the device through an argparse namespace (`args.device`) or a config dataclass
(`cfg.device`): each variable bound once to a device expression (`torch.device(...)`, a "cuda"
string, `torch.cuda.is_available()`) becomes a field of such an object, and its reads in that
scope (and in functions that see it as a global) read the field."""

from __future__ import annotations

import ast

from .project import TAG, NotApplicable, Project, tag
from .scopes import FUNCS, SCOPES, fresh, all_identifiers, function_locals, module_names, parents, walk_scope


def _is_device_expr(e: ast.expr) -> bool:
    for n in ast.walk(e):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split(":")[0] == "cuda":
            return True
        if isinstance(n, ast.Attribute) and n.attr in ("device", "is_available") and isinstance(n.value, (ast.Name, ast.Attribute)):
            root = n.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id == "torch":
                return True
    return False


def _candidates(scope: ast.AST) -> list[ast.Assign]:
    body = scope.body
    stores: dict[str, int] = {}
    found = []
    for s in body:
        for n in [s] if isinstance(s, SCOPES) else [s, *walk_scope(s)]:
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                stores[n.id] = stores.get(n.id, 0) + 1
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and _is_device_expr(n.value):
                found.append(n)
    params = function_locals(scope) - module_names(ast.Module(body=scope.body, type_ignores=[])) \
        if isinstance(scope, FUNCS) else set()
    return [a for a in found if stores[a.targets[0].id] == 1 and a.targets[0].id not in params]


def _used_by_other_files(tree: ast.Module, proj: Project) -> set[str]:
    """Names other files may read from this module (`from core.constants import DEVICE`,
    `constants.DEVICE`): a module-level device they import keeps its name, or they would break."""
    out: set[str] = set()
    for other in proj.trees.values():
        if other is tree:
            continue
        for n in ast.walk(other):
            if isinstance(n, ast.ImportFrom):
                out.update(a.name for a in n.names)
            elif isinstance(n, ast.Attribute):
                out.add(n.attr)
    return out


def _declared_anywhere(tree: ast.Module) -> set[str]:
    return {x for n in ast.walk(tree) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}


class _Reads(ast.NodeTransformer):
    """Loads of `name` -> `holder.name`, not inside scopes that bind `name` themselves."""

    def __init__(self, name: str, holder: str):
        self.name, self.holder = name, holder

    def visit_Name(self, node):
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            return ast.Attribute(value=ast.Name(id=self.holder, ctx=ast.Load()), attr="device", ctx=ast.Load())
        return node

    def generic_visit(self, node):
        if isinstance(node, SCOPES) and self.name in _binds(node):
            return node
        return super().generic_visit(node)


def _binds(scope: ast.AST) -> set[str]:
    if isinstance(scope, FUNCS + (ast.Lambda,)):
        declared = {x for n in walk_scope(scope) if isinstance(n, ast.Global) for x in n.names}
        return function_locals(scope) - declared
    if isinstance(scope, ast.ClassDef):
        return set()  # class bodies do not hide names from their methods
    return {n.id for g in scope.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}


NAMESPACE = """import argparse
{parser} = argparse.ArgumentParser(add_help=False)
{parser}.add_argument('--device', default=None)
{holder}, _ = {parser}.parse_known_args()
{holder}.device = VALUE
"""

CONFIG = """import dataclasses
@dataclasses.dataclass
class {cls}:
    device: object = None
{holder} = {cls}(device=VALUE)
"""


def device_via(proj: Project, kind: str) -> Project:
    """kind: "args" (argparse namespace) or "config" (a dataclass instance)."""
    taken = all_identifiers(proj.trees.values())
    done = 0
    for tree in proj.trees.values():
        up = parents(tree)
        scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, FUNCS))]
        shared = _used_by_other_files(tree, proj)
        for scope in scopes:
            for assign in _candidates(scope):
                name = assign.targets[0].id
                if name in _declared_anywhere(tree) or (scope is tree and name in shared):
                    continue
                holder = fresh("args" if kind == "args" else "cfg", taken)
                text = (NAMESPACE if kind == "args" else CONFIG).format(
                    parser=fresh("parser", taken), holder=holder, cls=fresh("RunConfig", taken))
                new = ast.parse(text).body
                last = new[-1]
                last.value = _swap_value(last.value, assign.value)
                if getattr(assign, TAG, None):
                    tag(last, getattr(assign, TAG))
                seq = _seq(assign, up)
                at = next(i for i, s in enumerate(seq) if s is assign)
                seq[at:at + 1] = new
                # reads in this scope and in nested scopes that do not bind the name
                body = scope.body
                for i, s in enumerate(body):
                    body[i] = _Reads(name, holder).visit(s)
                done += 1
                up = parents(tree)
    if not done:
        raise NotApplicable("no variable bound once to a device expression")
    return proj


def _swap_value(template: ast.expr, value: ast.expr) -> ast.expr:
    """Put the device expression where the template says VALUE."""
    for n in ast.walk(template):
        for fld, v in ast.iter_fields(n):
            if isinstance(v, ast.Name) and v.id == "VALUE":
                setattr(n, fld, value)
                return template
            if isinstance(v, list):
                for i, x in enumerate(v):
                    if isinstance(x, ast.keyword) and isinstance(x.value, ast.Name) and x.value.id == "VALUE":
                        x.value = value
                        return template
    return value if isinstance(template, ast.Name) and template.id == "VALUE" else template


def _seq(stmt: ast.stmt, up: dict) -> list:
    parent = up[stmt]
    for fld in ("body", "orelse", "finalbody"):
        seq = getattr(parent, fld, None)
        if isinstance(seq, list) and any(s is stmt for s in seq):
            return seq
    raise NotApplicable("device assignment in an unusual place")
