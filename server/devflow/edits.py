"""Applying text edits (fixes) to a source string, in devflow's coordinates (model.py)."""

from __future__ import annotations

from collections.abc import Iterable

from devflow.lines import line_starts as _line_starts
from devflow.model import Edit, Span


def offset_of(source: str, line: int, col: int, starts: list[int] | None = None) -> int:
    """String index of (1-based line, 0-based code-point column); clamps past the end."""
    starts = starts if starts is not None else _line_starts(source)
    if line > len(starts):
        return len(source)
    return min(starts[line - 1] + col, len(source))


def overlaps(a: Span, b: Span) -> bool:
    return (a.line, a.col) < (b.end_line, b.end_col) and (b.line, b.col) < (a.end_line, a.end_col)


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits; raises ValueError if two edits overlap."""
    ordered = sorted(edits, key=lambda e: (e.span.line, e.span.col, e.span.end_line, e.span.end_col))
    for a, b in zip(ordered, ordered[1:]):
        if overlaps(a.span, b.span):
            raise ValueError(f"overlapping edits at line {a.span.line} and line {b.span.line}")
    starts = _line_starts(source)
    out = source
    for edit in reversed(ordered):
        s = offset_of(source, edit.span.line, edit.span.col, starts)
        e = offset_of(source, edit.span.end_line, edit.span.end_col, starts)
        out = out[:s] + edit.new_text + out[e:]
    return out
