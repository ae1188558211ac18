"""Just enough scope analysis for the rewrites to stay semantics-preserving."""

from __future__ import annotations

import ast
import builtins
import copy
import symtable

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPES = FUNCS + (ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
BUILTINS = set(dir(builtins))


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    out = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def chain(node: ast.AST, up: dict) -> list[ast.AST]:
    """Enclosing nodes, innermost first."""
    out = []
    while node in up:
        node = up[node]
        out.append(node)
    return out


def enclosing_scope(node: ast.AST, up: dict) -> ast.AST | None:
    """The innermost function or class around `node` (None: module level)."""
    for p in chain(node, up):
        if isinstance(p, FUNCS + (ast.ClassDef,)):
            return p
    return None


def statement_list(node: ast.stmt, up: dict) -> tuple[ast.AST, str, list]:
    parent = up[node]
    for fld in ("body", "orelse", "finalbody", "handlers"):
        seq = getattr(parent, fld, None)
        if isinstance(seq, list) and any(s is node for s in seq):
            return parent, fld, seq
    raise ValueError("statement not found in its parent")


def walk_scope(node: ast.AST):
    """Nodes of one scope: does not enter nested functions, classes, lambdas, comprehensions."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, SCOPES):
            continue
        todo.extend(ast.iter_child_nodes(n))


def function_locals(fn: ast.AST) -> set[str]:
    """Names bound in a function's own scope (parameters included)."""
    out: set[str] = set()
    if isinstance(fn, FUNCS + (ast.Lambda,)):
        a = fn.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
            if arg is not None:
                out.add(arg.arg)
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    for stmt in body:
        for n in [stmt, *walk_scope(stmt)]:
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, FUNCS + (ast.ClassDef,)):
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                out.add(n.name)
    declared = {name for n in walk_scope(fn) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    return out - declared


def declared(fn: ast.AST) -> set[str]:
    return {name for n in walk_scope(fn) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}


def module_names(tree: ast.Module) -> set[str]:
    return function_locals(ast.Module(body=tree.body, type_ignores=[]))


def reads_and_writes(stmts: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """Free names the statements read (also from nested lambdas / comprehensions) and the names
    they bind, as Python's own symbol table sees them when the statements form a function body."""
    probe = make_function("_mm_probe", [], copy.deepcopy(stmts))
    src = ast.unparse(ast.fix_missing_locations(ast.Module([probe], [])))
    top = symtable.symtable(src, "<probe>", "exec").get_children()[0]
    reads, writes = set(), set()
    for s in top.get_symbols():
        if s.is_assigned() or s.is_imported():
            writes.add(s.get_name())
        if s.is_referenced():
            reads.add(s.get_name())

    def child(t):
        for s in t.get_symbols():
            if (s.is_global() and not s.is_declared_global()) or s.is_free():
                reads.add(s.get_name())
        for c in t.get_children():
            child(c)

    for c in top.get_children():
        child(c)
    # `v *= g` reads v before it binds it (the symbol table marks it assigned only)
    reads |= {n.target.id for st in stmts for n in ast.walk(st)
              if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
    return reads, writes


def make_function(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    fn = ast.parse(f"def {name}({', '.join(params)}): pass").body[0]
    fn.body = body or [ast.Pass()]
    return fn


def has_any(stmts: list[ast.stmt], kinds: tuple) -> bool:
    """True when a node of `kinds` occurs in the statements' own scope."""
    for s in stmts:
        for n in [s, *walk_scope(s)]:
            if isinstance(n, kinds):
                return True
    return False


def loop_escapes(stmts: list[ast.stmt]) -> bool:
    """break / continue that would leave the statements (not inside a loop of their own)."""
    def visit(n, in_loop):
        if isinstance(n, (ast.Break, ast.Continue)) and not in_loop:
            return True
        if isinstance(n, SCOPES):
            return False
        for fld, val in ast.iter_fields(n):
            kids = val if isinstance(val, list) else [val]
            inner = in_loop or (isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and fld == "body")
            for k in kids:
                if isinstance(k, ast.AST) and visit(k, inner):
                    return True
        return False
    return any(visit(s, False) for s in stmts)


def uses_zero_arg_super(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args
               for s in stmts for n in ast.walk(s))


def fresh(base: str, taken: set[str]) -> str:
    name, i = base, 2
    while name in taken:
        name, i = f"{base}{i}", i + 1
    taken.add(name)
    return name


def all_identifiers(trees) -> set[str]:
    out = set()
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                out.add(n.id)
            elif isinstance(n, ast.Attribute):
                out.add(n.attr)
            elif isinstance(n, FUNCS + (ast.ClassDef,)):
                out.add(n.name)
            elif isinstance(n, ast.arg):
                out.add(n.arg)
            elif isinstance(n, ast.alias):
                out.add((n.asname or n.name).split(".")[0])
    return out
