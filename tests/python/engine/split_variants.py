"""Semantics-preserving rewrites of corpus cases, to measure how the engine generalises:

    .venv/bin/python tests/python/engine/split_variants.py ../shared/corpus/public [--star]

`split`: every top-level class moves into models.py (with the file's imports), imported back with
`from models import A, B` (`--star`: `from models import *`); `main`: additionally, module-level
statements after the definitions move into a `main()` function called under `__main__`.
Recall is counted like measure_corpus.py (a diagnostic on a bug line of buggy.py, or of models.py for
lines that moved there); the fixed variants must stay silent."""

from __future__ import annotations

import ast
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "server"))

from devflow.api import check_path  # noqa: E402


def split(source: str, star: bool) -> tuple[str, str, dict[int, tuple[str, int]]] | None:
    """(main file, models.py, old line -> (file, new line)) or None when there is no class to move."""
    tree = ast.parse(source)
    lines = source.splitlines()
    imports = [st for st in tree.body if isinstance(st, (ast.Import, ast.ImportFrom))]
    classes = [st for st in tree.body if isinstance(st, ast.ClassDef)]
    if not classes:
        return None
    header = [lines[i] for st in imports for i in range(st.lineno - 1, st.end_lineno)]
    models, mapping = list(header) + [""], {}
    for c in classes:
        start = min([c.lineno] + [d.lineno for d in c.decorator_list])
        models.append("")
        for i in range(start - 1, c.end_lineno):
            mapping[i + 1] = ("models.py", len(models) + 1)
            models.append(lines[i])
    moved = {i for c in classes for i in range(min([c.lineno] + [d.lineno for d in c.decorator_list]) - 1, c.end_lineno)}
    names = ", ".join(c.name for c in classes)
    imp = "from models import *" if star else f"from models import {names}"
    last_import = max((st.end_lineno for st in imports), default=0)
    out = []
    for i, text in enumerate(lines):
        if i in moved:
            continue
        out.append(text)
        mapping[i + 1] = ("buggy.py", len(out))
        if i + 1 == last_import:
            out.append(imp)
    if last_import == 0:
        out.insert(0, imp)
        mapping = {k: (f, n + 1 if f == "buggy.py" else n) for k, (f, n) in mapping.items()}
    return "\n".join(out) + "\n", "\n".join(models) + "\n", mapping


def run_variant(case_dir: Path, name: str, star: bool) -> tuple[set, int] | None:
    src = (case_dir / name).read_text(encoding="utf-8")
    got = split(src, star)
    if got is None:
        return None
    main, models, mapping = got
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for f in case_dir.iterdir():
            if f.is_file() and f.suffix == ".py" and f.name not in ("buggy.py", "fixed.py"):
                (work / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
        (work / "buggy.py").write_text(main, encoding="utf-8")
        (work / "models.py").write_text(models, encoding="utf-8")
        found = set()
        n = 0
        for f in ("buggy.py", "models.py"):
            for d in check_path(str(work / f)).diagnostics:
                found.add((f, d.span.line))
                n += 1
    return found, n, mapping


def main(argv: list[str]) -> int:
    star = "--star" in argv
    folders = [a for a in argv if not a.startswith("--")]
    for folder in folders:
        hit = total = fixed_diags = 0
        for case_dir in sorted(p for p in Path(folder).iterdir() if (p / "case.json").exists()):
            case = json.loads((case_dir / "case.json").read_text())
            r = run_variant(case_dir, "buggy.py", star)
            if r is None:
                continue
            found, _, mapping = r
            want = {mapping.get(b) for b in case["bug_lines"] if isinstance(b, int)}
            ok = bool(want & found)
            total += 1
            hit += ok
            fx = run_variant(case_dir, "fixed.py", star) if (case_dir / "fixed.py").exists() else None
            nfix = fx[1] if fx else 0
            fixed_diags += nfix
            if not ok or nfix:
                print(f"{'MISS' if not ok else 'HIT '} {case_dir.name} want={sorted(w for w in want if w)} got={sorted(found)}"
                      + (f" FIXED-DIAGS={nfix}" if nfix else ""))
        print(f"== {folder} split{' (star)' if star else ''}: recall {hit}/{total}, diagnostics on fixed variants: {fixed_diags}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
