"""The engine against the corpus folders: gates per folder (recall, fixed-clean, fixes that run to the end).

The gates are the figures measured when they were last raised; raise them as the engine improves,
never lower them to let a regression through. `corpus_eval.py` prints the full table.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("corpus_eval", Path(__file__).with_name("corpus_eval.py"))
corpus_eval = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus_eval)

# folder -> minimum recall at a bug line
RECALL = {"public": 0.95, "public2": 0.85}
# folder -> maximum number of diagnostics on the fixed variants
FIXED_DIAGNOSTICS = {"public": 0, "public2": 0}
# folder -> minimum share of runnable cases that run to the end after `--fix --unsafe-fixes`
FIX_RUNS_TO_END = {"public": 0.95, "public2": 0.80}
# both folders together (issue 11: >= 90% of the runnable cases run to the end after the fix)
FIX_RUNS_TO_END_ALL = 0.90
# scripts that ran before and fail after devflow's fix: never
FIX_BROKE = 0


@pytest.fixture(scope="module")
def results(shared_dir):
    res = corpus_eval.evaluate(shared_dir)
    print()
    print(corpus_eval.report(res))
    corpus_eval.write_artifact(res)
    return res


@pytest.mark.parametrize("folder", corpus_eval.FOLDERS)
def test_recall(results, folder):
    res = results[folder]
    assert res["cases"] > 0, f"no cases in {folder}"
    missed = [r["id"] for r in res["rows"] if not r["hit"]]
    assert res["recall"] >= RECALL[folder], f"{folder}: recall {res['recall']:.1%}; missed: {missed}"


@pytest.mark.parametrize("folder", corpus_eval.FOLDERS)
def test_fixed_versions_are_clean(results, folder):
    noisy = {r["id"]: r["fixed_diagnostics"] for r in results[folder]["rows"] if r["fixed_diagnostics"]}
    assert results[folder]["fixed_false_positives"] <= FIXED_DIAGNOSTICS[folder], noisy


@pytest.mark.parametrize("folder", corpus_eval.FOLDERS)
def test_no_rule_errors(results, folder):
    errors = {r["id"]: r["rule_errors"] for r in results[folder]["rows"] if r["rule_errors"]}
    assert not errors


@pytest.mark.parametrize("folder", corpus_eval.FOLDERS)
def test_fixed_scripts_run_to_the_end(results, folder):
    res = results[folder]
    assert res["fix_cases"] >= 10
    failed = [(r["id"], r["fix_run"]) for r in res["rows"] if "fix_ok" in r and not r["fix_ok"]]
    assert res["fix_runs_to_end"] >= FIX_RUNS_TO_END[folder], f"{folder}: scripts that do not run to the end: {failed}"


@pytest.mark.parametrize("folder", corpus_eval.FOLDERS)
def test_no_fix_breaks_a_script(results, folder):
    broke = [(r["id"], r["fix_run"]) for r in results[folder]["rows"] if r.get("fix_broke")]
    assert len(broke) <= FIX_BROKE, broke


def test_fixed_scripts_run_to_the_end_over_both_folders(results):
    rows = [r for folder in corpus_eval.FOLDERS for r in results[folder]["rows"] if "fix_ok" in r]
    ok = sum(r["fix_ok"] for r in rows)
    assert rows and ok / len(rows) >= FIX_RUNS_TO_END_ALL, f"{ok}/{len(rows)} runnable cases run to the end after the fix"

