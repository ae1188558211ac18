"""Generated pathological files finish (every pass is linear in the file), and a deadline stops the analysis
with `partial` set. Generous bounds: these catch quadratic passes, they are not micro-timings."""

from __future__ import annotations

import time

from devflow.engine import analyze

BOUND_S = 10.0


def _timed(source: str, **kw):
    t0 = time.monotonic()
    result = analyze(source, "p.py", **kw)
    return result, time.monotonic() - t0


def test_long_comparison_chain():
    src = "import torch\nx = torch.zeros(3)\ny = torch.ones(3, device='cuda')\nz = " + " < ".join(["x"] * 10_000) + " < y\n"
    result, took = _timed(src)
    assert took < BOUND_S
    assert result.error is None and not result.rule_errors
    assert [d.code for d in result.diagnostics] == ["DEV201"]  # one report for the chain, not 10,000


def test_class_name_redefined_many_times():
    one = ("class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.w = torch.zeros(3)\n    def forward(self, x):\n        return x * self.w\n\n")
    src = "import torch\nimport torch.nn as nn\n" + one * 1_000 + "model = Net().to('cuda')\nmodel(torch.randn(3, device='cuda'))\n"
    result, took = _timed(src)
    assert took < BOUND_S
    assert not result.rule_errors
    assert "DEV105" in {d.code for d in result.diagnostics}


def test_long_arithmetic_chain_is_a_clear_message_or_checked():
    src = "import torch\nx = torch.zeros(3)\ny = " + " + ".join(["x"] * 10_000) + "\n"
    result, took = _timed(src)
    assert took < BOUND_S
    assert not result.rule_errors


def test_many_functions_and_calls():
    body = "".join(f"def f{i}(x):\n    return f{i - 1}(x) + 1\n\n" if i else "def f0(x):\n    return x\n\n" for i in range(3_000))
    src = "import torch\n" + body + "print(f2999(torch.zeros(3)))\n"
    result, took = _timed(src)
    assert took < BOUND_S
    assert not result.rule_errors


def test_deadline_stops_the_analysis_and_says_so():
    block = ("def step{i}(model, device):\n    x = torch.randn(4, 8)\n    y = model(x.to(device))\n"
             "    z = y * torch.ones(8)\n    return z.sum()\n\n")
    src = "import torch\n" + "".join(block.format(i=i) for i in range(2_000))
    result, took = _timed(src, deadline=time.monotonic() + 0.05)
    assert result.partial
    assert took < BOUND_S  # parsing is not interruptible; the analysis after it stops
    full = analyze("import torch\nx = torch.zeros(2)\n", "small.py", deadline=time.monotonic() + 60)
    assert not full.partial
