"""Fixtures for the CLI tests: the canonical device-mix snippet, a project folder, and ways to
run `devflow` in this process (fast, most tests) or as a real subprocess (entry points, pools)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from devflow.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cli_support, under --import-mode=importlib

from cli_support import CANONICAL, CLEAN  # noqa: E402


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


@pytest.fixture
def devflow(capsys, monkeypatch):
    """Call `devflow ARGS...` in-process, in `cwd`: returns Run(code, stdout, stderr)."""

    def run(*args: str, cwd: Path | None = None) -> Run:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture
def devflow_process():
    """Run the installed entry point as a separate process (python -m devflow)."""

    def run(*args: str, cwd: Path, module: bool = True, timeout: float = 120) -> Run:
        cmd = [sys.executable, "-m", "devflow", *map(str, args)] if module else \
            [str(Path(sys.executable).parent / "devflow"), *map(str, args)]
        env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
        return Run(p.returncode, p.stdout, p.stderr)

    return run


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with one buggy file (the canonical snippet) and one clean file."""
    (tmp_path / "train.py").write_text(CANONICAL)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path
