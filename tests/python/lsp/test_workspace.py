"""devflow.checkWorkspace / devflow.checkFile, config reload, and bad input."""

from __future__ import annotations

import asyncio
import contextlib
import json
import textwrap
from pathlib import Path

from lsprotocol import types

from lsp_harness import CANONICAL, HEAD_LINE


def _project(tmp: Path) -> Path:
    (tmp / "pkg").mkdir()
    (tmp / "pkg" / "train.py").write_text(CANONICAL)
    (tmp / "pkg" / "clean.py").write_text("import torch\nx = torch.zeros(3)\n")
    (tmp / "pkg" / "empty.py").write_text("")
    (tmp / "pkg" / "latin1.py").write_bytes(b"x = '\xe9\xff'\n")  # not UTF-8, no coding cookie
    (tmp / "generated").mkdir()
    (tmp / "generated" / "gen.py").write_text(CANONICAL)  # .gitignore'd
    (tmp / "legacy").mkdir()
    (tmp / "legacy" / "old.py").write_text(CANONICAL)  # excluded by [tool.devflow]
    (tmp / ".gitignore").write_text("generated/\n")
    (tmp / "pyproject.toml").write_text('[tool.devflow]\nextend-exclude = ["legacy/"]\n')
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": src}
             for src in ("\n".join(CANONICAL.split("\n")[:6]), "\n".join(CANONICAL.split("\n")[6:]))]
    (tmp / "pkg" / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return tmp


async def test_check_workspace_with_progress(start, tmp_path):
    root = _project(tmp_path)
    s = await start(profile="visual-studio-code", encoding="utf-16", root=root)
    result = await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="devflow.checkWorkspace", arguments=[]))
    assert result["files"] == 5, result  # train, clean, empty, latin1, nb (not gen.py, not old.py)
    uris = {p.uri for p in s.published}
    train = (root / "pkg" / "train.py").as_uri()
    assert train in uris
    assert (root / "generated" / "gen.py").as_uri() not in uris
    assert (root / "legacy" / "old.py").as_uri() not in uris
    by_uri = {p.uri: list(p.diagnostics) for p in s.published}
    assert [d.range.start.line for d in by_uri[train] if d.code == "DEV101"] == [HEAD_LINE]
    assert any(d.code == "DEV101" for d in by_uri[(root / "pkg" / "nb.ipynb").as_uri()])
    latin1 = by_uri[(root / "pkg" / "latin1.py").as_uri()]
    assert len(latin1) == 1 and "decode" in latin1[0].message and latin1[0].severity == types.DiagnosticSeverity.Information
    assert by_uri[(root / "pkg" / "empty.py").as_uri()] == []
    assert result["diagnostics"] == sum(len(v) for v in by_uri.values())
    # Work-done progress: begin, reports, end.
    (reports,) = s.client.progress_reports.values()
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].cancellable
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and "5/5" in reports[-1].message


async def test_check_workspace_on_given_uris_and_check_file(start, tmp_path):
    root = _project(tmp_path)
    s = await start(profile="neovim", encoding="utf-8", root=root)
    pkg = (root / "pkg").as_uri()
    result = await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="devflow.checkWorkspace", arguments=[[pkg]]))
    assert result["files"] == 5
    train = (root / "pkg" / "train.py").as_uri()
    result = await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="devflow.checkFile", arguments=[train]))
    assert result == {"diagnostics": 1}
    # Open with unsaved edits: the editor's text is checked, not the file on disk.
    s.open(train, CANONICAL + "model.extra = nn.Linear(2, 2)\n")
    result = await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="devflow.checkFile", arguments=[train]))
    assert result == {"diagnostics": 2}


async def test_check_workspace_cancel(start, tmp_path):
    _many_files(tmp_path)
    s = await start(profile="visual-studio-code", encoding="utf-16", root=tmp_path)
    task = asyncio.ensure_future(s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="devflow.checkWorkspace", arguments=[])))
    for _ in range(3000):
        if s.client.progress_reports:
            break
        await asyncio.sleep(0.01)
    (token,) = s.client.progress_reports
    s.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await task
    assert result.get("cancelled") is True and result["files"] < 300
    assert isinstance(s.client.progress_reports[token][-1], types.WorkDoneProgressEnd)


