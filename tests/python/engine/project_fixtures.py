"""Fixture projects (tests/fixtures/engine/<group>/<case>/): every .py file of a case is checked by path
(its imports of the case's other files resolve) and its findings, as "file:LINE CODE" lines, are compared
with the case's `expect.txt` (empty for a clean project)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "engine"


def case_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if (p / "expect.txt").exists())


def findings(case: Path, relative: bool = False) -> list[str]:
    """Each script and notebook named by its name, or (`relative`) by its path inside the case."""
    out = []
    for f in sorted([*case.rglob("*.py"), *case.rglob("*.ipynb")]):
        result = check_path(str(f))
        assert not result.rule_errors, result.rule_errors
        name = f.relative_to(case).as_posix() if relative else f.name
        out += [f"{name}:{d.span.line} {d.code}" for d in result.diagnostics]
    return sorted(out)


def expected(case: Path) -> list[str]:
    return sorted(line for line in (case / "expect.txt").read_text().splitlines() if line.strip())


def write_project(root: Path, files: dict[str, str]) -> None:
    """A small project written from {path: text} (texts dedented), for the semantics tests."""
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))


def codes(root: Path, name: str) -> list[tuple[int, str]]:
    """(line, code) of each diagnostic of one file of such a project, checked by path."""
    return [(d.span.line, d.code) for d in check_path(str(root / name)).diagnostics]
