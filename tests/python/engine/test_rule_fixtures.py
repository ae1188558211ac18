"""Per-rule fixtures: tests/fixtures/rules/<CODE>/case.py -> case.txt ("line:col CODE" per diagnostic);
fix.in.py -> fix.out.py after applying every fix (safe and unsafe) through devflow.edits."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from devflow.edits import apply_edits
from devflow.engine import analyze
from devflow.rules import RULES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rules"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "case.py").exists())


@pytest.mark.parametrize("code", CASES)
def test_expected_diagnostics(code):
    d = FIXTURES / code
    result = analyze((d / "case.py").read_text(), str(d / "case.py"))
    got = "".join(f"{x.span.line}:{x.span.col + 1} {x.code}\n" for x in result.diagnostics)
    assert not result.rule_errors
    assert got == (d / "case.txt").read_text()
    assert any(x.code == code for x in result.diagnostics), f"{code} fixture does not trigger {code}"


@pytest.mark.parametrize("code", [c for c in CASES if (FIXTURES / c / "fix.in.py").exists()])
def test_fix(code):
    d = FIXTURES / code
    src = (d / "fix.in.py").read_text()
    result = analyze(src)
    fixes = [x.fix for x in result.diagnostics if x.fix is not None]
    assert fixes, f"{code}: no fix offered"
    for fix in fixes:
        assert fix.applicability == RULES[code].fix or any(x.code != code for x in result.diagnostics)
    out = apply_edits(src, [e for f in fixes for e in f.edits])
    assert out == (d / "fix.out.py").read_text()
    ast.parse(out)
    again = analyze(out)
    assert not [x for x in again.diagnostics if x.code == code], "the fix leaves the finding in place"


def test_every_rule_has_a_fixture():
    implemented = {c for c in RULES}
    assert implemented <= set(CASES), f"rules without fixtures: {sorted(implemented - set(CASES))}"
