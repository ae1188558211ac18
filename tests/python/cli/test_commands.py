"""`devflow serve` / `run` dispatch, `devflow rules`, --jobs."""

from __future__ import annotations

import sys
import types

from cli_support import CANONICAL

from devflow import cli


def test_missing_delegate_is_a_clear_error(devflow, monkeypatch, tmp_path):
    monkeypatch.setitem(cli._DELEGATES, "serve", ("devflow_no_such_module.server", "the language server"))
    r = devflow("serve", "--stdio", cwd=tmp_path)
    assert r.code == 2
    assert "the language server is not available" in r.err and "Traceback" not in r.err


def test_delegate_gets_the_remaining_arguments(devflow, monkeypatch, tmp_path):
    seen = []
    fake = types.ModuleType("fake_runtime_cli")
    fake.main = lambda argv: seen.append(argv) or 3
    monkeypatch.setitem(sys.modules, "fake_runtime_cli", fake)
    monkeypatch.setitem(cli._DELEGATES, "run", ("fake_runtime_cli", "the runtime probe"))
    assert devflow("run", "train.py", "--epochs", "2", cwd=tmp_path).code == 3
    assert seen == [["train.py", "--epochs", "2"]]


def test_delegate_missing_a_dependency(devflow, monkeypatch, tmp_path):
    fake = types.ModuleType("fake_lsp")

    def main(argv):
        raise AssertionError("not reached")

    fake.main = main
    monkeypatch.setitem(cli._DELEGATES, "serve", ("devflow_fake_pkg.server", "the language server"))

    def import_module(name):
        raise ModuleNotFoundError("No module named 'pygls'", name="pygls")

    monkeypatch.setattr(cli.importlib, "import_module", import_module)
    r = devflow("serve", cwd=tmp_path)
    assert r.code == 2 and "needs the Python package 'pygls'" in r.err


def test_rules_listing(devflow, tmp_path):
    r = devflow("rules", cwd=tmp_path)
    assert r.code == 0 and r.out.startswith("DEV101  ")
    r = devflow("rules", "DEV3", "--format", "json", cwd=tmp_path)
    import json

    assert {x["code"][:4] for x in json.loads(r.out)} == {"DEV3"}
    assert devflow("rules", "XYZ", cwd=tmp_path).code == 2


def test_help_and_version(devflow, tmp_path):
    r = devflow("--help", cwd=tmp_path)
    assert r.code == 0 and "check" in r.out and "serve" in r.out and "run" in r.out
    r = devflow("check", "--help", cwd=tmp_path)
    assert r.code == 0 and "--unsafe-fixes" in r.out
    assert devflow("--version", cwd=tmp_path).out.startswith("devflow ")


def test_jobs_give_the_same_report(devflow_process, tmp_path):
    for i in range(12):
        (tmp_path / f"m{i:02}.py").write_text(CANONICAL if i % 3 == 0 else "x = 1\n")
    one = devflow_process("check", "--jobs", "1", cwd=tmp_path)
    many = devflow_process("check", "--jobs", "3", cwd=tmp_path)
    default = devflow_process("check", cwd=tmp_path)
    assert one.code == many.code == default.code == 1
    assert one.out == many.out == default.out
    assert one.out.count("DEV101") == 4


def test_stdin(devflow_process, tmp_path):
    import subprocess

    def run(*args):
        return subprocess.run([sys.executable, "-m", "devflow", "check", *args], input=CANONICAL, text=True,
                              capture_output=True, cwd=tmp_path, timeout=120)

    p = run("-", "--stdin-filename", "train.py")
    assert p.returncode == 1 and p.stdout.startswith("train.py:7:1: DEV101")
    p = run("-", "--fix")
    assert p.returncode == 0, p.stderr
    assert "model.head = nn.Linear(8, 2)." in p.stdout and "import torch" in p.stdout  # the fixed code
    assert "1 × DEV101" in p.stderr and "(1 fixed, 0 remaining)" in p.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.devflow]\nignore = ['DEV1']\n")
    p = run("-", "--stdin-filename", "train.py")
    assert p.returncode == 0 and "All checks passed!" in p.stdout
    p = run("-", "other.py")
    assert p.returncode == 2 and "cannot be mixed" in p.stderr
