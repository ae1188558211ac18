"""A fix is offered only where the fixed program can run: every name an inserted statement reads must be
bound at the insertion point (a parameter, an earlier assignment in the same function or an enclosing
one, a module-level name, a builtin). `model.to(x.device)` above the loop that defines `x` raises
UnboundLocalError: that fix is dropped, the finding stays.
"""

from __future__ import annotations

import ast
import builtins

from devflow.model import Fix

_BUILTINS = frozenset(dir(builtins))


def _reads(text: str) -> set[str] | None:
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return None
    names = list(ast.walk(tree))
    own = {n.id for n in names if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}  # e.g. a for target
    return {n.id for n in names if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own


def _enclosing_functions(tree: ast.Module, line: int, indent: int | None = None) -> list[ast.AST]:
    """Functions whose body holds `line`, outermost first; with the inserted text's `indent`, also one
    whose last line is just above (a statement inserted after a function's last statement)."""
    out: list[ast.AST] = []
    body = tree.body

    def holds(st) -> bool:
        end = st.end_lineno or st.lineno
        return st.body[0].lineno <= line <= end or \
            (indent is not None and line == end + 1 and indent >= st.body[0].col_offset)

    while True:
        inner = next((st for st in _walk_defs(body)
                      if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and st.body and holds(st)), None)
        if inner is None:
            return out
        out.append(inner)
        body = inner.body


def _walk_defs(body: list[ast.stmt]):
    """Statements of a block and of the blocks it heads, not of nested functions or classes' methods
    (a class body is entered: methods are found as functions)."""
    stack = list(reversed(body))
    while stack:
        st = stack.pop()
        yield st
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(st, name, None)
            if sub:
                stack.extend(reversed(sub))


def _header(st: ast.stmt) -> list[ast.AST]:
    """A statement without the blocks it heads (a `for`'s target and iterable, a `with`'s items)."""
    out: list[ast.AST] = []
    for field, value in ast.iter_fields(st):
        if field in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        out.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, ast.AST))
    return out


def _bound_in(fn: ast.AST, before: int | None) -> set[str]:
    """Names a function (or the module) binds on lines before `before` (None: on any line)."""
    names: set[str] = set()
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = fn.args
        names.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
        names.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)

    def early(n: ast.AST) -> bool:
        return before is None or getattr(n, "lineno", before) < before

    for st in _walk_defs(fn.body):
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if early(st):
                names.add(st.name)
            continue
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            if early(st):
                names.update((a.asname or a.name).split(".")[0] for a in st.names)
            continue
        if isinstance(st, (ast.Global, ast.Nonlocal)):
            names.update(st.names)
            continue
        if isinstance(st, ast.ExceptHandler) and st.name and early(st):
            names.add(st.name)
        for root in _header(st):
            for n in ast.walk(root):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and early(n):
                    names.add(n.id)
    return names


def names_bound(tree: ast.Module, line: int, text: str) -> bool:
    """Whether every name `text` reads is bound before `line` (1-based, where the text is inserted,
    at the text's own indentation)."""
    reads = _reads(text)
    if reads is None:
        return False
    missing = reads - _BUILTINS
    if not missing:
        return True
    functions = _enclosing_functions(tree, line, len(text) - len(text.lstrip(" \t")))
    if not functions:
        return not (missing - _bound_in(tree, line))
    for fn in functions:
        missing -= _bound_in(fn, line)
    return not (missing - _bound_in(tree, None))


def statement_fix_runs(fix: Fix | None, tree: ast.Module, kind: str) -> Fix | None:
    """The fix, or None when a statement it inserts reads a name not bound where it goes."""
    if fix is None or kind not in ("insert_before", "insert_after"):
        return fix
    for e in fix.edits:
        if e.span.line == e.span.end_line and e.span.col == e.span.end_col and e.new_text.strip() \
                and not e.new_text.lstrip().startswith(("import ", "from ")):
            at = e.span.line + (1 if e.span.col > 0 else 0)  # an insertion at the end of the last line
            if not names_bound(tree, at, e.new_text):
                return None
    return fix
