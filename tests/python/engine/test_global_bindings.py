"""Which binding of a module-level name a function reads (field false alarm M13): a function the module
calls reads the bindings live at each call; one it never calls (a UI callback, a method, a notebook cell's
function handed to a library) may run any time after its definition, so it reads the join of the bindings
from there on, and different objects or devices joined are unknown (silent); an imported module's
function reads that module's final bindings. Each case (tests/fixtures/engine/global_bindings/<case>/,
scripts and notebooks checked by path) must give exactly its expect.txt ("file:LINE CODE")."""

from __future__ import annotations

from pathlib import Path

import pytest

from project_fixtures import expected, findings

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "global_bindings"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "expect.txt").exists())


@pytest.mark.parametrize("name", NAMES)
def test_global_binding_case(name):
    assert findings(CASES / name) == expected(CASES / name)


def test_reported_and_silent_cases():
    reported = [n for n in NAMES if (CASES / n / "expect.txt").read_text().strip()]
    assert reported and len(reported) < len(NAMES)
