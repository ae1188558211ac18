"""Over stdio: an open file is checked again when a project file it imports is edited (unsaved),
closed, or changed on disk, and the new diagnostics are published (push) or pulled; a file that
does not import the edited one is left alone. The project is the benchmarks' 20-file one
(bench/project_gen.py): train.py imports models/, data/, utils/."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from lsprotocol import types

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from project_gen import device_edit, write_project  # noqa: E402

MASKED = "torch.ones(x.shape[0], x.shape[1], device=x.device)"


def _codes(p) -> list[str]:
    return sorted(str(d.code) for d in p.diagnostics)


async def _next_publish(s, uri: str, after: int, timeout: float = 30.0):
    """The first publish for `uri` after the first `after` publishes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in s.published[after:]:
            if p.uri == uri:
                return p
        await asyncio.sleep(0.01)
    raise AssertionError(f"{uri} was not published again: {[(p.uri, p.version) for p in s.published[after:]]}")


async def test_editing_an_imported_module_rechecks_its_open_dependents(start, tmp_path):
    files = write_project(str(tmp_path), entry_lines=300)
    s = await start(profile="visual-studio-code", root=tmp_path)
    train, collate, config = (tmp_path / "train.py").as_uri(), (tmp_path / "data/collate.py").as_uri(), \
        (tmp_path / "utils/config.py").as_uri()
    other = (tmp_path / "other.py").as_uri()  # imports nothing of the project
    s.open(train, files["train.py"])
    s.open(other, "import torch\nx = torch.zeros(3)\n")
    first = await s.wait_published(train, lambda p: True)
    assert _codes(first) == ["DEV102", "DEV201"]
    await s.wait_published(other, lambda p: True)

    # an unsaved edit of data/collate.py: the cpu mask gets the input's device
    s.open(collate, files["data/collate.py"])
    await s.wait_published(collate, lambda p: True)
    n = len(s.published)
    s.replace_all(collate, files["data/collate.py"].replace("torch.ones(x.shape[0], x.shape[1])", MASKED))
    p = await _next_publish(s, train, n)
    assert _codes(p) == ["DEV102"] and p.version == 1  # train.py itself did not change

    # closed without saving: the disk's text (the bug) is back
    n = len(s.published)
    s.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(collate)))
    p = await _next_publish(s, train, n)
    assert _codes(p) == ["DEV102", "DEV201"]

    # a device changed in an imported module: nothing runs on an accelerator any more
    s.open(config, files["utils/config.py"])
    await s.wait_published(config, lambda p: True)
    n = len(s.published)
    s.replace_all(config, device_edit(files["utils/config.py"], "cpu"))
    p = await _next_publish(s, train, n)
    assert _codes(p) == []
    n = len(s.published)
    s.replace_all(config, files["utils/config.py"])
    p = await _next_publish(s, train, n)
    assert _codes(p) == ["DEV102", "DEV201"]
    await asyncio.sleep(0.5)
    assert not any(q.uri == other for q in s.published[n:]), "a file that imports nothing was checked again"


async def test_a_change_on_disk_reported_by_the_file_watcher_rechecks_dependents(start, tmp_path):
    files = write_project(str(tmp_path), entry_lines=300)
    s = await start(profile="visual-studio-code", root=tmp_path)
    train = (tmp_path / "train.py").as_uri()
    s.open(train, files["train.py"])
    assert _codes(await s.wait_published(train, lambda p: True)) == ["DEV102", "DEV201"]
    assert any("*.py" in str(r.register_options) for r in s.client.registrations)
    (tmp_path / "data/collate.py").write_text(files["data/collate.py"].replace("torch.ones(x.shape[0], x.shape[1])", MASKED))
    n = len(s.published)
    s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(tmp_path / "data/collate.py").as_uri(), type=types.FileChangeType.Changed)]))
    p = await _next_publish(s, train, n)
    assert _codes(p) == ["DEV102"]


async def test_pulled_diagnostics_follow_an_edited_import(start, tmp_path):
    files = write_project(str(tmp_path), entry_lines=300)
    s = await start(profile="neovim", root=tmp_path)
    assert s.pull
    train, config = (tmp_path / "train.py").as_uri(), (tmp_path / "utils/config.py").as_uri()
    s.open(train, files["train.py"])
    assert sorted(str(d.code) for d in await s.diagnostics(train)) == ["DEV102", "DEV201"]
    s.open(config, files["utils/config.py"])
    await s.diagnostics(config)
    s.replace_all(config, device_edit(files["utils/config.py"], "cpu"))
    await s.diagnostics(config)  # the edit is processed before the next pull
    assert await s.diagnostics(train) == []


async def test_saving_a_script_rechecks_the_files_it_places_findings_in(start, tmp_path):
    """data/collate.py gets its DEV201 from runs of train.py's saved text: an unsaved edit of
    train.py leaves it alone, the save re-checks it."""
    files = write_project(str(tmp_path), entry_lines=300)
    s = await start(profile="visual-studio-code", root=tmp_path)
    train, collate = (tmp_path / "train.py").as_uri(), (tmp_path / "data/collate.py").as_uri()
    s.open(collate, files["data/collate.py"])
    assert _codes(await s.wait_published(collate, lambda p: True)) == ["DEV201"]
    s.open(train, files["train.py"])
    await s.wait_published(train, lambda p: True)
    new = files["train.py"].replace("        print(with_mask(x).sum())\n", "        print(x.sum())\n")
    assert new != files["train.py"]
    n = len(s.published)
    s.replace_all(train, new)
    await s.diagnostics(train)
    await asyncio.sleep(0.5)
    assert not any(p.uri == collate for p in s.published[n:])
    (tmp_path / "train.py").write_text(new)
    n = len(s.published)
    s.client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(train)))
    p = await _next_publish(s, collate, n)
    assert _codes(p) == []
