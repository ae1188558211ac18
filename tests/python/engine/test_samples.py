"""Every sample story is flagged; its clean counterpart is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from devflow.engine import analyze

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
BUGGY = sorted(p for p in SAMPLES.glob("*.py") if not p.stem.endswith("_fixed"))


@pytest.mark.parametrize("path", BUGGY, ids=lambda p: p.stem)
def test_sample_is_flagged(path):
    r = analyze(path.read_text(), str(path))
    assert not r.rule_errors
    assert r.diagnostics, f"{path.name}: no finding"


@pytest.mark.parametrize("path", BUGGY, ids=lambda p: p.stem)
def test_fixed_sample_is_clean(path):
    fixed = path.with_name(path.stem + "_fixed.py")
    assert fixed.exists()
    r = analyze(fixed.read_text(), str(fixed))
    assert not r.rule_errors
    assert r.diagnostics == [], [(d.code, d.span.line, d.message) for d in r.diagnostics]


def test_there_are_five_stories():
    assert len(BUGGY) == 5
