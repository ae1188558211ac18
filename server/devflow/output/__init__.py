"""Formatting a run's results: text (like ruff), JSON, SARIF 2.1.0.

`Report` is what `devflow check` collected; `render(report, fmt)` returns the text to print.
Positions: devflow's model has 0-based columns; every output here shows 1-based columns. For a
notebook, lines are those of the code cell (`cell` is the 1-based number of the code cell, in
order, markdown cells not counted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from devflow.api import CheckedFile
from devflow.model import Diagnostic, Span

FORMATS = ("text", "json", "sarif")


@dataclass
class Report:
    files: list[CheckedFile]
    fix: bool = False
    unsafe_fixes: bool = False
    quiet: bool = False  # text: the findings only, no summary
    color: bool = False  # text: ANSI colours (a terminal, and NO_COLOR unset)
    warnings: list[str] = field(default_factory=list)

    @property
    def files_checked(self) -> int:
        return len(self.files)

    def findings(self) -> list[tuple[CheckedFile, Diagnostic]]:
        out = [(f, d) for f in self.files for d in f.result.diagnostics]
        out.sort(key=lambda fd: (fd[0].path, fd[1].span.line, fd[1].span.col, fd[1].code))
        return out

    def errors(self) -> list[CheckedFile]:
        return sorted((f for f in self.files if f.result.error is not None), key=lambda f: f.path)

    @property
    def fixed(self) -> int:
        return sum(f.fixed for f in self.files)

    @property
    def remaining(self) -> int:
        return len(self.findings()) + len(self.errors())

    def fixable(self, unsafe: bool) -> int:
        return sum(1 for _, d in self.findings()
                   if d.fix is not None and (unsafe or d.fix.applicability == "safe"))


@dataclass(frozen=True)
class Location:
    """A span as shown to the user: 1-based line and column, and the code cell for notebooks."""

    line: int
    column: int
    end_line: int
    end_column: int
    cell: int | None = None


def locate(file: CheckedFile, span: Span) -> Location:
    if file.cells is None:
        return Location(span.line, span.col + 1, span.end_line, span.end_col + 1)
    cell, line = file.cells.to_cell(span.line)
    end_cell, end_line = file.cells.to_cell(span.end_line)
    if end_cell != cell:  # a span that runs into the next cell is shown up to its own cell's end
        end_line = span.end_line - file.cells.cell_starts[cell] + 1
    return Location(line, span.col + 1, end_line, span.end_col + 1, cell + 1)


_LINE_REF = re.compile(r"\bline (\d+)\b")


def message_of(file: CheckedFile, text: str) -> str:
    """The engine words positions in lines of the program it saw; for a notebook that is the
    joined cells, so "line 12" is rewritten as "cell 2, line 3"."""
    if file.cells is None or "line " not in text:
        return text

    def cell_line(m: re.Match) -> str:
        cell, line = file.cells.to_cell(int(m.group(1)))
        return f"cell {cell + 1}, line {line}"

    return _LINE_REF.sub(cell_line, text)


def error_location(file: CheckedFile) -> Location:
    span = file.result.error_span or Span(1, 0, 1, 0)
    return locate(file, span)


def render(report: Report, fmt: str) -> str:
    if fmt == "json":
        from devflow.output.json_format import render_json

        return render_json(report)
    if fmt == "sarif":
        from devflow.output.sarif import render_sarif

        return render_sarif(report)
    from devflow.output.text import render_text

    return render_text(report)