async def test_pyproject_change_reloads_config(start, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.devflow]\n")
    path = tmp_path / "train.py"
    path.write_text(CANONICAL)
    s = await start(profile="visual-studio-code", encoding="utf-16", root=tmp_path)
    # The server watches pyproject.toml files (dynamic registration, right after `initialized`).
    for _ in range(500):
        if s.client.registrations:
            break
        await asyncio.sleep(0.01)
    assert any(r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in s.client.registrations)
    uri = path.as_uri()
    s.open(uri, CANONICAL)
    assert any(d.code == "DEV101" for d in await s.diagnostics(uri))
    n = len(s.published)
    (tmp_path / "pyproject.toml").write_text('[tool.devflow]\nignore = ["DEV101"]\n')
    s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(tmp_path / "pyproject.toml").as_uri(), type=types.FileChangeType.Changed)]))
    await s.wait_published(uri, lambda p: s.published.index(p) >= n and not any(d.code == "DEV101" for d in p.diagnostics))
    # A broken table: the user is told once, the defaults apply.
    (tmp_path / "pyproject.toml").write_text('[tool.devflow]\nselect = "DEV1"\nignore = 3\n')
    s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(tmp_path / "pyproject.toml").as_uri(), type=types.FileChangeType.Changed)]))
    await s.wait_published(uri, lambda p: any(d.code == "DEV101" for d in p.diagnostics))
    for _ in range(200):
        if s.client.messages:
            break
        await asyncio.sleep(0.01)
    assert s.client.messages and "tool.devflow" in s.client.messages[0].message


async def test_configuration_pulled_on_change(start):
    uri = "file:///tmp/devflow-lsp-test/cfg.py"
    s = await start(profile="emacs", encoding="utf-32", configuration={"devflow": {"args": ["--ignore", "DEV1"]}})
    s.open(uri, CANONICAL)
    await asyncio.sleep(0.2)
    assert [d for d in await s.diagnostics(uri) if d.code == "DEV101"] == []
    s.client.set_configuration({"devflow": {"severity": {"DEV101": "warning"}}})
    n = len(s.published)
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    p = await s.wait_published(uri, lambda p: s.published.index(p) >= n and p.diagnostics)
    assert next(d for d in p.diagnostics if d.code == "DEV101").severity == types.DiagnosticSeverity.Warning


async def test_bad_input_never_kills_the_server(start, tmp_path):
    # No time budget: the whole 50,000-line file is checked (the budget has its own test).
    s = await start(profile="visual-studio-code", encoding="utf-16", settings={"debounceMs": 0, "timeBudgetMs": 0})
    uri = "file:///tmp/devflow-lsp-test/bad.py"
    # Syntax error mid-typing: a clear, low-key message; no crash.
    s.open(uri, CANONICAL.replace("model.to(device)", "model.to(device"))
    diags = await s.diagnostics(uri)
    assert len(diags) == 1 and diags[0].severity == types.DiagnosticSeverity.Information
    assert "devflow" in diags[0].message
    # Fixed again: findings come back.
    s.replace_all(uri, CANONICAL)
    assert any(d.code == "DEV101" for d in await s.diagnostics(uri))
    # Empty file.
    s.replace_all(uri, "")
    assert await s.diagnostics(uri) == []
    # A 50,000-line file: the server keeps answering while it is checked.
    big = "file:///tmp/devflow-lsp-test/big.py"
    s.open(big, CANONICAL + "".join(f"t{i} = torch.ones({i % 5 + 1}, device=device)\n" for i in range(50_000)))
    await asyncio.sleep(0.05)  # the big analysis is under way
    s.replace_all(uri, CANONICAL)  # an edit elsewhere, and a code action on it, meanwhile
    d = next(d for d in await s.diagnostics(uri) if d.code == "DEV101")
    assert await s.code_actions(uri, d.range, [d])
    # ... were answered before the big file's analysis finished.
    assert not [p for p in s.published if p.uri == big]
    big_diags = await s.diagnostics(big, timeout=120)
    assert any(d.code == "DEV101" for d in big_diags)
    # Garbage: a notebook cell URI that is not open, code actions on closed documents.
    assert await s.code_actions("file:///nope.py", types.Range(types.Position(0, 0), types.Position(0, 0)), []) == []
    # Still alive.
    s.replace_all(uri, CANONICAL)
    assert any(d.code == "DEV101" for d in await s.diagnostics(uri))


