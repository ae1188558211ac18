"""Where optimizer state lives: torch.optim creates it lazily (first step(), on the parameters'
device then); a few optimizers, and many a project's own, create it in __init__ (DEV304)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from devflow.analysis import torch_api as T
from devflow.analysis.index import FileIndex
from devflow.analysis.interp.modules import eager_state_store
from devflow.engine import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "engine"


def test_eager_state_table_matches_the_installed_torch():
    """EAGER_STATE_OPTIMIZERS is what the engine's own summary finds in torch.optim's sources."""
    torch = pytest.importorskip("torch")
    found = set()
    for f in sorted((Path(torch.__file__).parent / "optim").glob("*.py")):
        index = FileIndex(ast.parse(f.read_text(encoding="utf-8")), "torch.optim")
        found |= {info.name for info in index.all_classes if eager_state_store(info, index) is not None}
    assert found == set(T.EAGER_STATE_OPTIMIZERS)


def test_adagrad_before_the_move_is_reported_adam_is_not():
    r = analyze((FIXTURES / "adagrad_built_before_move.py").read_text())
    assert [(d.code, d.span.line) for d in r.diagnostics] == [("DEV304", 17)]
    (d,) = r.diagnostics
    assert "torch.optim.Adagrad" in d.message and any(x.span.line == 19 for x in d.related)


def test_eager_state_of_python_numbers_only_is_not_reported():
    src = (
        "import torch\nimport torch.nn as nn\n\n\n"
        "class Counting(torch.optim.Optimizer):\n"
        "    def __init__(self, params):\n"
        "        super().__init__(params, {'lr': 0.1})\n"
        "        for g in self.param_groups:\n"
        "            for p in g['params']:\n"
        "                self.state[p]['step'] = 0\n"
        "                self.state[p]['seen'] = float(p.numel())\n\n\n"
        "net = nn.Linear(2, 2)\nopt = Counting(net.parameters())\nnet.cuda()\n"
    )
    assert analyze(src).diagnostics == []


def test_unknown_model_device_stays_silent():
    src = (
        "import torch\n\n\n"
        "def make(model, device):\n"
        "    opt = torch.optim.Adagrad(model.parameters())\n"
        "    model.to(device)\n"
        "    return opt\n"
    )
    assert analyze(src).diagnostics == []


def test_forms_of_eager_state():
    """`self.state[p] = {k: p.new_zeros(...)}` and `self.state[p].update(k=p.clone())` are eager state;
    a non-tensor entry (`self.state["meta"] = {...}`) is not."""
    r = analyze((FIXTURES / "eager_state_forms.py").read_text())
    assert [(d.code, d.span.line) for d in r.diagnostics] == [("DEV304", 28), ("DEV304", 30)]


def test_state_made_by_a_step_before_the_move():
    """Adam's first step() creates exp_avg on cpu; the model moves after: reported at the step. Plain
    SGD (no momentum) keeps no state tensors: silent."""
    r = analyze((FIXTURES / "optimizer_stepped_before_move.py").read_text())
    assert [(d.code, d.span.line) for d in r.diagnostics] == [("DEV304", 16)]
    assert "move the model before the first step" in r.diagnostics[0].message


TRAIN_THEN_MOVE = '''import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(8, 2)
model.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def train(epoch):
    for _ in range(3):
        loss = model(torch.randn(4, 8, device=device)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


for epoch in range(2):
    train(epoch)
{after}
'''


def test_model_moved_to_cpu_after_training_is_not_reported():
    """Training is over: the model goes to the cpu for an inference pipeline; the optimizer's state
    stays on the gpu but is never used again (field: a NER notebook)."""
    src = TRAIN_THEN_MOVE.format(after='cpu_model = model.to("cpu")\nprint(cpu_model(torch.randn(1, 8)))')
    assert analyze(src).diagnostics == []


def test_training_again_after_moving_to_cpu_is_reported():
    src = TRAIN_THEN_MOVE.format(after='model.to("cpu")\ndevice = "cpu"\ntrain(3)')
    assert [d.code for d in analyze(src).diagnostics] == ["DEV304"]
