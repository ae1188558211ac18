"""The runnable cases of the public corpus (public, public2): `devflow dryrun` reports a finding on
one of buggy.py's bug_lines, and nothing on fixed.py, which ends normally. Prints the table."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

_spec = importlib.util.spec_from_file_location("corpus_dryrun", Path(__file__).with_name("corpus_dryrun.py"))
corpus_dryrun = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus_dryrun)

TARGET = 0.95


@pytest.fixture(scope="module")
def rows():
    if not corpus_dryrun.runnable_cases():
        pytest.skip("the shared corpus is not here")
    return corpus_dryrun.evaluate(jobs=2)


def test_corpus_coverage(rows):
    print("\n" + corpus_dryrun.table(rows))
    both = sum(r["found"] and r["fixed_clean"] for r in rows)
    assert both / len(rows) >= TARGET, corpus_dryrun.table(rows)