async def test_a_rule_that_throws_is_logged_and_skipped(start, tmp_path):
    """Fault injection in the server process: a rule whose check() raises is added to the
    engine's rule list; the other findings are still published and the failure is logged."""
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""\
        import devflow.engine as engine

        class Broken:
            code = "DEV999"

            def check(self, ctx):
                raise RuntimeError("injected failure")

        engine.ALL_RULES = [*engine.ALL_RULES, Broken()]
        """))
    s = await start(encoding="utf-16", env={"PYTHONPATH": str(tmp_path)})
    uri = "file:///tmp/devflow-lsp-test/broken_rule.py"
    s.open(uri, CANONICAL)
    assert any(d.code == "DEV101" for d in await s.diagnostics(uri))
    for _ in range(300):
        if any("injected failure" in m.message for m in s.client.log_messages):
            break
        await asyncio.sleep(0.01)
    logged = [m for m in s.client.log_messages if "injected failure" in m.message]
    assert logged and logged[0].type == types.MessageType.Warning and "DEV999" in logged[0].message
    assert not s.client.messages  # a log line, not a pop-up


async def test_protocol_misuse_is_logged_not_shown(start):
    s = await start(encoding="utf-16")
    uri = "file:///tmp/devflow-lsp-test/crlf.py"
    # A change for a document that was never opened: pygls fails on it; no pop-up, no crash.
    s.client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri="file:///never/opened.py", version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text="x = 1\n")]))
    # CRLF line endings: lines and columns as the editor counts them.
    s.open(uri, CANONICAL.replace("\n", "\r\n"))
    d = next(d for d in await s.diagnostics(uri) if d.code == "DEV101")
    assert d.range.start.line == HEAD_LINE and d.range.end.line == HEAD_LINE
    assert d.range.end.character <= len("model.head = nn.Linear(8, 2)")
    ignore = next(a for a in await s.code_actions(uri, d.range, [d]) if a.title.startswith("Ignore"))
    s.apply(ignore.edit)
    assert "model.head = nn.Linear(8, 2)  # noqa: DEV101\r\n" in s.texts[uri]
    assert not [x for x in await s.diagnostics(uri) if x.code == "DEV101"]
    assert not s.client.messages
    assert any("opened.py" in m.message for m in s.client.log_messages)


def _many_files(root: Path, n: int = 300) -> None:
    # Each file different (nothing a cache could share) and long enough that a check of all of them
    # outlasts the cancel's round trip on a fast machine.
    for i in range(n):
        (root / f"m{i:03}.py").write_text(CANONICAL + "".join(f"v{j}_{i} = torch.zeros(2) * {i}\n" for j in range(600)))


async def test_check_workspace_on_the_client_token_and_cancel_request(start, tmp_path):
    """As vscode-languageclient does it: the request carries its own workDoneToken, and the
    user's cancel arrives as $/cancelRequest."""
    _many_files(tmp_path)
    s = await start(profile="visual-studio-code", encoding="utf-16", root=tmp_path)
    token = "devflow/client-token"
    s.client.progress_reports[token] = []  # the client made this token itself
    fut = s.client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
        command="devflow.checkWorkspace", arguments=[], work_done_token=token), msg_id="check-1")
    for _ in range(3000):  # begin + a report: files are being checked
        if len(s.client.progress_reports[token]) >= 2:
            break
        await asyncio.sleep(0.01)
    assert list(s.client.progress_reports) == [token]  # no server-created token
    s.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="check-1"))
    with contextlib.suppress(Exception):  # the answer to a cancelled request is an error
        await asyncio.wait_for(asyncio.wrap_future(fut), 30)
    for _ in range(3000):
        if isinstance(s.client.progress_reports[token][-1], types.WorkDoneProgressEnd):
            break
        await asyncio.sleep(0.01)
    end = s.client.progress_reports[token][-1]
    assert isinstance(end, types.WorkDoneProgressEnd) and "cancelled" in end.message
    done = int(end.message.split("/")[0])
    assert done < 300


async def test_config_change_seen_without_file_watching(start, tmp_path):
    """A client that sends no file events (no watcher support): the changed pyproject.toml is
    read again on the next check of a file under it."""
    (tmp_path / "pyproject.toml").write_text("[tool.devflow]\n")
    path = tmp_path / "train.py"
    s = await start(profile="emacs", encoding="utf-8", root=tmp_path, settings={"debounceMs": 0})
    s.open(path.as_uri(), CANONICAL)
    assert any(d.code == "DEV101" for d in await s.diagnostics(path.as_uri()))
    (tmp_path / "pyproject.toml").write_text('[tool.devflow]\nignore = ["DEV1"]\n')
    s.replace_all(path.as_uri(), CANONICAL + "\n")
    assert not [d for d in await s.diagnostics(path.as_uri()) if d.code == "DEV101"]
