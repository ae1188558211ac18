"""Facts derived from a function's text alone, kept across runs by that text.

An editor checks a file again at every edit: the tree is new each time, but nearly every function
in it has the same text as before, and a fact that depends on nothing but that text (the globals it
reads, the parameters its body never combines with a tensor) holds again. Within one run such facts
are kept per node (the run's table, or a project file's lasting `FileIndex.facts`); this table spares
the walks of the next run. The key is the function's lines, decorators included, and its columns:
the same text parses to the same tree. It holds strings only (never a node) and is bounded.
"""

from __future__ import annotations

MAX_ENTRIES = 20_000

_TABLE: dict[tuple, object] = {}


def text_key(kind: str, fn, lines: list[str] | None, first: int) -> tuple | None:
    """(kind, columns, the lines of `fn`), or None when the lines are not at hand. `first`: the
    number of `lines[0]` in the tree's numbering (project files are numbered past the checked one)."""
    if lines is None:
        return None
    start = min([d.lineno for d in getattr(fn, "decorator_list", ())] + [fn.lineno])
    end = fn.end_lineno or fn.lineno
    if start < first or end - first >= len(lines):
        return None
    return (kind, type(fn).__name__, fn.col_offset, fn.end_col_offset, "\n".join(lines[start - first:end - first + 1]))


def get(key: tuple | None):
    return _TABLE.get(key) if key is not None else None


def put(key: tuple | None, value) -> None:
    if key is None:
        return
    if len(_TABLE) >= MAX_ENTRIES:
        _TABLE.clear()  # a new workspace's worth of functions: start again
    _TABLE[key] = value
