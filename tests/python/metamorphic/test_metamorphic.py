"""Metamorphic suite (issue 10, "Guarding against overfitting"): the engine on semantics-preserving
rewrites of every public corpus case (tests/metamorphic). The rewriter's own checks always run;
all three targets of issue 10 are enforced (recall >= 90%, agreement >= 95%, no diagnostic on a
rewritten fixed variant).

    .venv/bin/python -m pytest -q tests/python/metamorphic -s   # prints the table per rewrite kind
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))

from metamorphic import measure  # noqa: E402
from metamorphic.rewrite import REWRITES  # noqa: E402

# The targets over all rewrites (identity excluded).
RECALL_TARGET = 0.90
AGREEMENT_TARGET = 0.95
FIXED_DIAGNOSTICS_MAX = 0
# Measured: main e1c3ca0 recall 62.1%, agreement 88.0%, 2 diagnostics on fixed variants;
# engine v2: 90.1%, 98.3%, 0 (helper_1 / helper_2 rewrites the weakest, 84.6%); session 10: 94.2%, 100%, 0 (helpers 92.3%).
# Every rewrite must apply to at least this many of the 52 cases (a rewriter that silently stops
# applying would make the targets meaningless).
MIN_APPLIED = {"identity": 52, "rename": 52, "split_module": 35, "wrap_main": 40, "helper_1": 50, "helper_2": 50,
               "device_args": 32, "device_config": 32, "trainer": 25}



@pytest.fixture(scope="module")
def results(shared_dir):
    res = measure.evaluate(shared_dir)
    print()
    print(measure.report(res))
    return res


def test_every_rewrite_produces_valid_python(results):
    invalid = [(r["case"], r["kind"], why) for r in results["rows"]
               for why in (r["skipped"], r["fixed_skipped"]) if why and why.startswith("invalid output")]
    assert not invalid


def test_rewrites_apply(results):
    table = results["table"]
    assert set(REWRITES) <= set(table)
    low = {k: table[k]["applied"] for k, n in MIN_APPLIED.items() if table[k]["applied"] < n}
    assert not low, f"rewrites applied to fewer cases than expected: {low}"


def test_identity_rewrite_changes_nothing(results):
    """Unparsing alone (no rewrite) must not change any verdict: the control row."""
    t = results["table"]["identity"]
    assert t["agreement"] == 1.0 and t["fixed_diagnostics"] == 0


def test_recall_on_rewritten_buggy_variants(results):
    t = results["table"]["all rewrites"]
    assert t["recall"] >= RECALL_TARGET, f"recall {t['recall']:.1%} < {RECALL_TARGET:.0%}"


def test_agreement_with_unrewritten_cases(results):
    t = results["table"]["all rewrites"]
    assert t["agreement"] >= AGREEMENT_TARGET, f"agreement {t['agreement']:.1%} < {AGREEMENT_TARGET:.0%}"


def test_no_diagnostics_on_rewritten_fixed_variants(results):
    noisy = {(r["case"], r["kind"]): r["fixed_diagnostics"] for r in results["rows"] if r.get("fixed_diagnostics")}
    assert sum(len(v) for v in noisy.values()) <= FIXED_DIAGNOSTICS_MAX, noisy
