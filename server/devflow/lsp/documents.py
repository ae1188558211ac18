"""What gets analysed: a snapshot of a Python document or of a whole notebook, and the map from
devflow spans (over the snapshot's source) back to LSP locations in the negotiated encoding.

A notebook is analysed as one program (its code cells joined in order by
`devflow.notebook.join_cells`); its diagnostics land on the cell documents they belong to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from lsprotocol import types

from devflow.lines import split_lines
from devflow.lsp.positions import from_units, to_units
from devflow.model import Span
from devflow.notebook import JoinedCells, join_cells


def uri_to_path(uri: str) -> str | None:
    """Filesystem path of a file: URI (None for untitled:, vscode-notebook-cell:, ...)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if re.match(r"^/[A-Za-z]:", path):  # file:///c:/x on Windows
        path = path[1:]
    return path


@dataclass(frozen=True)
class Cell:
    uri: str
    version: int | None


@dataclass(frozen=True)
class Snapshot:
    """The text of one analysis target at one version.

    `uri` is the text document's or the notebook's; for a notebook `cells` lists its code cells
    in order and `joined` maps joined lines back to them."""

    uri: str
    version: int | None
    source: str
    path: str | None
    cells: tuple[Cell, ...] = ()
    joined: JoinedCells | None = None
    disk_joined: JoinedCells | None = None  # a notebook read from disk (no cell documents to map to)

    @property
    def is_notebook(self) -> bool:
        return self.joined is not None

    @property
    def lines(self) -> list[str]:
        cached = self.__dict__.get("_lines")
        if cached is None:
            cached = split_lines(self.source)
            object.__setattr__(self, "_lines", cached)
        return cached

    def doc_uris(self) -> list[str]:
        """The documents diagnostics are published to."""
        return [c.uri for c in self.cells] if self.is_notebook else [self.uri]

    def version_of(self, uri: str) -> int | None:
        if not self.is_notebook:
            return self.version
        return next((c.version for c in self.cells if c.uri == uri), None)

    # -- devflow coordinates -> LSP ------------------------------------------------------------
    def _doc_line(self, line: int) -> tuple[str, int]:
        """(document uri, 0-based line in it) of a 1-based snapshot line."""
        if not self.is_notebook:
            return self.uri, line - 1
        cell, cell_line = self.joined.to_cell(line)
        return self.cells[cell].uri, cell_line - 1

    def position(self, line: int, col: int, encoding: str) -> tuple[str, types.Position]:
        lines = self.lines
        if line > len(lines):  # past the end: the end of the last line
            line, col = len(lines), len(lines[-1])
        line = max(line, 1)
        uri, doc_line = self._doc_line(line)
        return uri, types.Position(line=doc_line, character=to_units(lines[line - 1], col, encoding))

    def location(self, span: Span, encoding: str) -> tuple[str, types.Range] | None:
        """The LSP range of `span`, or None when it crosses from one cell into another."""
        uri, start = self.position(span.line, span.col, encoding)
        end_uri, end = self.position(span.end_line, span.end_col, encoding)
        if end_uri != uri:
            return None
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return uri, types.Range(start=start, end=end)

    # -- LSP -> devflow coordinates ------------------------------------------------------------
    def to_snapshot(self, uri: str, position: types.Position, encoding: str) -> tuple[int, int] | None:
        """(1-based line, code-point column) in the snapshot of a position in document `uri`."""
        if self.is_notebook:
            idx = next((i for i, c in enumerate(self.cells) if c.uri == uri), None)
            if idx is None:
                return None
            line = self.joined.to_joined(idx, position.line + 1)
        elif uri == self.uri:
            line = position.line + 1
        else:
            return None
        lines = self.lines
        if line > len(lines):
            return None
        return line, from_units(lines[line - 1], position.character, encoding)


def text_snapshot(uri: str, version: int | None, source: str) -> Snapshot:
    return Snapshot(uri=uri, version=version, source=source, path=uri_to_path(uri))


def notebook_snapshot(notebook: types.NotebookDocument, texts: dict[str, str], versions: dict[str, int | None]) -> Snapshot:
    """Snapshot of a notebook: its code cells whose text we hold, in notebook order."""
    cells = [
        Cell(c.document, versions.get(c.document))
        for c in notebook.cells
        if c.kind == types.NotebookCellKind.Code and c.document in texts
    ]
    joined = join_cells([texts[c.uri] for c in cells])
    return Snapshot(
        uri=notebook.uri,
        version=notebook.version,
        source=joined.source,
        path=uri_to_path(notebook.uri),
        cells=tuple(cells),
        joined=joined,
    )
