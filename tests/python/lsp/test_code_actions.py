"""Quick fixes, "Ignore DEVnnn on this line" (# noqa) and source.fixAll.devflow."""

from __future__ import annotations

import ast

import pytest
from lsprotocol import types

from lsp_harness import CANONICAL, HEAD_LINE, edits_for

URI = "file:///tmp/devflow-lsp-test/actions.py"
FIX_ALL = "source.fixAll.devflow"


async def _dev101(s):
    return next(d for d in await s.diagnostics(URI) if d.code == "DEV101")


@pytest.mark.parametrize("profile", ["visual-studio-code", "neovim"])
async def test_ignore_on_this_line_adds_noqa(start, profile):
    s = await start(profile=profile, encoding="utf-16")
    s.open(URI, CANONICAL)
    d = await _dev101(s)
    actions = await s.code_actions(URI, d.range, [d])
    ignore = [a for a in actions if a.title == "Ignore DEV101 on this line"]
    assert len(ignore) == 1 and ignore[0].kind == types.CodeActionKind.QuickFix and not ignore[0].is_preferred
    s.apply(ignore[0].edit)
    assert s.texts[URI].split("\n")[HEAD_LINE] == "model.head = nn.Linear(8, 2)  # noqa: DEV101"
    assert [x for x in await s.diagnostics(URI) if x.code == "DEV101"] == []


async def test_ignore_merges_into_existing_noqa(start):
    s = await start(encoding="utf-8")
    text = CANONICAL.replace("model.head = nn.Linear(8, 2)", "model.head = nn.Linear(8, 2)  # noqa: DEV999 — é")
    s.open(URI, text)
    d = await _dev101(s)
    ignore = next(a for a in await s.code_actions(URI, d.range, [d]) if a.title.startswith("Ignore"))
    s.apply(ignore.edit)
    assert s.texts[URI].split("\n")[HEAD_LINE] == "model.head = nn.Linear(8, 2)  # noqa: DEV999, DEV101 — é"
    assert [x for x in await s.diagnostics(URI) if x.code == "DEV101"] == []


async def test_quick_fix_is_tied_to_its_diagnostic(start):
    s = await start(profile="emacs", encoding="utf-32")
    s.open(URI, CANONICAL)
    d = await _dev101(s)
    actions = await s.code_actions(URI, d.range, [d])
    fix = next(a for a in actions if a.is_preferred)
    assert fix.diagnostics and fix.diagnostics[0].code == "DEV101"
    assert edits_for(fix.edit, URI)
    if fix.edit.document_changes:  # versioned edits: the editor refuses them on a changed text
        assert fix.edit.document_changes[0].text_document.version == s.versions[URI]
    # Only quick fixes asked for: no source action.
    only_qf = await s.code_actions(URI, d.range, [d], only=[types.CodeActionKind.QuickFix])
    assert {a.kind for a in only_qf} == {types.CodeActionKind.QuickFix}


async def test_code_actions_without_context_use_the_cursor(start):
    s = await start(encoding="utf-16")
    s.open(URI, CANONICAL)
    d = await _dev101(s)
    cursor = types.Range(types.Position(HEAD_LINE, 3), types.Position(HEAD_LINE, 3))
    actions = await s.code_actions(URI, cursor, [])
    assert any(a.is_preferred for a in actions)
    assert any(a.title == "Ignore DEV101 on this line" for a in actions)
    assert d


async def test_fix_all(start):
    s = await start(profile="visual-studio-code", encoding="utf-16")
    two = CANONICAL + "model.extra = nn.Linear(2, 2)\n"
    s.open(URI, two)
    diags = [d for d in await s.diagnostics(URI) if d.code == "DEV101"]
    assert len(diags) == 2
    whole = types.Range(types.Position(0, 0), types.Position(0, 0))
    actions = await s.code_actions(URI, whole, [], only=[FIX_ALL])
    assert [a.kind for a in actions] == [FIX_ALL]
    s.apply(actions[0].edit)
    ast.parse(s.texts[URI])
    assert [d for d in await s.diagnostics(URI) if d.code == "DEV101"] == []
    # Nothing left to fix: no fixAll action.
    assert await s.code_actions(URI, whole, [], only=[FIX_ALL]) == []
    # The kind is advertised, so editors can run it on save.
    kinds = s.capabilities.code_action_provider.code_action_kinds
    assert FIX_ALL in kinds and types.CodeActionKind.QuickFix in kinds


async def test_stale_diagnostic_gets_no_wrong_edit(start):
    """A code action asked with a diagnostic from an older version is matched against the
    current text: the edit is computed for the current version."""
    s = await start(profile="visual-studio-code", encoding="utf-16", settings={"debounceMs": 0})
    s.open(URI, CANONICAL)
    old = await _dev101(s)
    top = types.Position(0, 0)
    s.change(URI, [types.TextEdit(types.Range(top, top), "# moved down\n")])
    await s.diagnostics(URI)
    actions = await s.code_actions(URI, old.range, [old])
    # The old diagnostic no longer matches any finding at that place: no fix for it.
    assert not any(a.is_preferred for a in actions)
