"""Which files `devflow check` walks: .py and .ipynb, default excludes, .gitignore, symlinks."""

from __future__ import annotations

import os

from devflow.discovery import discover


def _touch(root, *names):
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")


def test_py_and_notebooks_only_and_default_excludes(tmp_path):
    _touch(tmp_path, "a.py", "b.ipynb", "c.txt", "d.pyc", "pkg/e.py", ".venv/lib/f.py", "node_modules/g.py",
           "pkg/__pycache__/h.py", ".git/i.py", "build/j.py")
    (tmp_path / "b.ipynb").write_text('{"cells": []}')
    assert discover([tmp_path]) == sorted(str(tmp_path / n) for n in ("a.py", "b.ipynb", "pkg/e.py"))


def test_relative_paths_stay_relative(tmp_path, monkeypatch):
    _touch(tmp_path, "src/a.py")
    monkeypatch.chdir(tmp_path)
    assert discover(["src"]) == [os.path.join("src", "a.py")]
    assert discover(["."]) == [os.path.join("src", "a.py")]


def test_gitignore_is_respected_in_a_repository(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n*_tmp.py\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("!keep_tmp.py\nlocal.py\n")
    _touch(tmp_path, "a.py", "generated/b.py", "x_tmp.py", "sub/keep_tmp.py", "sub/other_tmp.py", "sub/local.py")
    found = [os.path.relpath(p, tmp_path) for p in discover([tmp_path])]
    assert found == ["a.py", os.path.join("sub", "keep_tmp.py")]
    # Walking from a subfolder still sees the .gitignore files above it.
    found = [os.path.relpath(p, tmp_path) for p in discover([tmp_path / "sub"])]
    assert found == [os.path.join("sub", "keep_tmp.py")]


def test_respect_gitignore_false(devflow, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    _touch(tmp_path, "ignored.py")
    assert devflow("check", "--format", "json", cwd=tmp_path).json()["files_checked"] == 0
    (tmp_path / "pyproject.toml").write_text("[tool.devflow]\nrespect-gitignore = false\n")
    assert devflow("check", "--format", "json", cwd=tmp_path).json()["files_checked"] == 1


def test_named_files_are_always_checked(tmp_path):
    _touch(tmp_path, ".venv/x.py", "script")
    assert discover([tmp_path / ".venv" / "x.py", tmp_path / "script"]) == sorted(
        [str(tmp_path / ".venv" / "x.py"), str(tmp_path / "script")])


def test_symlinked_folders_are_not_followed_and_files_are_not_doubled(tmp_path):
    _touch(tmp_path, "real/a.py")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    assert discover([tmp_path]) == [str(tmp_path / "real" / "a.py")]
    assert discover([tmp_path / "real", tmp_path / "real" / "a.py"]) == [str(tmp_path / "real" / "a.py")]


def test_a_named_folder_is_walked_even_if_ignored_or_excluded(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(".cache/\n*.log\n")
    _touch(tmp_path, ".cache/bench/a.py", ".venv/lib/pkg/b.py", ".venv/lib/pkg/__pycache__/c.py", "d.py")
    monkeypatch.chdir(tmp_path)
    assert discover(["."]) == ["d.py"]
    assert discover([".cache/bench"]) == [os.path.join(".cache", "bench", "a.py")]
    # Inside a named excluded folder the default excludes still apply to what is below it.
    assert discover([".venv/lib"]) == [os.path.join(".venv", "lib", "pkg", "b.py")]
