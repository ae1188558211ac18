"""Multi-root workspaces: every resource setting applies per workspace folder (ruff's model). Two
folders with different settings (severity, an ignored rule, lint.run), a file outside both, settings
pushed by the client (initializationOptions, didChangeConfiguration) or pulled per folder
(workspace/configuration with a scopeUri), and folders added and removed at runtime."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

from lsprotocol import types

from devflow.lsp.folder_settings import WorkspaceSettings, from_configuration, from_payload
from devflow.lsp.settings import Settings

# DEV101 (line 7) and DEV201 (line 10).
SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    model.to(device)
    model.head = nn.Linear(8, 2)
    x = torch.randn(4, 8, device=device)
    y = model(x)
    z = torch.zeros(4, 2) + y
    """)
ERROR, HINT, WARNING = types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Hint, types.DiagnosticSeverity.Warning


def _tree(tmp: Path) -> tuple[Path, Path, Path]:
    """Folders `alpha` and `beta`, and `outside` (in no workspace folder), each with m.py."""
    dirs = tuple(tmp / name for name in ("alpha", "beta", "outside"))
    for d in dirs:
        d.mkdir()
        (d / "m.py").write_text(SOURCE)
    return dirs


def _codes(diags) -> dict[str, types.DiagnosticSeverity]:
    return {d.code: d.severity for d in diags}


def _payload(alpha: Path, beta: Path, alpha_settings: dict, beta_settings: dict, default: dict | None = None) -> dict:
    return {"settings": default or {}, "folders": [
        {"uri": alpha.as_uri(), "settings": alpha_settings}, {"uri": beta.as_uri(), "settings": beta_settings}]}


# -- resolution (no server) -------------------------------------------------------------------
def test_innermost_folder_wins_and_outside_uses_the_global_settings(tmp_path):
    outer, inner = tmp_path / "repo", tmp_path / "repo" / "sub"
    ws = from_payload({"settings": {"debounceMs": 1}, "folders": [
        {"uri": outer.as_uri(), "settings": {"debounceMs": 2}},
        {"uri": inner.as_uri(), "settings": {"debounceMs": 3}},
        {"uri": "untitled:nope", "settings": {"debounceMs": 4}},  # not a file folder: ignored
        {"uri": 5, "settings": {}}, "junk"]}, Settings())
    assert ws.for_uri((inner / "a" / "m.py").as_uri()).debounce_ms == 3
    assert ws.for_uri((outer / "m.py").as_uri()).debounce_ms == 2
    assert ws.for_uri((tmp_path / "repository" / "m.py").as_uri()).debounce_ms == 1, "a prefix of the name is not inside"
    assert ws.for_uri("untitled:Untitled-1").debounce_ms == 1
    assert ws.for_uri(None).debounce_ms == 1
    assert ws.without([inner.as_uri()]).for_uri((inner / "m.py").as_uri()).debounce_ms == 2
    # A folder URI written with a trailing slash or percent-escapes is the same folder.
    odd = from_payload({"folders": [{"uri": outer.as_uri() + "/", "settings": {"debounceMs": 7}}]}, Settings())
    assert odd.for_uri((outer / "x y.py").as_uri()).debounce_ms == 7


def test_each_folder_reads_its_own_args_over_the_command_line_not_over_another_folder(tmp_path):
    cli = Settings(ignore=("DEV9",))
    ws = from_payload(_payload(tmp_path / "a", tmp_path / "b", {"args": ["--ignore", "DEV101"]},
                               {"args": ["--select", "DEV2"]}), cli)
    a, b = ws.for_uri((tmp_path / "a" / "m.py").as_uri()), ws.for_uri((tmp_path / "b" / "m.py").as_uri())
    assert a.ignore == ("DEV9", "DEV101") and not a.selects("DEV101") and a.selects("DEV201")
    assert b.ignore == ("DEV9",) and b.selects("DEV201") and not b.selects("DEV101")
    assert ws.default == cli


def test_pulled_configuration_per_folder(tmp_path):
    a, b = (tmp_path / "a").as_uri(), (tmp_path / "b").as_uri()
    ws = from_configuration({"lintOnChange": True}, [a, b], [{"lintOnChange": False}, None], Settings())
    assert isinstance(ws, WorkspaceSettings)
    assert not ws.for_uri(a + "/m.py").lint_on_change
    assert ws.for_uri(b + "/m.py").lint_on_change, "a folder without an answer uses the global settings"


