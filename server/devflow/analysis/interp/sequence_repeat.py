"""Sequence repetition and concatenation: `(x,) * n`, `[x] * n`, `n * [x]` hold the same values again, in order;
`a + b` of two lists (or two tuples) holds a's values then b's.

`cast_tuple(val, length=1)` helpers (`val if isinstance(val, tuple) else ((val,) * length)`) turn a config value
into a tuple this way; iterating the result yields the original object (a class from a registry, a module), so
what the loop builds with it stays known. With a repeat count that is not a known small int the result holds one
copy of the items: each element is one of them, however many there are.
"""

from __future__ import annotations

import ast

from devflow.analysis.values import Obj, Val

MAX_REPEAT = 64  # a longer literal repetition holds one copy: its elements are the same values


def _sequence(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind in ("tuple", "list") and bool(v.obj.items)


def _count(v: Val) -> int | None:
    """The repeat count when known (an int constant), -1 for an int not known, None for no count."""
    if v.kind == "const" and isinstance(v.const, int) and not isinstance(v.const, bool):
        return v.const
    return -1 if v.kind == "number" else None


def repeated_sequence(op, left: Val, right: Val) -> Val | None:
    """The tuple / list `left * right` makes when one side is a literal-built sequence, the other an int."""
    if not isinstance(op, ast.Mult):
        return None
    seq, n = (left, _count(right)) if _sequence(left) else (right, _count(left)) if _sequence(right) else (None, None)
    if seq is None or n is None:
        return None
    items = list(seq.obj.items)
    if 0 <= n <= MAX_REPEAT:
        items = items * n
    return Val("obj", obj=Obj(seq.obj.kind, items=items))


def concatenated_sequence(op, left: Val, right: Val, join) -> Val | None:
    """`a + b` of two lists or two tuples: a's items then b's; where either holds an unknown number of elements
    (`elem`), the result's elements are the join of all (`features + [torch.zeros(...)]`)."""
    if not isinstance(op, ast.Add) or not all(v.kind == "obj" and v.obj is not None and v.obj.kind in ("tuple", "list")
                                              for v in (left, right)) or left.obj.kind != right.obj.kind:
        return None
    if left.elem is None and right.elem is None:
        return Val("obj", obj=Obj(left.obj.kind, items=[*left.obj.items, *right.obj.items]))
    parts = [v for s in (left, right) for v in ([s.elem, *s.obj.items] if s.elem is not None else s.obj.items)]
    elem = parts[0]
    for v in parts[1:]:
        elem = join(elem, v)
    return Val("obj", obj=Obj(left.obj.kind), elem=elem)
