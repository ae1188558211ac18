"""Fix pairs beyond each rule's one fix.in.py: tests/fixtures/rules/<CODE>/fixes/<name>.in.py -> <name>.out.py
after applying every fix through the engine (the same path as `devflow check --fix --unsafe-fixes`), the
finding gone, and both files replayed with cuda faked on the meta device (the corpus' meta_run.py, strict
mode): the input fails with a device error, the output runs to the end. <name>.nofix.py: the finding
stays and no fix is offered (repeating the move there would not move the model the same way)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from devflow.edits import apply_edits
from devflow.engine import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rules"
PAIRS = sorted(FIXTURES.glob("*/fixes/*.in.py"))
NO_FIX = sorted(FIXTURES.glob("*/fixes/*.nofix.py"))


def _id(p: Path) -> str:
    return f"{p.parents[1].name}/{p.name.split('.')[0]}"


def _meta_run(shared: Path, script: Path, tmp: Path) -> dict:
    p = subprocess.run([sys.executable, str(shared / "corpus" / "tools" / "meta_run.py"), "--strict", "--workdir",
                        str(tmp), str(script)], cwd=tmp, capture_output=True, text=True, timeout=300)
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("src_path", PAIRS, ids=_id)
def test_fix_pair(src_path: Path, shared_dir: Path, tmp_path: Path):
    code = src_path.parents[1].name
    src = src_path.read_text()
    result = analyze(src, str(src_path))
    mine = [d for d in result.diagnostics if d.code == code]
    assert mine, f"{_id(src_path)} does not trigger {code}"
    assert all(d.fix is not None for d in mine), f"{code} without a fix"
    out = apply_edits(src, [e for d in result.diagnostics if d.fix for e in d.fix.edits])
    assert out == src_path.with_name(src_path.name.replace(".in.py", ".out.py")).read_text()
    assert not analyze(out).diagnostics, "the fixed program still has findings"
    fixed = tmp_path / "fixed.py"
    fixed.write_text(out)
    assert _meta_run(shared_dir, src_path, tmp_path).get("device_error"), "the input does not fail as the finding says"
    run = _meta_run(shared_dir, fixed, tmp_path)
    assert run["status"] == "ok", run


@pytest.mark.parametrize("src_path", NO_FIX, ids=_id)
def test_no_fix(src_path: Path):
    code = src_path.parents[1].name
    result = analyze(src_path.read_text(), str(src_path))
    mine = [d for d in result.diagnostics if d.code == code]
    assert mine and all(d.fix is None for d in mine)


def test_statement_inserted_after_a_methods_last_line_reads_its_parameters():
    """An insertion just below a function's last statement, at its body's indentation, is in that
    function (`self` is bound there); at module indentation it is not."""
    import ast

    from devflow.rules.fix_safety import names_bound

    src = "class T:\n    def __init__(self, m):\n        self.m = m\n        self.m.reset(3)\n\n\nt = T(None)\n"
    tree = ast.parse(src)
    assert names_bound(tree, 5, "        self.m.to(self.d)\n")
    assert not names_bound(tree, 5, "self.m.to(self.d)\n")
