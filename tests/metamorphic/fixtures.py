"""Engine fixture projects as a metamorphic source (`run.py --fixtures DIR`), e.g. the unseen real cases
(tests/fixtures/engine/unseen/<case>/): every .py file of the case (packages included) is a project file
keyed by its path inside the case, the bug lines are the case's `expect.txt` ("file:LINE CODE"), the
`<case>_fixed` folder is the fixed twin (its bug lines mapped by diff), and `silent_*` cases (expected
silent, no twin) are measured as fixed variants only. Other files (pyproject.toml, ...) are copied as is.

The entry (the file that file-level rewrites such as split_module / wrap_main / trainer work on) is the
file of the first bug line; for a silent case, the file with the most top-level code. Where a file-level
rewrite does not apply to it, the other bug files and then the scripts are tried in turn."""

from __future__ import annotations

import ast
from pathlib import Path

from .project import Project, innermost_stmt, map_lines, tag

SKIP = {"expect.txt", "source.txt"}


def case_dirs(root: Path) -> list[Path]:
    """Buggy cases that have a fixed twin, then silent cases (fixed-only). A case made only of notebooks is
    left out: the rewrites work on Python files."""
    names = {p.name for p in root.iterdir() if (p / "expect.txt").exists() and any(p.rglob("*.py"))}
    buggy = sorted(n for n in names if not n.endswith("_fixed") and n + "_fixed" in names
                   and (root / n / "expect.txt").read_text().strip())
    silent = sorted(n for n in names if not n.endswith("_fixed") and n + "_fixed" not in names
                    and not (root / n / "expect.txt").read_text().strip())
    return [root / n for n in buggy + silent]


def is_silent(case_dir: Path) -> bool:
    return not (case_dir / "expect.txt").read_text().strip()


def _files(case_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    py, data = {}, {}
    for p in sorted(case_dir.rglob("*")):
        if not p.is_file() or p.name in SKIP or "__pycache__" in p.parts:
            continue
        rel = p.relative_to(case_dir).as_posix()
        (py if p.suffix == ".py" else data)[rel] = p.read_text()
    return py, data


def expected_lines(case_dir: Path) -> list[tuple[str, int]]:
    out = []
    for line in (case_dir / "expect.txt").read_text().splitlines():
        if line.strip():
            where = line.split()[0]
            f, _, n = where.rpartition(":")
            out.append((f, int(n)))
    return sorted(set(out))


def _top_level_code(tree: ast.Module) -> int:
    return sum(1 for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                                           ast.AsyncFunctionDef, ast.ClassDef)))


def load(case_dir: Path, role: str) -> Project:
    """role "buggy": the case; "fixed": its `_fixed` twin (a silent case is its own fixed variant)."""
    silent = is_silent(case_dir)
    src_dir = case_dir if role == "buggy" or silent else case_dir.parent / (case_dir.name + "_fixed")
    py, data = _files(src_dir)
    trees = {name: ast.parse(text, name) for name, text in py.items()}
    bugs = [] if silent else expected_lines(case_dir)
    if bugs:
        entry = bugs[0][0]
    else:
        entry = max(sorted(trees), key=lambda n: _top_level_code(trees[n]))
    if role == "fixed" and bugs:
        buggy_py, _ = _files(case_dir)
        mapped = []
        for f, ln in bugs:
            if f in buggy_py and f in py:
                mapped += [(f, m) for m in map_lines(buggy_py[f], py[f], [ln])]
        bugs = mapped
    proj = Project(entry, trees, sources=dict(py))
    # then the other files with a bug line, then the scripts (files with top-level code)
    rest = [f for f, _ in bugs if f != entry] + sorted((n for n in trees if _top_level_code(trees[n])),
                                                        key=lambda n: -_top_level_code(trees[n]))
    proj.other_entries = [f for i, f in enumerate(rest) if f != entry and f not in rest[:i]]
    proj.data = data
    for f, ln in bugs:
        node = innermost_stmt(trees[f], ln) if f in trees else None
        if node is not None:
            label = f"{f}:{ln}"
            tag(node, [label])
            proj.labels.append(label)
            proj.causes.add(label)
    return proj
