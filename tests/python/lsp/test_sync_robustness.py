"""The server's copy of a document stays the editor's: Python's line model over incremental
edits (form feeds, U+2028 and friends, CRLF and CR files), quick fixes below such characters, and
no stale result after a document is closed and opened again with the same version number."""

from __future__ import annotations

import ast
import asyncio
import random
import re

import pytest
from lsprotocol import types

from lsp_harness import CANONICAL, HEAD_LINE, index_to_units, units_to_index

URI = "file:///tmp/devflow-lsp-sync/train.py"
FRESH = "file:///tmp/devflow-lsp-sync/fresh.py"
ODD = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
_BREAK = re.compile(r"\r\n|\r|\n")  # the client's own line model (as VS Code and Python break lines)


class Doc:
    """The client's copy of a document, edited with LSP ranges in the negotiated encoding."""

    def __init__(self, text: str, encoding: str):
        self.text, self.encoding = text, encoding

    def lines(self) -> list[str]:
        return _BREAK.split(self.text)

    def offset(self, pos: types.Position) -> int:
        starts = [0] + [m.end() for m in _BREAK.finditer(self.text)]
        line = self.lines()[pos.line]
        return starts[pos.line] + units_to_index(line, pos.character, self.encoding)

    def end_of(self, line: int) -> types.Position:
        text = self.lines()[line]
        return types.Position(line, index_to_units(text, len(text), self.encoding))

    def apply(self, rng: types.Range, new: str) -> None:
        s, e = self.offset(rng.start), self.offset(rng.end)
        self.text = self.text[:s] + new + self.text[e:]


def _odd(rng: random.Random) -> str:
    return "".join(rng.choice(ODD) for _ in range(rng.randint(1, 3)))


def _random_edit(doc: Doc, rng: random.Random, newline: str) -> tuple[types.Range, str]:
    """An edit that keeps the program valid: a comment line added or removed, a comment appended
    to a statement, or a character of a comment replaced (all with odd characters)."""
    tree = ast.parse(doc.text)
    lines = doc.lines()
    comments = [i for i, t in enumerate(lines) if t.startswith("#")]
    kind = rng.choice(["add_line", "append", "remove_line", "retype"] if comments else ["add_line", "append"])
    if kind == "add_line":
        at = rng.choice(tree.body).lineno - 1
        return types.Range(types.Position(at, 0), types.Position(at, 0)), f"#{_odd(rng)} note {_odd(rng)}{newline}"
    if kind == "append":
        st = rng.choice([s for s in tree.body if s.end_lineno == s.lineno])
        end = doc.end_of(st.end_lineno - 1)
        return types.Range(end, end), f"  # {_odd(rng)}x{_odd(rng)}"
    line = rng.choice(comments)
    if kind == "remove_line":  # crosses the line break
        return types.Range(types.Position(line, 0), types.Position(line + 1, 0)), ""
    text = lines[line]
    i = rng.randint(1, len(text))
    start = types.Position(line, index_to_units(text, i - 1, doc.encoding))
    end = types.Position(line, index_to_units(text, i, doc.encoding))
    return types.Range(start, end), _odd(rng)


def _key(diags):
    return sorted((d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
                  for d in diags)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
async def test_incremental_edits_around_odd_characters_keep_the_copy_in_sync(start, encoding, newline):
    s = await start(profile="visual-studio-code", encoding=encoding, settings={"debounceMs": 0})
    text = ("#\x0c page one \u2028 still a comment\n" + CANONICAL).replace("\n", newline)
    doc = Doc(text, encoding)
    s.open(URI, doc.text)
    rng = random.Random(f"sync:{encoding}:{newline!r}")
    for _ in range(25):
        r, new = _random_edit(doc, rng, newline)
        doc.apply(r, new)
        s.versions[URI] += 1
        s.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=s.versions[URI]),
            content_changes=[types.TextDocumentContentChangePartial(range=r, text=new)]))
    edited = await s.diagnostics(URI)
    assert not [d for d in edited if d.code.startswith("E")], (edited, doc.text)
    s.open(FRESH, doc.text)  # the same text sent whole: the server must see exactly this
    assert _key(edited) == _key(await s.diagnostics(FRESH))
    assert any(d.code == "DEV101" for d in edited)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
async def test_quick_fix_below_a_form_feed_is_valid_and_keeps_the_line_ending(start, newline):
    """The issue's case: the DEV101 fix below a form feed produced invalid code."""
    s = await start(profile="visual-studio-code", encoding="utf-16")
    text = ("#\x0c\x85\u2028 header\n\x0c\n" + CANONICAL).replace("\n", newline)
    s.open(URI, text)
    diags = await s.diagnostics(URI)
    d = next(d for d in diags if d.code == "DEV101")
    assert d.range.start.line == HEAD_LINE + 2
    for action in await s.code_actions(URI, d.range, [d]):
        if action.edit is None:
            continue
        doc = Doc(text, "utf-16")
        edits = [e for dc in action.edit.document_changes for e in dc.edits] if action.edit.document_changes \
            else action.edit.changes[URI]
        for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
            doc.apply(e.range, e.new_text)
        ast.parse(doc.text)
        if newline != "\n":
            assert doc.text.replace(newline, "").count("\n") == 0, (action.title, doc.text)
    fix_all = await s.code_actions(URI, d.range, [d], only=["source.fixAll.devflow"])
    for action in fix_all:
        doc = Doc(text, "utf-16")
        edits = [e for dc in action.edit.document_changes for e in dc.edits] if action.edit.document_changes \
            else action.edit.changes[URI]
        for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
            doc.apply(e.range, e.new_text)
        ast.parse(doc.text)


async def test_reopen_with_the_same_version_never_shows_the_old_result(start):
    """A long analysis of the old text is still running when the document is closed and opened
    again (version 1 both times): its result must not be published for the new text."""
    s = await start(profile="visual-studio-code", encoding="utf-16", settings={"debounceMs": 0})
    filler = "".join(f"v{i} = torch.zeros({i % 7 + 1}).to(device)\nmodel.h{i} = nn.Linear(8, 2)\n" for i in range(1500))
    small = "import torch\nx = 1\n"
    for attempt in range(3):
        uri = f"file:///tmp/devflow-lsp-sync/reopen{attempt}.py"
        s.open(uri, CANONICAL + filler)
        await asyncio.sleep(0.05)  # the big analysis is running
        s.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
        s.open(uri, small)  # version 1 again
        await s.wait_published(uri, lambda p: p.version == 1 and not p.diagnostics)
        # Give the old run ample time to finish (it takes about a second here), then the last
        # publish for the document must still be the small file's.
        s.open(FRESH + str(attempt), CANONICAL + filler)
        s.versions[FRESH + str(attempt)] = 1
        await s.diagnostics(FRESH + str(attempt), timeout=60)
        await asyncio.sleep(0.5)
        last = [p for p in s.published if p.uri == uri][-1]
        assert len(last.diagnostics) == 0, f"attempt {attempt}: {len(last.diagnostics)} stale findings"
