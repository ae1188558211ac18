"""Hover, inlay hints and notebook documents."""

from __future__ import annotations

from lsprotocol import types

from lsp_harness import CANONICAL, edits_for

URI = "file:///tmp/devflow-lsp-test/hover.py"
X_LINE = 7  # 0-based line of `x = torch.randn(4, 8, device=device)` in CANONICAL
NB = "file:///tmp/devflow-lsp-test/train.ipynb"


def _cell(i: int) -> str:
    return f"vscode-notebook-cell:/tmp/devflow-lsp-test/train.ipynb#C{i}"


async def test_hover_shows_device_and_reason(start):
    s = await start(profile="visual-studio-code", encoding="utf-16")
    s.open(URI, CANONICAL)
    await s.diagnostics(URI)
    hover = await s.client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(URI), position=types.Position(X_LINE, 0)))
    assert hover is not None
    assert hover.contents.kind == types.MarkupKind.Markdown
    text = hover.contents.value
    assert "devflow" in text and "device" in text and "line 8" in text  # the device and why
    assert hover.range.start.line == X_LINE
    # Somewhere with nothing to say: no hover.
    empty = await s.client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(URI), position=types.Position(2, 0)))
    assert empty is None


async def test_inlay_hints_off_by_default_then_on(start):
    s = await start(profile="neovim", encoding="utf-8")
    s.open(URI, CANONICAL)
    whole = types.Range(types.Position(0, 0), types.Position(20, 0))
    params = types.InlayHintParams(text_document=types.TextDocumentIdentifier(URI), range=whole)
    assert not await s.client.text_document_inlay_hint_async(params)
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"devflow": {"inlayHints": {"enable": True}}}))
    hints = await s.client.text_document_inlay_hint_async(params)
    assert hints, "no inlay hints once enabled"
    # The VS Code client sends the bare settings object.
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"enable": True, "inlayHints": {"enable": False}, "args": []}))
    assert not await s.client.text_document_inlay_hint_async(params)
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"enable": True, "inlayHints": {"enable": True}, "args": []}))
    x = [h for h in hints if h.position.line == X_LINE]
    assert x and "device" in str(x[0].label)
    assert x[0].position.character == 1  # right after `x`


async def test_notebook_cells_analysed_as_one_program(start):
    s = await start(profile="visual-studio-code", encoding="utf-16", notebooks=True)
    assert s.capabilities.notebook_document_sync is not None
    lines = CANONICAL.split("\n")
    cells = ["\n".join(lines[0:4]), "## Model\nmarkdown text", "\n".join(lines[4:6]), "\n".join(lines[6:])]
    kinds = [types.NotebookCellKind.Code, types.NotebookCellKind.Markup, types.NotebookCellKind.Code, types.NotebookCellKind.Code]
    s.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=NB, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=k, document=_cell(i)) for i, k in enumerate(kinds)]),
        cell_text_documents=[
            types.TextDocumentItem(uri=_cell(i), language_id="python" if k == types.NotebookCellKind.Code else "markdown", version=1, text=c)
            for i, (c, k) in enumerate(zip(cells, kinds))]))
    for i, c in enumerate(cells):
        s.texts[_cell(i)], s.versions[_cell(i)] = c, 1
    last = await s.wait_published(_cell(3), lambda p: any(d.code == "DEV101" for d in p.diagnostics))
    d = next(d for d in last.diagnostics if d.code == "DEV101")
    assert d.range.start.line == 0  # first line of the last cell
    for rel in d.related_information or []:  # "moved here" points into the model cell
        assert rel.location.uri == _cell(2)
    first = await s.wait_published(_cell(0), lambda p: True)
    assert not first.diagnostics

    # The quick fix edits the right cell.
    actions = await s.code_actions(_cell(3), d.range, [d])
    fix = next(a for a in actions if a.is_preferred)
    assert edits_for(fix.edit, _cell(3)) and not edits_for(fix.edit, _cell(2))

    # Editing a cell re-checks the notebook: delete the bad line.
    n = len(s.published)
    s.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=NB, version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=_cell(3), version=2),
                changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(1, 0)), text="")])]))))
    await s.wait_published(_cell(3), lambda p: s.published.index(p) >= n and p.version == 2 and not p.diagnostics)


async def test_hover_inside_a_notebook_cell(start):
    s = await start(profile="visual-studio-code", encoding="utf-16", notebooks=True)
    lines = CANONICAL.split("\n")
    cells = ["\n".join(lines[0:5]), "\n".join(lines[5:])]
    s.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=NB, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=_cell(i)) for i in range(2)]),
        cell_text_documents=[types.TextDocumentItem(uri=_cell(i), language_id="python", version=1, text=c)
                             for i, c in enumerate(cells)]))
    # `x = torch.randn(...)` on the third line of the second cell.
    hover = await s.client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(_cell(1)), position=types.Position(2, 0)))
    assert hover is not None and hover.range.start.line == 2 and "device" in hover.contents.value


async def test_notebook_cells_pulled(start):
    """A pulling client asks per cell; each cell gets its own part of the notebook's findings."""
    s = await start(profile="neovim", encoding="utf-8", notebooks=True)
    assert s.pull
    lines = CANONICAL.split("\n")
    cells = ["\n".join(lines[0:6]), "\n".join(lines[6:])]
    s.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=NB, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=_cell(i)) for i in range(2)]),
        cell_text_documents=[types.TextDocumentItem(uri=_cell(i), language_id="python", version=1, text=c)
                             for i, c in enumerate(cells)]))
    first = await s.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(_cell(0))))
    second = await s.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(_cell(1))))
    assert not [d for d in first.items if d.code == "DEV101"]
    assert [d.range.start.line for d in second.items if d.code == "DEV101"] == [0]


async def test_a_cell_being_typed_does_not_hide_the_other_cells_findings(start):
    # The kernel compiles each cell apart: a cell with a syntax error runs nothing, the others run.
    s = await start(profile="visual-studio-code", encoding="utf-16", notebooks=True)
    lines = CANONICAL.split("\n")
    cells = ["\n".join(lines[0:6]), "for batch in (", "\n".join(lines[6:])]
    s.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=NB, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=_cell(i)) for i in range(3)]),
        cell_text_documents=[types.TextDocumentItem(uri=_cell(i), language_id="python", version=1, text=c)
                             for i, c in enumerate(cells)]))
    last = await s.wait_published(_cell(2), lambda p: any(d.code == "DEV101" for d in p.diagnostics))
    assert [d.range.start.line for d in last.diagnostics if d.code == "DEV101"] == [0]
    broken = await s.wait_published(_cell(1), lambda p: bool(p.diagnostics))
    (d,) = broken.diagnostics
    assert d.code == "E999" and d.severity == types.DiagnosticSeverity.Information
    assert d.range.start.line == 0 and "never closed" in d.message
    assert not (await s.wait_published(_cell(0), lambda p: True)).diagnostics
