"""Which statements of a function are alternatives: they sit in different branches of one `if`, so at
most one of them runs on any path (`if gru: self.cells = [...] else: self.cells = [...]`)."""

from __future__ import annotations

import ast


def _branch_path(block: list, target: ast.AST, path: tuple) -> tuple | None:
    """The (if statement, branch) pairs from `block` down to `target`, or None when it is not there."""
    for st in block:
        if st is target:
            return path
        if isinstance(st, ast.If):
            for branch in ("body", "orelse"):
                found = _branch_path(getattr(st, branch), target, path + ((id(st), branch),))
                if found is not None:
                    return found
            continue
        for name in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(st, name, None)
            if inner:
                found = _branch_path(inner, target, path)
                if found is not None:
                    return found
    return None


def alternatives(fn: ast.AST, a: ast.AST, b: ast.AST) -> bool:
    """True when statements `a` and `b` of `fn` can never both run: one `if` holds one in its body and the
    other in its `else` (an `elif` chain is nested ifs)."""
    pa, pb = _branch_path(fn.body, a, ()), _branch_path(fn.body, b, ())
    if pa is None or pb is None:
        return False
    for (ia, ba), (ib, bb) in zip(pa, pb):
        if ia != ib:
            return False
        if ba != bb:
            return True
    return False
