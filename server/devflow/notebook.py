"""Notebooks as one program: code cells joined in order, with a map back to cells.

IPython syntax (`%magic`, `!shell`, `?help`) is blanked to a comment of the same length so that
the joined text parses and columns stay put.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass

from devflow.lines import normalize

_IPYTHON_LINE = re.compile(r"^(\s*)([%!?].*|.*\?\s*)$")


def _blank_ipython(cell: str) -> str:
    lines = cell.split("\n")
    for i, line in enumerate(lines):
        m = _IPYTHON_LINE.match(line)
        if m and line.strip() and not line.lstrip().startswith("#"):
            body = line[len(m.group(1)):]
            if body[0] in "%!?" or body.rstrip().endswith("?"):
                lines[i] = m.group(1) + "#" + body[1:] if len(body) > 0 else line
    return "\n".join(lines)


@dataclass(frozen=True)
class JoinedCells:
    source: str
    cell_starts: tuple[int, ...]  # 1-based line in `source` where each cell begins

    def to_cell(self, line: int) -> tuple[int, int]:
        """(cell index, 1-based line within that cell) of a 1-based line of `source`."""
        i = max(bisect_right(self.cell_starts, line) - 1, 0)
        return i, line - self.cell_starts[i] + 1

    def to_joined(self, cell: int, line: int) -> int:
        return self.cell_starts[cell] + line - 1


def join_cells(cells: list[str]) -> JoinedCells:
    parts: list[str] = []
    starts: list[int] = []
    line = 1
    for cell in cells:
        text = _blank_ipython(normalize(cell))
        if not text.endswith("\n"):
            text += "\n"
        starts.append(line)
        parts.append(text)
        line += text.count("\n")
    return JoinedCells("".join(parts), tuple(starts))


@dataclass(frozen=True)
class ParsedNotebook:
    document: dict  # the whole notebook JSON, for writing fixes back
    indices: tuple[int, ...]  # position in document["cells"] of each code cell
    sources: tuple[str, ...]  # each code cell's source


def parse_ipynb(text: str) -> ParsedNotebook:
    """The code cells of an .ipynb document; ValueError with a one-line reason on a malformed one."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a valid notebook: JSON error at line {e.lineno}, column {e.colno}: {e.msg}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("not a valid notebook: no 'cells' list")
    indices, sources = [], []
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict):
            raise ValueError(f"not a valid notebook: cell {i + 1} is not an object")
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            src = "".join(src)
        elif not isinstance(src, str):
            raise ValueError(f"not a valid notebook: cell {i + 1} has a source that is not text")
        indices.append(i)
        sources.append(src)
    return ParsedNotebook(nb, tuple(indices), tuple(sources))


def code_cells_of_ipynb(text: str) -> list[str]:
    """The code cells' sources of an .ipynb document (raises ValueError on a malformed one)."""
    return list(parse_ipynb(text).sources)
