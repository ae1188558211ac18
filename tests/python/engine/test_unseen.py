"""Generalisation to unseen real cases (issue 10): tests/fixtures/engine/unseen/<case>/ rebuilds a device
bug from a public GitHub report (its URL in `source.txt`) the way its user wrote it: their classes,
helpers and files. Every .py file is checked by path (its imports of the other files resolve) and the
findings must be exactly `expect.txt` ("file:LINE CODE" per finding). Each buggy case has a `*_fixed`
twin with the report's fix applied and 0 diagnostics; `silent_*` cases are variations where
what is unknown must stay silent. A case whose `source.txt` has a
`# not found yet:` line is a known miss (xfail) and says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from project_fixtures import findings

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "unseen"


def _findings(case: Path) -> list[str]:
    return findings(case, relative=True)


def _not_found_yet(case: Path) -> bool:
    src = case / "source.txt"
    return src.exists() and "# not found yet:" in src.read_text()


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.iterdir() if (p / "expect.txt").exists()))
def test_unseen_case(name):
    case = CASES / name
    if _not_found_yet(case):
        pytest.xfail((case / "source.txt").read_text().split("# not found yet:", 1)[1].strip())
    want = sorted(line for line in (case / "expect.txt").read_text().splitlines() if line.strip())
    assert _findings(case) == want


def test_every_buggy_case_has_a_source_and_a_clean_fixed_twin():
    names = {p.name for p in CASES.iterdir() if (p / "expect.txt").exists()}
    for n in names - {x for x in names if x.endswith("_fixed") or x.startswith("silent_")}:
        assert n + "_fixed" in names, n
        assert (CASES / n / "source.txt").read_text().startswith("https://github.com/"), n
        assert not (CASES / (n + "_fixed") / "expect.txt").read_text().strip(), n
