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


FIXED = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/variants/fixed/*.py"))


@pytest.mark.parametrize("fixed", FIXED)
def test_fixed_variant_runs_to_the_end(fixed, tmp_path, shared_dir):
    """`--fix --unsafe-fixes` on the variant gives variants/fixed/<name>.py, and that program runs to the
    end on the meta device with CUDA's cross-device rule (meta_run.py --strict): a fix that runs."""
    import json
    import subprocess
    import sys

    from devflow.api import check_source, fix_source

    expected = FIXTURES / fixed
    source_path = expected.parent.parent / expected.name
    source = source_path.read_text()
    out, _, _ = fix_source(source, check_source(source, str(source_path)).diagnostics, unsafe=True, path=str(source_path))
    assert out == expected.read_text()
    script = tmp_path / expected.name
    script.write_text(out)
    p = subprocess.run([sys.executable, str(shared_dir / "corpus" / "tools" / "meta_run.py"), "--strict",
                        "--workdir", str(tmp_path), str(script)], capture_output=True, text=True, timeout=300)
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok", result
    before = tmp_path / ("buggy_" + expected.name)
    before.write_text(source)
    p = subprocess.run([sys.executable, str(shared_dir / "corpus" / "tools" / "meta_run.py"), "--strict",
                        "--workdir", str(tmp_path), str(before)], capture_output=True, text=True, timeout=300)
    assert json.loads(p.stdout.strip().splitlines()[-1])["status"] != "ok", "the variant does not fail before the fix"
