"""--fix / --unsafe-fixes on files, and api.apply_fixes."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import pytest
from cli_support import CANONICAL, CANONICAL_LINE

from devflow import api, engine
from devflow.model import Diagnostic, Edit, FileResult, Fix, Span


def test_fix_a_copy_of_sample_01(devflow, repo_root, tmp_path):
    target = tmp_path / "head.py"
    shutil.copy(repo_root / "samples" / "01_head_replaced_after_move.py", target)
    before = target.read_text()
    r = devflow("check", "--fix", "head.py", cwd=tmp_path)
    assert "(1 fixed, " in r.out, r.out + r.err
    after = target.read_text()
    assert after != before
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(changed) == 1 and "model.head = nn.Linear(64, 3)" in changed[0][1]
    compile(after, "head.py", "exec")


def test_fixed_sample_no_longer_mixes_devices(devflow, repo_root, shared_dir, tmp_path):
    """The fix is judged by running the script with cuda replaced by meta (CPU-only machine)."""
    target = tmp_path / "head.py"
    shutil.copy(repo_root / "samples" / "01_head_replaced_after_move.py", target)
    tool = shared_dir / "corpus" / "tools" / "meta_run.py"
    before = subprocess.run([sys.executable, str(tool), "--strict", str(target)], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert '"device_error": true' in before.stdout, before.stdout[-2000:] + before.stderr[-2000:]
    devflow("check", "--fix", "head.py", cwd=tmp_path)
    after = subprocess.run([sys.executable, str(tool), "--strict", str(target)], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
    assert '"status": "ok"' in after.stdout, after.stdout[-2000:] + after.stderr[-2000:]


def test_fix_keeps_encoding_bom_crlf_and_mode(devflow, tmp_path):
    src = "# -*- coding: latin-1 -*-\n# café\n" + CANONICAL
    target = tmp_path / "t.py"
    target.write_bytes(src.replace("\n", "\r\n").encode("latin-1"))
    target.chmod(0o750)
    bom = tmp_path / "b.py"
    bom.write_bytes(b"\xef\xbb\xbf" + CANONICAL.encode())
    r = devflow("check", "--fix", cwd=tmp_path)
    assert "(2 fixed, " in r.out, r.out
    data = target.read_bytes()
    assert "# café".encode("latin-1") in data and b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o750
    assert bom.read_bytes().startswith(b"\xef\xbb\xbf") and bom.read_bytes().count(b"\xef\xbb\xbf") == 1
    assert not [p for p in os.listdir(tmp_path) if "devflow-tmp" in p]


def test_without_fix_nothing_is_written(devflow, project):
    before = (project / "train.py").read_text()
    devflow("check", cwd=project)
    assert (project / "train.py").read_text() == before


def test_fix_summary_when_nothing_fixable(devflow, tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    r = devflow("check", "--fix", cwd=tmp_path)
    assert r.code == 0 and r.out == "All checks passed!\n"


# -- apply_fixes, with a stand-in engine so that the choice of fixes is what is tested ---------------

def _diag(code, line, col, end_col, new_text, applicability="safe", end_line=None) -> Diagnostic:
    span = Span(line, col, end_line or line, end_col)
    return Diagnostic(code, f"{code} here", span, fix=Fix(f"fix {code}", applicability, (Edit(span, new_text),)))


@pytest.fixture
def quiet_engine(monkeypatch):
    """The engine finds nothing on re-check: one round of fixes."""
    monkeypatch.setattr(engine, "analyze", lambda source, path=None: FileResult(path))


def test_apply_fixes_safe_only_by_default(quiet_engine):
    src = "a = 1\nb = 2\n"
    diags = [_diag("DEV101", 1, 4, 5, "10"), _diag("DEV201", 2, 4, 5, "20", "unsafe")]
    assert api.apply_fixes(src, diags) == ("a = 10\nb = 2\n", 1)
    assert api.apply_fixes(src, diags, unsafe=True) == ("a = 10\nb = 20\n", 2)


def test_apply_fixes_skips_overlapping_fixes(quiet_engine):
    src = "value = compute(1)\n"
    diags = [_diag("DEV101", 1, 8, 18, "compute(2)"), _diag("DEV201", 1, 16, 17, "3")]
    out, n = api.apply_fixes(src, diags)
    assert (out, n) == ("value = compute(2)\n", 1)


def test_apply_fixes_counts_identical_fixes_once_applied(quiet_engine):
    src = "x = 1\n"
    diags = [_diag("DEV101", 1, 4, 5, "2"), _diag("DEV102", 1, 4, 5, "2")]
    assert api.apply_fixes(src, diags) == ("x = 2\n", 2)


def test_a_fix_that_breaks_the_syntax_is_not_applied(quiet_engine):
    src = "x = 1\ny = 2\n"
    diags = [_diag("DEV101", 1, 4, 5, "(("), _diag("DEV102", 2, 4, 5, "3")]
    assert api.apply_fixes(src, diags) == ("x = 1\ny = 3\n", 1)


def test_fix_rounds_recheck_and_stop(monkeypatch):
    """Each round re-checks; a finding that survives its own fix is not fixed again."""
    calls = []

    def analyze(source, path=None, *_, **__):
        calls.append(source)
        if "b = 2" in source and "c = 3" not in source:
            return FileResult(path, [_diag("DEV102", 2, 4, 5, "3")])  # appears after the first fix
        return FileResult(path, [_diag("DEV101", 1, 4, 5, "1")])  # a fix that changes nothing new

    monkeypatch.setattr(engine, "analyze", analyze)
    src = "a = 0\nb = 0\n"
    out, n = api.apply_fixes(src, [_diag("DEV101", 1, 4, 5, "1"), _diag("DEV103", 2, 4, 5, "2")])
    assert out == "a = 1\nb = 3\n" and n == 3
    assert len(calls) <= api.MAX_FIX_ROUNDS


def test_check_source_never_raises(monkeypatch):
    def boom(source, path=None, *_, **__):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(engine, "analyze", boom)
    result = api.check_source("x = 1\n", "t.py")
    assert result.error == "internal error: RuntimeError: kaboom" and api.error_code(result) == "E000"


def test_check_path_reads_notebooks_and_python(tmp_path):
    (tmp_path / "t.py").write_text(CANONICAL)
    assert [d.span.line for d in api.check_path(str(tmp_path / "t.py")).diagnostics] == [CANONICAL_LINE]
    import json

    nb = {"cells": [{"cell_type": "code", "source": CANONICAL.splitlines(keepends=True)}]}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    assert [d.code for d in api.check_path(str(tmp_path / "n.ipynb")).diagnostics] == ["DEV101"]
    missing = api.check_path(str(tmp_path / "missing.py"))
    assert missing.error == "no such file or directory" and api.error_code(missing) == "E902"


def test_summary_mentions_hidden_unsafe_fixes(devflow, tmp_path, monkeypatch):
    def analyze(source, path=None, *_, **__):  # each fix resolves its own finding
        return FileResult(path, [d for d in (_diag("DEV201", 1, 4, 5, "2", "unsafe"), _diag("DEV202", 1, 0, 1, "y", "unsafe"))
                                 if source[d.span.col:d.span.end_col] != d.fix.edits[0].new_text])

    monkeypatch.setattr(engine, "analyze", analyze)
    (tmp_path / "t.py").write_text("x = 1\n")
    r = devflow("check", cwd=tmp_path)
    assert r.out.splitlines()[-1] == "No fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option)."
    assert "[*]" not in r.out
    r = devflow("check", "--unsafe-fixes", cwd=tmp_path)
    assert r.out.splitlines()[-1] == "[*] 2 fixable with the `--fix` option." and r.out.count("[*]") == 3
    r = devflow("check", "--fix", cwd=tmp_path)
    assert r.out.splitlines()[-2:] == ["Found 2 errors (0 fixed, 2 remaining).",
                                       "No fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option)."]
    assert (tmp_path / "t.py").read_text() == "x = 1\n"
    r = devflow("check", "--fix", "--unsafe-fixes", "--jobs", "1", cwd=tmp_path)
    assert "(1 fixed, " in r.out and (tmp_path / "t.py").read_text() == "y = 2\n" or \
        "(2 fixed, " in r.out and (tmp_path / "t.py").read_text() == "y = 2\n"


def test_fix_reports_what_was_fixed(devflow, tmp_path):
    (tmp_path / "a.py").write_text(CANONICAL)
    (tmp_path / "b.py").write_text(CANONICAL)
    r = devflow("check", "--fix", "--jobs", "1", cwd=tmp_path)
    lines = r.out.splitlines()
    assert lines[:5] == ["Fixed 2 errors:", "- a.py:", "    1 × DEV101", "- b.py:", "    1 × DEV101"], r.out
    assert lines[-1].startswith("Found ") and "(2 fixed, " in lines[-1]
    r = devflow("check", "--fix", "--format", "json", cwd=tmp_path)
    assert r.json()["summary"]["fixed"] == 0  # nothing left to fix the second time


def test_diff_shows_the_fixes_and_writes_nothing(devflow, project):
    before = (project / "train.py").read_text()
    r = devflow("check", "--diff", cwd=project)
    assert r.code == 1
    assert r.out.startswith("--- train.py\n+++ train.py\n@@ ")
    assert "-model.head = nn.Linear(8, 2)\n+model.head = nn.Linear(8, 2)." in r.out
    assert r.err.strip().endswith("Would fix 1 error.")
    assert (project / "train.py").read_text() == before
    r = devflow("check", "--diff", "clean.py", cwd=project)
    assert r.code == 0 and r.out == "" and "No errors would be fixed." in r.err
