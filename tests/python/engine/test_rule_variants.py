"""Variations a user would write, per rule: tests/fixtures/rules/<CODE>/variants/<name>.py -> <name>.txt
("line:col CODE" per expected diagnostic, of any rule; an empty file: the variant must stay silent).

True positives written differently (renamed, in a function, one block deeper) and the clean
counterparts that once raised false alarms on real application code. Not corpus copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from devflow.engine import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rules"
VARIANTS = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/variants/*.py"))


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant(variant):
    path = FIXTURES / variant
    result = analyze(path.read_text(), str(path))
    assert not result.rule_errors
    assert result.error is None, result.error
    got = "".join(f"{x.span.line}:{x.span.col + 1} {x.code}\n" for x in result.diagnostics)
    assert got == path.with_suffix(".txt").read_text()
