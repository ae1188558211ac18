"""Columns between devflow's code points and the negotiated LSP position encoding.

devflow columns are 0-based code points (str indices); LSP characters count utf-16 code units
by default, or utf-8 bytes / utf-32 code points when negotiated. Only lines with non-ASCII text
differ, so the fast path is a plain `isascii()` check.
"""

from __future__ import annotations

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _units(ch: str, encoding: str) -> int:
    if encoding == UTF8:
        return len(ch.encode("utf-8"))
    if encoding == UTF16:
        return 2 if ord(ch) > 0xFFFF else 1
    return 1


def to_units(line: str, col: int, encoding: str) -> int:
    """LSP character offset of code-point column `col` in `line` (clamped to the line)."""
    col = max(0, min(col, len(line)))
    prefix = line[:col]
    if encoding == UTF32 or prefix.isascii():
        return col
    if encoding == UTF8:
        return len(prefix.encode("utf-8", "surrogatepass"))
    return col + sum(1 for ch in prefix if ord(ch) > 0xFFFF)


def from_units(line: str, units: int, encoding: str) -> int:
    """Code-point column of LSP character offset `units` in `line` (clamped; a position inside
    a multi-unit character rounds down to that character)."""
    units = max(0, units)
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    seen = 0
    for i, ch in enumerate(line):
        n = _units(ch, encoding)
        if seen + n > units:
            return i
        seen += n
    return len(line)
