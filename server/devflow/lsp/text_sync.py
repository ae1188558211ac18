"""The server's copy of each open document, kept in step with the editor's under Python's line
model (`\\n`, `\\r\\n`, `\\r`: what both the LSP and Python call a line break).

pygls splits documents with `str.splitlines()`, which also breaks at form feeds, `\\x85`, U+2028
and friends: after one incremental edit below such a character its copy diverged from the editor's
(valid code then read as a syntax error). These classes replace its line model; the protocol
installs them on the workspace it creates.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

from devflow.lines import line_starts, lines_with_ends, split_lines
from devflow.lsp.positions import from_units


class LineModelDocument(TextDocument):
    @property
    def lines(self) -> Sequence[str]:
        return tuple(lines_with_ends(self.source))

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        source = self.source
        starts = line_starts(source)
        encoding = self.position_codec.encoding
        encoding = getattr(encoding, "value", encoding) or "utf-16"
        start = _offset(source, starts, change.range.start, encoding)
        end = max(_offset(source, starts, change.range.end, encoding), start)
        self._source = source[:start] + change.text + source[end:]


def _offset(source: str, starts: list[int], pos: types.Position, encoding: str) -> int:
    """String index of an LSP position; a character past the line's end is its end (before the
    break), a line past the document's end is the end of the document (as the LSP says)."""
    if pos.line >= len(starts):
        return len(source)
    if pos.line < 0:
        return 0
    begin = starts[pos.line]
    end = starts[pos.line + 1] if pos.line + 1 < len(starts) else len(source)
    text = split_lines(source[begin:end])[0]  # the line without its break
    return begin + from_units(text, pos.character, encoding)


class LineModelWorkspace(Workspace):
    def _create_text_document(self, doc_uri, source=None, version=None, language_id=None) -> TextDocument:
        return LineModelDocument(doc_uri, source=source, version=version, language_id=language_id,
                                 sync_kind=self._sync_kind, position_codec=self._position_codec)


def adopt(workspace: Workspace | None) -> Workspace | None:
    """`workspace` (as pygls built it) with devflow's line model for every document it opens."""
    if workspace is not None and type(workspace) is Workspace:
        workspace.__class__ = LineModelWorkspace  # adds one method; no state of its own
    return workspace
