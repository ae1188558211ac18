"""A faster `ast.walk`: the same nodes in the same (breadth-first) order, as a list.

`ast.walk` pays for a generator, `iter_child_nodes` and `iter_fields` per node; the engine walks
function bodies often enough (forward() inputs, buffer rules) for that to be a tenth of its time.
"""

from __future__ import annotations

import ast

_AST = ast.AST


def walk(node: ast.AST) -> list[ast.AST]:
    out = [node]
    append = out.append
    for n in out:  # grows while it is read: breadth-first, like ast.walk
        for name in n._fields:
            v = getattr(n, name, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, _AST):
                        append(x)
            elif isinstance(v, _AST):
                append(v)
    return out


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def statements(node: ast.AST) -> list[ast.AST]:
    """`node` and every statement under it (nested functions and classes too), breadth-first;
    the expressions inside them are not visited. What a statement-level search needs, at a
    fraction of a full walk. (Except handlers and match cases come along as the blocks they are.)"""
    out = [node]
    append = out.append
    for n in out:
        for name in _BLOCKS:
            block = getattr(n, name, None)
            if block:
                for st in block:
                    append(st)
    return out
