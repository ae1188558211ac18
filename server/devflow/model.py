"""The data that crosses module boundaries: what the engine finds and how consumers see it.

Coordinates everywhere in devflow's Python code: `line` is 1-based, `col` is a 0-based offset
in *code points* (str indices) within that line. The engine converts `ast` byte offsets to
code points; the language server converts code points to the negotiated LSP encoding; the
CLI prints `col + 1`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "info", "hint"]
Applicability = Literal["safe", "unsafe"]


@dataclass(frozen=True, order=True)
class Span:
    line: int
    col: int
    end_line: int
    end_col: int

    def to_json(self) -> dict:
        return {"line": self.line, "column": self.col + 1, "end_line": self.end_line, "end_column": self.end_col + 1}


@dataclass(frozen=True)
class Edit:
    """Replace the text in `span` by `new_text` (an insertion has an empty span)."""

    span: Span
    new_text: str

    def to_json(self) -> dict:
        return {**self.span.to_json(), "new_text": self.new_text}


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[Edit, ...]

    def to_json(self) -> dict:
        return {"title": self.title, "applicability": self.applicability, "edits": [e.to_json() for e in self.edits]}


@dataclass(frozen=True)
class Related:
    """A line that gave one side of a mix its device ("model moved at line 12")."""

    span: Span
    message: str

    def to_json(self) -> dict:
        return {**self.span.to_json(), "message": self.message}


@dataclass(frozen=True)
class Diagnostic:
    code: str  # "DEV101"
    message: str
    span: Span
    severity: Severity = "error"
    related: tuple[Related, ...] = ()
    fix: Fix | None = None

    def to_json(self, path: str | None = None) -> dict:
        out = {"path": path} if path is not None else {}
        out.update(self.span.to_json())
        out.update(
            code=self.code,
            severity=self.severity,
            message=self.message,
            related=[r.to_json() for r in self.related],
            fix=self.fix.to_json() if self.fix else None,
        )
        return out


@dataclass(frozen=True)
class DeviceHint:
    """The inferred device of a name or expression, for hover and inlay hints.

    `device` is the rendered lattice value ("cpu", "cuda:0", "`device`", ...); `reason` says why
    ("moved by `model.to(device)` at line 12"); `kind` is "tensor", "module", "optimizer" or "value".
    `is_assignment` marks the target of an assignment (where inlay hints go).
    """

    span: Span
    name: str
    device: str
    reason: str
    kind: str = "tensor"
    is_assignment: bool = False


@dataclass
class FileResult:
    path: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    hints: list[DeviceHint] = field(default_factory=list)
    # A problem with the file itself (syntax error, undecodable bytes, unreadable): a clear
    # sentence for the user; the file then has no diagnostics from the rules.
    error: str | None = None
    error_span: Span | None = None
    # Rules that raised on this file: "DEV101: ValueError: ..." (logged, the rest still reported).
    rule_errors: list[str] = field(default_factory=list)
    # The analysis stopped at the caller's deadline: the diagnostics cover part of the file only.
    partial: bool = False
    # The project files the analysis read (absolute paths): a change to one of them can change
    # this result (an editor re-checks the file then).
    depends_on: tuple[str, ...] = ()
    # Files whose saved text this result depends on: the scripts importing this file whose runs
    # place findings in it (and what those runs read); an editor re-checks the file when one is saved.
    depends_on_saved: tuple[str, ...] = ()
