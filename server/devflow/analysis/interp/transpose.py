"""`zip(*rows)` transposes: given rows that are all tuples of one known arity (`[(src, dst, t), ...]`, a list
whose element is such a tuple, or whose listed items all are), it yields one column per position, each a sequence of that position's values.
So `src, dst, t = zip(*rows)` / `list(zip(*rows))` binds each name to the column of its position, not to a
join of unlike fields. Rows of unknown shape stay unknown (the caller falls back to its generic zip)."""

from __future__ import annotations

from devflow.analysis.values import Obj, Val


def zip_columns(interp, node, frame, args=()) -> Val | None:
    """The columns of `zip(*rows)` for rows of one known tuple shape, else None. `args`: the rows when the
    call spread a list of known items into them (a collate_fn's samples)."""
    if args:
        shapes = list(args)
    else:
        spread = interp._starred.get(id(node), [])
        if len(spread) != 1:
            return None
        rows = spread[0]
        if rows.kind != "obj" or rows.obj is None or rows.obj.kind not in ("list", "tuple"):
            return None
        shapes = [rows.elem] if rows.elem is not None else list(rows.obj.items)
    if not shapes or any(r.kind != "obj" or r.obj is None or r.obj.kind != "tuple" or not r.obj.items or r.elem is not None
                         or len(r.obj.items) != len(shapes[0].obj.items) for r in shapes):
        return None
    columns = []
    for i in range(len(shapes[0].obj.items)):
        v = shapes[0].obj.items[i]
        for r in shapes[1:]:
            v = interp.join(v, r.obj.items[i])
        columns.append(Val("obj", obj=Obj("tuple"), elem=v))
    return Val("obj", obj=exact_sequence(columns))


def columns_of(v: Val) -> list | None:
    """The columns of a transposition made by `zip_columns` (its length is known), else None."""
    if v.kind == "obj" and v.obj is not None and getattr(v.obj, "columns", False) and v.elem is None:
        return list(v.obj.items)
    return None


def exact_sequence(items: list, kind: str = "tuple") -> Obj:
    out = Obj(kind, items=items)
    out.columns = True  # type: ignore[attr-defined]
    out.exact = True  # type: ignore[attr-defined]
    return out
