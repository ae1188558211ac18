"""Notebooks as one program: code cells joined in order, with a map back to cells.

IPython syntax is read the way the kernel's input transformers read it, and each form is replaced by
Python of the same meaning for the analysis, on the same lines (the map back to cells stays exact):
- a cell starting with `%%magic`: the whole cell is the magic's input, not Python -> comments;
- `!cmd` / `%magic` / `?obj` / `obj?` / `obj??` at the start of a statement, with any backslash
  continuation lines -> `pass` (the statement may be a block's only one) and comments;
- `x = !cmd` / `x = %magic ...` -> `x = None`, so that `x` stays bound;
- automagic (`pip install x`, `cd dir`: a line magic without `%`) where the line is not Python -> `pass`.
Lines inside brackets or triple-quoted strings are never statements, as for the kernel.
"""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_right
from dataclasses import dataclass

from devflow.lines import normalize
from devflow.model import Diagnostic, Severity, Span

# Line magics IPython runs without `%` (automagic is on by default): `pip install x` on its own line.
_AUTOMAGIC = re.compile(r"^\s*(pip|conda|mamba|cd|pwd|env|load_ext|reload_ext|matplotlib|time|timeit|run|"
                        r"autoreload|aimport|history|reset|who|whos|store|pdb|config|alias|bookmark)\s+\S")
_ASSIGN_ESCAPE = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)(\s*=\s*)[!%]")


def _scan(line: str, depth: int, quote: str | None) -> tuple[int, str | None, int, bool]:
    """Lexical state after `line`: (bracket depth, open triple quote, end of the code part before
    any comment, whether the line ends with a backslash continuation)."""
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            i += 1
            continue
        if c == "#":
            return depth, None, i, False
        if c in "\"'":
            triple = line[i:i + 3]
            if triple in ('"""', "'''"):
                quote = triple
                i += 3
                continue
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
        i += 1
    cont = quote is None and line.rstrip(" \t").endswith("\\")
    return depth, quote, n, cont


def _parses(statement: str) -> bool:
    try:
        compile(statement, "<cell>", "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
        return True
    except (SyntaxError, ValueError):
        return False


def _comment(line: str) -> str:
    stripped = line.lstrip()
    return line if not stripped or stripped.startswith("#") else line[:len(line) - len(stripped)] + "#" + stripped

def _blank_ipython(cell: str) -> str:
    lines = cell.split("\n")
    first = next((ln for ln in lines if ln.strip()), "")
    if first.lstrip().startswith("%%"):  # a cell magic owns the whole cell
        return "\n".join(_comment(ln) for ln in lines)
    depth, quote, continued, escaped = 0, None, False, False
    for i, line in enumerate(lines):
        at_statement = depth == 0 and quote is None and not continued
        if not at_statement:
            if escaped:  # a continuation line of `!cmd \`
                lines[i] = _comment(line)
                continued = line.rstrip(" \t").endswith("\\")
                escaped = continued
                continue
            depth, quote, _, continued = _scan(line, depth, quote)
            continue
        escaped = False
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        m = _ASSIGN_ESCAPE.match(line)
        new_depth, new_quote, code_end, cont = _scan(line, 0, None)
        code = line[:code_end].rstrip()
        if m:
            lines[i] = m.group(1) + m.group(2) + m.group(3) + "None  # " + line[m.end() - 1:]
            escaped = continued = line.rstrip(" \t").endswith("\\")
        elif stripped[:1] in ("!", "%", "?") or (code.endswith("?") and new_depth == 0 and new_quote is None) \
                or (_AUTOMAGIC.match(line) and not cont and new_depth == 0 and not _parses(stripped)):
            lines[i] = indent + "pass  # " + stripped
            escaped = continued = line.rstrip(" \t").endswith("\\")
        else:
            depth, quote, continued = new_depth, new_quote, cont
    return "\n".join(lines)


@dataclass(frozen=True)
class CellError:
    """A code cell that is not valid Python on its own. The kernel compiles each cell apart, so such
    a cell raises SyntaxError and runs nothing while the other cells run: it is left out of the
    joined program (its lines become comments) and the rest is still checked."""

    cell: int  # index among the code cells
    line: int  # 1-based, in the joined source
    col: int  # 0-based
    message: str


@dataclass(frozen=True)
class JoinedCells:
    source: str
    cell_starts: tuple[int, ...]  # 1-based line in `source` where each cell begins
    errors: tuple[CellError, ...] = ()

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
    source = "".join(parts)
    if _syntax_error(source) is None:
        return JoinedCells(source, tuple(starts))
    errors = []
    for i, text in enumerate(parts):
        e = _syntax_error(text)
        if e is None:
            continue
        lineno = min(max(e.lineno or 1, 1), max(text.count("\n"), 1))
        errors.append(CellError(i, starts[i] + lineno - 1, max((e.offset or 1) - 1, 0), e.msg))
        parts[i] = "\n".join(_comment(ln) for ln in text.split("\n"))
    return JoinedCells("".join(parts), tuple(starts), tuple(errors))


def cell_error_diagnostics(errors: tuple[CellError, ...], severity: Severity = "error") -> list[Diagnostic]:
    """E999 on each cell that does not parse (positions in the joined source)."""
    return [Diagnostic("E999", f"syntax error in this cell: {e.message}; devflow checked the other cells "
                               f"without it (the kernel runs them, not this one)",
                       Span(e.line, e.col, e.line, e.col + 1), severity) for e in errors]


def _syntax_error(source: str) -> SyntaxError | None:
    try:
        compile(source, "<cell>", "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
    except SyntaxError as e:
        return e
    except ValueError as e:  # a NUL byte
        return SyntaxError(str(e), ("<cell>", 1, 1, ""))
    return None


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