# -- the server over stdio ----------------------------------------------------------------------
async def test_severity_and_ignored_rule_per_folder_pull(start, tmp_path):
    alpha, beta, outside = _tree(tmp_path)
    s = await start(profile="neovim", folders=[alpha, beta], init_options=_payload(
        alpha, beta, {"severity": {"DEV101": "hint"}}, {"args": ["--ignore", "DEV101"], "severity": {"DEV2": "warning"}},
        default={"severity": {"DEV201": "hint"}}))
    assert s.pull
    for d in (alpha, beta, outside):
        s.open((d / "m.py").as_uri(), SOURCE)
    assert _codes(await s.diagnostics((alpha / "m.py").as_uri())) == {"DEV101": HINT, "DEV201": ERROR}
    assert _codes(await s.diagnostics((beta / "m.py").as_uri())) == {"DEV201": WARNING}
    assert _codes(await s.diagnostics((outside / "m.py").as_uri())) == {"DEV101": ERROR, "DEV201": HINT}
    # Fix All follows the folder: beta ignores DEV101, so it has nothing to fix.
    whole = types.Range(types.Position(0, 0), types.Position(10, 0))
    only = [types.CodeActionKind.SourceFixAll]
    fixes = lambda d: s.code_actions((d / "m.py").as_uri(), whole, [], only=only)  # noqa: E731
    assert any(a.edit for a in await fixes(alpha))
    assert not any(getattr(a, "edit", None) for a in await fixes(beta))


async def test_lint_run_per_folder_push(start, tmp_path):
    alpha, beta, _ = _tree(tmp_path)
    s = await start(profile="visual-studio-code", encoding="utf-8", folders=[alpha, beta], init_options=_payload(
        alpha, beta, {"lintOnChange": False, "debounceMs": 0}, {"lintOnChange": True, "debounceMs": 0}))
    a, b = (alpha / "m.py").as_uri(), (beta / "m.py").as_uri()
    s.open(a, SOURCE)
    s.open(b, SOURCE)
    await s.wait_published(a, lambda p: p.version == 1)
    await s.wait_published(b, lambda p: p.version == 1)
    extra = "w = torch.ones(2) + y\n"
    end = types.Position(10, 0)
    for uri in (a, b):
        s.change(uri, [types.TextEdit(types.Range(end, end), extra)])
    await s.wait_published(b, lambda p: p.version == 2)  # onType: checked as typed
    await asyncio.sleep(0.5)
    assert not [p for p in s.published if p.uri == a and p.version == 2], "onSave folder checked an unsaved edit"
    s.client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(a)))
    saved = await s.wait_published(a, lambda p: p.version == 2)
    assert sum(d.code == "DEV201" for d in saved.diagnostics) == 2


async def test_lint_run_on_save_keeps_the_previous_report_for_a_pull(start, tmp_path):
    alpha, beta, _ = _tree(tmp_path)
    s = await start(profile="neovim", folders=[alpha, beta], init_options=_payload(
        alpha, beta, {"lintOnChange": False}, {"lintOnChange": True}))
    a, b = (alpha / "m.py").as_uri(), (beta / "m.py").as_uri()

    async def pull(uri, previous=None):
        return await s.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri), previous_result_id=previous))

    reports = {}
    for uri in (a, b):
        s.open(uri, SOURCE)
        reports[uri] = await pull(uri)
        s.replace_all(uri, SOURCE + "w = torch.ones(2) + y\n")
    unchanged = await pull(a, reports[a].result_id)
    assert unchanged.kind == "unchanged" and unchanged.result_id == reports[a].result_id
    fresh = await pull(b, reports[b].result_id)
    assert fresh.kind == "full" and sum(d.code == "DEV201" for d in fresh.items) == 2
    s.client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(a)))
    saved = await pull(a, reports[a].result_id)
    assert saved.kind == "full" and sum(d.code == "DEV201" for d in saved.items) == 2
    # A settings change of the onSave folder applies to its unsaved document at once.
    s.replace_all(a, SOURCE)
    assert (await pull(a, saved.result_id)).kind == "unchanged"
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=_payload(
        alpha, beta, {"lintOnChange": False, "severity": {"DEV201": "hint"}}, {"lintOnChange": True})))
    for _ in range(100):
        changed = await pull(a, saved.result_id)
        if changed.kind == "full":
            break
        await asyncio.sleep(0.05)
    assert _codes(changed.items) == {"DEV101": ERROR, "DEV201": HINT}


