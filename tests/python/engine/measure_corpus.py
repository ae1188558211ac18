"""Recall and fixed-variant silence of the engine on a corpus folder (public, public2, ...).

    .venv/bin/python tests/python/engine/measure_corpus.py ../shared/corpus/public2 [...more folders]

A case is hit when a diagnostic lands on one of case.json's `bug_lines` (an int is a line of
buggy.py; "file.py:LINE" a line of another file of a multi-file case, listed in `files`). Every file
of a case is checked as one project (imports between them resolve), the buggy variant with buggy.py,
the fixed one with fixed.py in its place; the fixed variant must get no diagnostic at all.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "server"))

from devflow.api import check_path  # noqa: E402


def _variant(case_dir: Path, case: dict, main: str) -> dict[str, list]:
    """Diagnostics per file name, the case's files checked together with `main` as buggy.py."""
    extra = [f for f in case.get("files", []) if f not in ("buggy.py", "fixed.py")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "buggy.py").write_text((case_dir / main).read_text(encoding="utf-8"), encoding="utf-8")
        for f in extra:
            (work / f).parent.mkdir(parents=True, exist_ok=True)
            (work / f).write_text((case_dir / f).read_text(encoding="utf-8"), encoding="utf-8")
        names = ["buggy.py", *extra]
        return {n: check_path(str(work / n)).diagnostics for n in names if n.endswith(".py")}


def measure(folder: Path) -> tuple[int, int, int, list[str]]:
    hit = total = fixed_diags = 0
    lines = []
    for case_dir in sorted(p for p in folder.iterdir() if (p / "case.json").exists()):
        case = json.loads((case_dir / "case.json").read_text())
        want = set()
        for b in case["bug_lines"]:
            if isinstance(b, int):
                want.add(("buggy.py", b))
            else:
                f, _, n = str(b).rpartition(":")
                want.add((f, int(n)))
        got = _variant(case_dir, case, "buggy.py")
        found = {(f, d.span.line) for f, ds in got.items() for d in ds}
        ok = bool(want & found)
        total += 1
        hit += ok
        nfix = 0
        if (case_dir / "fixed.py").exists():
            nfix = sum(len(ds) for ds in _variant(case_dir, case, "fixed.py").values())
            fixed_diags += nfix
        codes = sorted({f"{f}:{d.span.line}:{d.code}" for f, ds in got.items() for d in ds})
        lines.append(f"{'HIT ' if ok else 'MISS'} {case_dir.name} want={sorted(want)} got={codes}"
                     + (f" FIXED-DIAGS={nfix}" if nfix else ""))
    return hit, total, fixed_diags, lines


def main(argv: list[str]) -> int:
    for arg in argv or [str(ROOT.parent / "shared" / "corpus" / "public")]:
        hit, total, fixed_diags, lines = measure(Path(arg))
        print("\n".join(lines))
        print(f"== {arg}: recall {hit}/{total}, diagnostics on fixed variants: {fixed_diags}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
