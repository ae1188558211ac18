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


def _promised() -> set[tuple[str, str, int]]:
    """(script, code, line) from samples/README.md's table: `DEV201 (44 position ids, 45 padding mask)`."""
    import re

    out = set()
    for row in (SAMPLES / "README.md").read_text().splitlines():
        m = re.match(r"\| `(\d\d_\w+\.py)` \|.*\| (.*) \|$", row)
        if not m:
            continue
        for code, lines in re.findall(r"(DEV\d{3}) \(([^)]*)\)", m.group(2)):
            out |= {(m.group(1), code, int(n)) for n in re.findall(r"\b(\d+)\b", lines)}
    return out


def test_readme_promises_what_the_engine_finds():
    found = {(p.name, d.code, d.span.line) for p in BUGGY for d in analyze(p.read_text(), str(p)).diagnostics}
    promised = _promised()
    assert len(promised) >= 10
    assert found == promised, {"promised, not found": promised - found, "found, not promised": found - promised}
