"""The program cache (analysis/program.py) never changes a result: a 20-file project (the one the
benchmarks use, bench/project_gen.py) goes through a sequence of edits, in the editor (overlays)
and on disk, including edits that change a device, a base class or a helper in an imported module,
and after each one every checked file's result with the process's cache must equal the result of a
run that parses everything afresh (`program.isolated()`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from devflow.analysis import program
from devflow.engine import analyze

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from project_gen import device_edit, write_project  # noqa: E402

CHECKED = ["train.py", "models/net.py", "data/collate.py", "utils/device.py"]


def _canon(result) -> tuple:
    diags = tuple((d.code, d.span, d.message, d.related, d.fix) for d in result.diagnostics)
    hints = tuple((h.span, h.name, h.device, h.reason) for h in result.hints)
    return diags, hints, result.error, tuple(result.rule_errors), tuple(sorted(result.depends_on))


def _text(root: Path, rel: str) -> str:
    over = program._OVERLAY.get(str(root / rel))
    return over[0] if over is not None else (root / rel).read_text()


class Edits:
    def __init__(self, root: Path):
        self.root = root
        self.tick = 1_700_000_000_000_000_000

    def editor(self, rel: str, text: str) -> None:
        program.set_overlay(str(self.root / rel), text)

    def close(self, rel: str) -> None:
        program.drop_overlay(str(self.root / rel))

    def disk(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.write_text(text)
        self.tick += 10_000_000  # a new mtime even when the size is the same
        os.utime(path, ns=(self.tick, self.tick))


def _steps(root: Path, files: dict[str, str]):
    e = Edits(root)
    cfg, net, base, collate = files["utils/config.py"], files["models/net.py"], files["models/base.py"], files["data/collate.py"]
    yield "initial", lambda: None
    yield "device cpu (editor)", lambda: e.editor("utils/config.py", device_edit(cfg, "cpu"))
    yield "device cuda again (editor, an earlier text)", lambda: e.editor("utils/config.py", device_edit(cfg, "cuda"))
    yield "device cpu (disk), editor closed", lambda: (e.disk("utils/config.py", device_edit(cfg, "cpu")), e.close("utils/config.py"))
    yield "device cuda:1 (disk)", lambda: e.disk("utils/config.py", device_edit(cfg, "cuda:1"))
    yield "head moved in reset_head (disk)", lambda: e.disk("models/net.py", net.replace(
        "self.head = LinearHead(self.head.fc.in_features, classes)",
        "self.head = LinearHead(self.head.fc.in_features, classes).to(self.head.fc.weight.device)"))
    yield "base class not a module (editor)", lambda: e.editor("models/base.py", base.replace(
        "class BaseModel(nn.Module):", "class BaseModel:"))
    yield "base class back (editor closed)", lambda: e.close("models/base.py")
    yield "reset_head back (disk)", lambda: e.disk("models/net.py", net)
    yield "mask on the input's device (editor)", lambda: e.editor("data/collate.py", collate.replace(
        "torch.ones(x.shape[0], x.shape[1])", "torch.ones(x.shape[0], x.shape[1], device=x.device)"))
    yield "a cpu tensor in a head's forward (editor)", lambda: e.editor("models/heads.py", files["models/heads.py"].replace(
        "return self.fc(x)", "return self.fc(x) + torch.zeros(1)").replace("import torch.nn as nn", "import torch\nimport torch.nn as nn"))
    yield "to_device moves nothing (editor)", lambda: e.editor("utils/device.py", files["utils/device.py"].replace(
        "return tuple(t.to(device) for t in batch)", "return tuple(batch)"))
    yield "syntax error in blocks.py (editor)", lambda: e.editor("models/blocks.py", files["models/blocks.py"] + "\ndef broken(:\n")
    yield "blocks.py fixed (editor closed)", lambda: e.close("models/blocks.py")
    yield "device cuda (disk), all closed", lambda: (e.disk("utils/config.py", cfg), e.close("data/collate.py"),
                                                     e.close("models/heads.py"), e.close("utils/device.py"))


@pytest.fixture
def project(tmp_path):
    program.clear_cache()
    files = write_project(str(tmp_path), entry_lines=300)
    yield tmp_path, files
    program.clear_cache()


def test_results_with_the_cache_equal_results_without_it_over_edits(project):
    root, files = project
    seen_train: set = set()
    for label, step in _steps(root, files):
        step()
        for rel in CHECKED:
            path = str(root / rel)
            src = _text(root, rel)
            cached = _canon(analyze(src, path))
            again = _canon(analyze(src, path))  # the same cache, now steady (no re-link)
            with program.isolated():
                fresh = _canon(analyze(src, path))
            assert cached == fresh, f"{label}: {rel} differs with the cache"
            assert again == fresh, f"{label}: {rel} differs on a second cached run"
            if rel == "train.py":
                seen_train.add(fresh[0])
    # the edits did change what train.py gets (otherwise this test would check nothing)
    assert len(seen_train) >= 4


def test_an_edit_of_one_module_parses_only_that_module(project, monkeypatch):
    root, files = project
    entry = str(root / "train.py")
    analyze(files["train.py"], entry)
    parsed: list[str] = []
    real = program._parse
    monkeypatch.setattr(program, "_parse", lambda path, *a: parsed.append(path) or real(path, *a))
    analyze(files["train.py"], entry)
    assert parsed == []
    program.set_overlay(str(root / "utils/config.py"), device_edit(files["utils/config.py"], "cpu"))
    result = analyze(files["train.py"], entry)
    assert parsed == [str(root / "utils/config.py")]
    assert result.diagnostics == []  # nothing runs on an accelerator now
    program.set_overlay(str(root / "utils/config.py"), files["utils/config.py"])  # back: found in the cache
    assert {d.code for d in analyze(files["train.py"], entry).diagnostics} == {"DEV102", "DEV201"}
    assert parsed == [str(root / "utils/config.py")]


def test_depends_on_lists_the_project_files_read(project):
    root, files = project
    result = analyze(files["train.py"], str(root / "train.py"))
    deps = {os.path.relpath(p, root) for p in result.depends_on}
    assert {"models/net.py", "models/base.py", "utils/config.py", "utils/device.py", "data/collate.py"} <= deps
    assert "train.py" not in deps


def test_the_cache_is_bounded_and_still_exact(project, monkeypatch):
    root, files = project
    monkeypatch.setattr(program, "MAX_CACHED", 3)
    entry = str(root / "train.py")
    bounded = _canon(analyze(files["train.py"], entry))
    assert program.cache_stats()["files"] <= 3
    with program.isolated():
        monkeypatch.setattr(program, "MAX_CACHED", 400)
        fresh = _canon(analyze(files["train.py"], entry))
    assert bounded == fresh


def test_an_open_file_not_yet_on_disk_is_imported(tmp_path):
    program.clear_cache()
    try:
        src = "import torch\nfrom noise import noise\nx = torch.ones(3, device='cuda')\ny = x + noise(3)\n"
        (tmp_path / "app.py").write_text(src)
        assert analyze(src, str(tmp_path / "app.py")).diagnostics == []
        program.set_overlay(str(tmp_path / "noise.py"), "import torch\n\ndef noise(n):\n    return torch.randn(n)\n")
        result = analyze(src, str(tmp_path / "app.py"))
        assert [(d.span.line, d.code) for d in result.diagnostics] == [(4, "DEV201")]
    finally:
        program.clear_cache()


def test_a_batch_moves_the_parsed_files_out_of_the_collectors_sight(project):
    """`devflow check` (and bench/throughput.py --project) call program.freeze_parsed() between files:
    once enough project files were parsed since the last time, the survivors of a collection are
    frozen (a full collection walked the whole program cache otherwise); results stay the same."""
    import gc

    root, files = project
    entry = str(root / "train.py")
    before = _canon(analyze(files["train.py"], entry))
    assert not program.freeze_parsed(min_chars=10**12)  # not enough parsed yet: nothing done
    frozen = gc.get_freeze_count()
    try:
        assert program.freeze_parsed(min_chars=1)
        assert gc.get_freeze_count() > frozen
        assert not program.freeze_parsed(min_chars=1)  # nothing parsed since
        assert _canon(analyze(files["train.py"], entry)) == before
        program.set_overlay(str(root / "utils/config.py"), device_edit(files["utils/config.py"], "cpu"))
        assert analyze(files["train.py"], entry).diagnostics == []  # a frozen file is still replaced on edit
        assert program.freeze_parsed(min_chars=1)  # utils/config.py parsed again
    finally:
        gc.unfreeze()
