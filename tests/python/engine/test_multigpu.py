"""Multi-GPU semantics (issue 10, capability 5): tests/fixtures/engine/multigpu/<case>/ holds a small
project; every .py file in it is checked by path (its imports of the other files resolve) and the
findings must be exactly `expect.txt` ("file:LINE CODE" per finding; empty for a clean project).

Cases are variations a user writes, not corpus copies: the rank read from LOCAL_RANK, from
`--local-rank`, passed by `mp.spawn`, behind a helper in another file, inside a trainer class; a
`*_fixed` twin of each with 0 diagnostics; `silent_*` cases where the index is unknown or the current
device is set (stays silent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devflow.analysis.lattice import CPU, Dev, definitely_differ, join
from devflow.api import check_path
from project_fixtures import findings

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "multigpu"


def _findings(case: Path) -> list[str]:
    return findings(case)


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.iterdir() if (p / "expect.txt").exists()))
def test_multigpu_case(name):
    case = CASES / name
    want = sorted(line for line in (case / "expect.txt").read_text().splitlines() if line.strip())
    assert _findings(case) == want


def test_every_buggy_case_has_a_clean_fixed_twin():
    names = {p.name for p in CASES.iterdir() if (p / "expect.txt").exists()}
    for n in names:
        if not n.endswith("_fixed") and not n.startswith("silent_"):
            assert n + "_fixed" in names, n


def test_rank_device_lattice():
    rank_fixed_current = Dev("cuda", key=("rank", 0), text="cuda:{rank}")
    rank_set_current = Dev("cuda", key=("rank", None), text="cuda:{rank}")
    current, any_index = Dev("cuda"), join(Dev("cuda", 0), Dev("cuda", 1))
    assert definitely_differ(rank_fixed_current, current)  # set_device never called: cuda:0 everywhere
    assert not definitely_differ(rank_set_current, current)  # the program sets it: unknown
    assert definitely_differ(rank_set_current, Dev("cuda", 0))  # a fixed GPU: another in every process but one
    assert not definitely_differ(rank_fixed_current, rank_set_current)
    assert not definitely_differ(any_index, Dev("cuda", 3)) and not definitely_differ(any_index, rank_fixed_current)
    assert definitely_differ(any_index, CPU) and definitely_differ(rank_fixed_current, CPU)
    assert rank_fixed_current.source_text() is None and rank_fixed_current.render() == "cuda:{rank}"


def test_rank_mix_message_explains_the_current_device():
    (d,) = check_path(str(CASES / "ddp_env_rank" / "train.py")).diagnostics
    assert "cuda:{local_rank}" in d.message and "current one, cuda:0" in d.message
