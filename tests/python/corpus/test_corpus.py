"""The engine against the public corpus: recall >= 95%, no diagnostic on fixed files, fix success >= 80%."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("corpus_eval", Path(__file__).with_name("corpus_eval.py"))
corpus_eval = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus_eval)


@pytest.fixture(scope="module")
def results(shared_dir):
    res = corpus_eval.evaluate(shared_dir)
    print()
    print(corpus_eval.report(res))
    corpus_eval.write_artifact(res)
    return res


def test_recall(results):
    missed = [r["id"] for r in results["rows"] if not r["hit"]]
    assert results["recall"] >= 0.95, f"missed: {missed}"


def test_fixed_versions_are_clean(results):
    noisy = {r["id"]: r["fixed_diagnostics"] for r in results["rows"] if r["fixed_diagnostics"]}
    assert not noisy


def test_no_rule_errors(results):
    errors = {r["id"]: r["rule_errors"] for r in results["rows"] if r["rule_errors"]}
    assert not errors


def test_fix_success(results):
    assert results["fix_cases"] >= 10
    failed = [(r["id"], r["fix_run"]) for r in results["rows"] if r.get("fix_eligible") and not r.get("fix_ok")]
    assert results["fix_success"] >= 0.80, f"fixes that did not help: {failed}"