async def test_a_change_in_one_folder_rechecks_only_its_files(start, tmp_path):
    alpha, beta, _ = _tree(tmp_path)
    s = await start(profile="visual-studio-code", encoding="utf-8", folders=[alpha, beta],
                    init_options=_payload(alpha, beta, {}, {}))
    a, b = (alpha / "m.py").as_uri(), (beta / "m.py").as_uri()
    s.open(a, SOURCE)
    s.open(b, SOURCE)
    await s.wait_published(a, lambda p: True)
    await s.wait_published(b, lambda p: True)
    before = {u: sum(p.uri == u for p in s.published) for u in (a, b)}
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings=_payload(alpha, beta, {}, {"severity": {"DEV101": "warning"}})))
    p = await s.wait_published(b, lambda p: _codes(p.diagnostics).get("DEV101") == WARNING)
    assert _codes(p.diagnostics)["DEV201"] == ERROR
    await asyncio.sleep(0.5)
    assert sum(p.uri == a for p in s.published) == before[a], "alpha's settings did not change, yet it was checked again"
    # The same payload again changes nothing: no new check at all.
    count = len(s.published)
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings=_payload(alpha, beta, {}, {"severity": {"DEV101": "warning"}})))
    await asyncio.sleep(0.5)
    assert len(s.published) == count


async def test_settings_pulled_per_folder_and_folders_added_and_removed(start, tmp_path):
    alpha, beta, _ = _tree(tmp_path)
    s = await start(profile="visual-studio-code", encoding="utf-8", folders=[alpha],
                    configuration={"devflow": {"severity": {"DEV2": "hint"}}},
                    scoped={alpha.as_uri(): {"devflow": {"args": ["--ignore", "DEV2"]}},
                            beta.as_uri(): {"devflow": {"severity": {"DEV101": "warning"}}}})
    a, b = (alpha / "m.py").as_uri(), (beta / "m.py").as_uri()
    s.open(a, SOURCE)
    s.open(b, SOURCE)
    await s.wait_published(a, lambda p: _codes(p.diagnostics) == {"DEV101": ERROR})
    await s.wait_published(b, lambda p: _codes(p.diagnostics) == {"DEV101": ERROR, "DEV201": HINT})  # global
    s.published.clear()
    s.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(beta.as_uri(), "beta")], removed=[])))
    await s.wait_published(b, lambda p: _codes(p.diagnostics) == {"DEV101": WARNING, "DEV201": ERROR})
    s.published.clear()
    s.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[], removed=[types.WorkspaceFolder(alpha.as_uri(), "alpha")])))
    await s.wait_published(a, lambda p: _codes(p.diagnostics) == {"DEV101": ERROR, "DEV201": HINT})


async def test_check_workspace_uses_each_folders_settings(start, tmp_path):
    alpha, beta, _ = _tree(tmp_path)
    (beta / "other.py").write_text(SOURCE)
    s = await start(profile="visual-studio-code", encoding="utf-8", folders=[alpha, beta], init_options=_payload(
        alpha, beta, {"args": ["--ignore", "DEV201"]}, {"enable": False}))
    result = await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="devflow.checkWorkspace", arguments=[]))
    assert result == {"files": 1, "diagnostics": 1}, result  # alpha's m.py, DEV101 only
    (p,) = [p for p in s.published if p.diagnostics]
    assert p.uri == (alpha / "m.py").as_uri() and _codes(p.diagnostics) == {"DEV101": ERROR}


def test_exclude_globs_match_the_clients():
    import json

    cases = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "exclude_cases.json").read_text())["cases"]
    from devflow.lsp.excludes import is_excluded

    wrong = [c for c in cases if is_excluded(c[0], c[1], c[2]) != c[3]]
    assert not wrong


async def test_exclude_per_folder(start, tmp_path):
    alpha, beta, _ = _tree(tmp_path)
    (alpha / "gen").mkdir()
    (alpha / "gen" / "m.py").write_text(SOURCE)
    s = await start(profile="visual-studio-code", encoding="utf-8", folders=[alpha, beta],
                    init_options=_payload(alpha, beta, {"exclude": ["gen"]}, {}))
    result = await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="devflow.checkWorkspace", arguments=[]))
    assert result == {"files": 2, "diagnostics": 4}, result  # alpha/m.py and beta/m.py
    excluded = (alpha / "gen" / "m.py").as_uri()
    s.open(excluded, SOURCE)
    await s.wait_published(excluded, lambda p: p.version == 1 and not p.diagnostics)
    s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings=_payload(alpha, beta, {}, {})))
    await s.wait_published(excluded, lambda p: len(p.diagnostics) == 2)
