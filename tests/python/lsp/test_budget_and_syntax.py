"""Pathological files get a time budget and a "checked in part" notice, and never hold up other
files; valid code in a newer grammar than the server's Python is a notice, never E999."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types

from devflow import api
from lsp_harness import CANONICAL

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from lsp_latency import make_source  # noqa: E402

BIG = make_source(20000)


def test_a_spent_time_budget_stops_the_analysis_and_says_so():
    result = api.check_source(BIG, "big.py", deadline=time.monotonic())
    assert result.partial and result.error is None
    assert not api.check_source(CANONICAL, "small.py", deadline=time.monotonic() + 60).partial
    assert not api.check_source(CANONICAL, "small.py").partial


async def test_a_huge_file_is_checked_in_part_and_does_not_hold_up_others(start):
    s = await start(profile="visual-studio-code", encoding="utf-16", settings={"debounceMs": 0, "timeBudgetMs": 300})
    big, small = "file:///tmp/devflow-budget/big.py", "file:///tmp/devflow-budget/small.py"
    s.open(big, BIG)
    s.open(small, CANONICAL)
    assert any(d.code == "DEV101" for d in await s.diagnostics(small, timeout=60))
    notice = [d for d in await s.diagnostics(big, timeout=120) if d.code == "partial"]
    assert notice and "only in part" in notice[0].message and "devflow.timeBudgetMs" in notice[0].message
    assert "0.3 s" in notice[0].message
    assert notice[0].severity == types.DiagnosticSeverity.Information and notice[0].range.start.line == 0


NEWER = """import torch

type Pair = tuple[torch.Tensor, torch.Tensor]


def first[T](xs: list[T]) -> T:
    return xs[0]


print(f"{"nested quotes"}")
"""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the server's own parser reads 3.12 syntax")
def test_newer_syntax_is_a_notice_not_a_syntax_error():
    result = api.check_source(NEWER, "new.py")
    assert api.error_code(result) == "E998"
    assert "Python 3.12+" in result.error and "devflow.interpreter" in result.error
    broken = api.check_source("x = 1 = 2\nprint(f'{x}')\n", "bad.py")
    assert api.error_code(broken) == "E999"  # a real error stays one
    mid_typing = api.check_source("def f[T](x: T) -> T:\n    return (x\n", "typing.py")
    assert api.error_code(mid_typing) == "E999"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the server's own parser reads 3.12 syntax")
async def test_newer_syntax_in_the_editor(start):
    s = await start(profile="visual-studio-code", encoding="utf-16")
    uri = "file:///tmp/devflow-budget/new.py"
    s.open(uri, NEWER)
    diags = await s.diagnostics(uri)
    assert [d.code for d in diags] == ["E998"]
    assert diags[0].severity == types.DiagnosticSeverity.Information
    assert "Python 3.12" in diags[0].message
