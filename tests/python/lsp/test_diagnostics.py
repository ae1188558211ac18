"""Diagnostics on open and after edits, in every client profile and position encoding."""

from __future__ import annotations

import ast

import pytest
from lsprotocol import types

from lsp_harness import CANONICAL, ENCODINGS, HEAD_LINE, PROFILES, index_to_units  # noqa: E402

URI = "file:///tmp/devflow-lsp-test/train.py"
# The flagged line carries non-ASCII text (2-byte, 3-byte and astral characters) before the
# end of the diagnostic and before the fix's insertion point.
NON_ASCII = CANONICAL.replace("model.head = nn.Linear(8, 2)", 'model.head = nn.Linear(len("é€🔥"), 2)')


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("profile", PROFILES)
async def test_open_edit_fix(start, profile, encoding):
    s = await start(profile=profile, encoding=encoding)
    s.open(URI, NON_ASCII)
    diags = await s.diagnostics(URI)
    dev101 = [d for d in diags if d.code == "DEV101"]
    assert dev101, diags
    d = dev101[0]
    assert d.source == "devflow" and d.message
    assert d.range.start.line == HEAD_LINE
    line = NON_ASCII.split("\n")[HEAD_LINE]
    # The range ends inside the line, counted in the negotiated units.
    assert 0 < d.range.end.character <= index_to_units(line, len(line), encoding)
    assert d.range.start.character == 0

    # The quick fix, applied in the negotiated encoding, gives valid code without the finding.
    actions = await s.code_actions(URI, d.range, [d])
    fixes = [a for a in actions if a.kind == types.CodeActionKind.QuickFix and "noqa" not in a.title and "Ignore" not in a.title]
    assert fixes and fixes[0].is_preferred
    s.apply(fixes[0].edit)
    ast.parse(s.texts[URI])
    assert '"é€🔥"' in s.texts[URI]
    after = await s.diagnostics(URI)
    assert not [x for x in after if x.code == "DEV101" and x.range.start.line == HEAD_LINE], after


async def test_diagnostics_follow_incremental_edits(start):
    s = await start(profile="emacs", encoding="utf-16", settings={"debounceMs": 0})
    clean = CANONICAL.replace("model.head = nn.Linear(8, 2)\n", "")
    s.open(URI, clean)
    assert [d for d in await s.diagnostics(URI) if d.code == "DEV101"] == []
    # Type the bad line in (incremental change: an insertion at the start of line 6).
    pos = types.Position(HEAD_LINE, 0)
    s.change(URI, [types.TextEdit(types.Range(pos, pos), "model.head = nn.Linear(8, 2)\n")])
    assert s.texts[URI] == CANONICAL
    diags = await s.diagnostics(URI)
    assert [d.range.start.line for d in diags if d.code == "DEV101"] == [HEAD_LINE]
    # Insert two lines above: the finding moves with its line.
    top = types.Position(0, 0)
    s.change(URI, [types.TextEdit(types.Range(top, top), "# ü\n# 🔥\n")])
    diags = await s.diagnostics(URI)
    assert [d.range.start.line for d in diags if d.code == "DEV101"] == [HEAD_LINE + 2]
    # Delete the bad line: the finding goes away.
    s.change(URI, [types.TextEdit(types.Range(types.Position(HEAD_LINE + 2, 0), types.Position(HEAD_LINE + 3, 0)), "")])
    assert [d for d in await s.diagnostics(URI) if d.code == "DEV101"] == []


async def test_diagnostic_fields(start):
    s = await start(profile="visual-studio-code", encoding="utf-16")
    s.open(URI, CANONICAL)
    d = next(d for d in await s.diagnostics(URI) if d.code == "DEV101")
    assert d.severity == types.DiagnosticSeverity.Error
    if d.code_description is not None:
        assert d.code_description.href.startswith("http")
    for rel in d.related_information or []:
        assert rel.location.uri == URI and rel.message


async def test_stale_versions_are_never_published(start):
    """Edits arrive while a long analysis runs: publishes only ever move forward in version
    and the last one is for the final text."""
    s = await start(profile="visual-studio-code", encoding="utf-16", settings={"debounceMs": 0})
    filler = "".join(f"v{i} = torch.zeros({i % 7 + 1})\n" for i in range(4000))
    s.open(URI, CANONICAL + filler)
    await s.diagnostics(URI)
    for i in range(6):  # rapid edits, each one flipping the bad line in or out
        text = CANONICAL if i % 2 else CANONICAL.replace("model.head = nn.Linear(8, 2)", "pass")
        s.replace_all(URI, text + filler)
    final = s.versions[URI]
    last = await s.wait_published(URI, lambda p: p.version == final)
    versions = [p.version for p in s.published if p.uri == URI]
    assert versions == sorted(versions), versions
    assert [d.range.start.line for d in last.diagnostics if d.code == "DEV101"] == [HEAD_LINE]
    assert len(versions) < 7  # superseded runs were dropped, not all published


async def test_severity_override_and_disable(start):
    s = await start(profile="visual-studio-code", encoding="utf-16",
                    settings={"severity": {"DEV1": "warning", "DEV101": "hint"}})
    s.open(URI, CANONICAL)
    d = next(d for d in await s.diagnostics(URI) if d.code == "DEV101")
    assert d.severity == types.DiagnosticSeverity.Hint

    s2 = await start(profile="visual-studio-code", encoding="utf-16", settings={"enable": False})
    s2.open(URI, CANONICAL)
    assert await s2.diagnostics(URI) == []


async def test_serve_options_select_ignore(start):
    s = await start(args=["--ignore", "DEV1"])
    s.open(URI, CANONICAL)
    assert [d for d in await s.diagnostics(URI) if d.code.startswith("DEV1")] == []


async def test_pull_diagnostics_result_ids(start):
    """Clients that pull (Neovim >= 0.10) get textDocument/diagnostic, with result ids."""
    s = await start(profile="neovim", encoding="utf-16")
    assert s.pull and s.capabilities.diagnostic_provider.identifier == "devflow"
    s.open(URI, CANONICAL)
    params = types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(URI))
    first = await s.client.text_document_diagnostic_async(params)
    assert first.kind == "full" and any(d.code == "DEV101" for d in first.items) and first.result_id
    params.previous_result_id = first.result_id
    again = await s.client.text_document_diagnostic_async(params)
    assert again.kind == "unchanged" and again.result_id == first.result_id
    s.replace_all(URI, CANONICAL.replace("model.head = nn.Linear(8, 2)", "pass"))
    changed = await s.client.text_document_diagnostic_async(params)
    assert changed.kind == "full" and not [d for d in changed.items if d.code == "DEV101"]
    # Nothing is pushed for open documents in pull mode (no duplicates in the editor).
    assert not [p for p in s.published if p.uri == URI]



SEVERITIES = """import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
model.load_state_dict(torch.load("weights.pt"))
model.head = nn.Linear(4, 2)
"""


async def test_rule_severity_reaches_the_editor(start):
    """DEV301 fails only on a machine without the checkpoint's GPU: a warning; DEV101 raises: an error."""
    s = await start(profile="visual-studio-code", encoding="utf-16")
    s.open(URI, SEVERITIES)
    by_code = {d.code: d.severity for d in await s.diagnostics(URI)}
    assert by_code == {"DEV301": types.DiagnosticSeverity.Warning, "DEV101": types.DiagnosticSeverity.Error}
