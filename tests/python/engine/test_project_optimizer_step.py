"""A project optimizer's own `step()` runs over what `torch.optim.Optimizer.__init__(params, defaults)` left on it
(analysis/interp/optimizer_base.py): `self.param_groups` (one group per dict given, else one group of all the
parameters, the defaults under the keys a group does not set), `self.state` (per-parameter state, empty until a
step fills it) and `self.defaults`. The parameters are on their module's device when the step loops over them,
so state made in the step without `device=` (`state["exp_avg"] = torch.zeros(p.shape)`) meets the moved
parameters' gradients: DEV201 where the state is made. State the optimizer's `__init__` makes is DEV304's eager
state (see test_unseen_as.py), not reported a second time here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devflow.api import check_path, check_source


def _found(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics)


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


_ONE_FILE = """
    import torch
    from torch.optim import Optimizer


    class MyAdam(Optimizer):
        def __init__(self, params, lr=1e-3, beta=0.9):
            super().__init__(params, dict(lr=lr, beta=beta))

        @torch.no_grad()
        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["exp_avg"] = STATE
                    exp_avg = state["exp_avg"]
                    exp_avg.mul_(group["beta"]).add_(p.grad, alpha=1 - group["beta"])
                    p.add_(exp_avg, alpha=-group["lr"])


    def main():
        device = DEVICE
        model = torch.nn.Linear(4, 2).to(device)
        opt = MyAdam(model.parameters())
        x = torch.randn(3, 4, device=device)
        model(x).sum().backward()
        opt.step()


    if __name__ == "__main__":
        main()
"""


def _one(state: str = "torch.zeros(p.shape)", device: str = 'torch.device("cuda")') -> str:
    return _ONE_FILE.replace("STATE", state).replace("DEVICE", device)


def test_state_made_in_step_without_device_meets_the_moved_parameters():
    src = _one()
    assert _found(src) == [(_line(src, 'state["exp_avg"] = '), "DEV201")]
    (d,) = check_source(textwrap.dedent(src), "t.py").diagnostics
    assert "without device=" in d.message and "p.grad" in d.message


def test_a_device_chosen_at_run_time_is_the_accelerator():
    src = _one(device='torch.device("cuda" if torch.cuda.is_available() else "cpu")')
    assert _found(src) == [(_line(src, 'state["exp_avg"] = '), "DEV201")]


@pytest.mark.parametrize("state", ["torch.zeros_like(p)", "torch.zeros(p.shape, device=p.device)", "p.new_zeros(p.shape)",
                                   "torch.zeros(p.shape).to(p)", "torch.zeros(p.shape).to(p.device)",
                                   "torch.zeros(p.shape).type_as(p)", "p.detach().clone().zero_()"])
def test_state_made_where_the_parameter_is_stays_silent(state):
    assert _found(_one(state)) == []


def test_a_model_on_the_cpu_or_on_an_unknown_device_stays_silent():
    assert _found(_one(device='torch.device("cpu")')) == []
    assert _found(_one(device="pick_device()").replace("import torch\n", "import torch\nfrom helpers import pick_device\n", 1)) == []


def test_keyword_arguments_and_an_explicit_super():
    src = _one().replace("super().__init__(params, dict(lr=lr, beta=beta))",
                         "super(MyAdam, self).__init__(params=params, defaults={'lr': lr, 'beta': beta})") \
        .replace("from torch.optim import Optimizer", "import torch.optim as optim").replace("(Optimizer)", "(optim.Optimizer)")
    assert _found(src) == [(_line(src, 'state["exp_avg"] = '), "DEV201")]


def test_defaults_not_known_leave_the_groups_unknown():
    src = _one().replace("dict(lr=lr, beta=beta)", "make_defaults(lr, beta)")
    assert _found(src) == []


_SGDW = """
    import torch
    from torch.optim.optimizer import Optimizer


    def _init_state(state, p):
        state["momentum_buffer"] = MAKE
        state["step"] = 0


    class SGDW(Optimizer):
        def __init__(self, params, lr=0.1, momentum=0.9, weight_decay=0.0):
            defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay}
            super(SGDW, self).__init__(params, defaults)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            for group in self.param_groups:
                momentum = group["momentum"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    d_p = p.grad.data
                    param_state = self.state[p]
                    if "momentum_buffer" not in param_state:
                        _init_state(param_state, p)
                    buf = param_state["momentum_buffer"]
                    buf.mul_(momentum).add_(d_p)
                    p.data.add_(buf, alpha=-group["lr"])
            return loss
"""

_TRAINER = """
    import torch
    from torch import nn

    from optim import SGDW


    class Trainer:
        def __init__(self, model, device):
            self.device = device
            self.model = model
            self.optimizer = SGDW([{"params": model.parameters(), "lr": 0.01}], momentum=0.5)
            self.model.to(device)

        def train_step(self, x, y):
            x, y = x.to(self.device), y.to(self.device)
            loss = nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


    def main():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        trainer = Trainer(nn.Linear(8, 1), device)
        trainer.train_step(torch.randn(4, 8), torch.randn(4, 1))


    if __name__ == "__main__":
        main()
"""


def _project(tmp_path: Path, make: str) -> list[tuple[str, int, str]]:
    files = {"optim/__init__.py": "from .sgdw import SGDW\n", "optim/sgdw.py": _SGDW.replace("MAKE", make),
             "train.py": _TRAINER}
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    out = []
    for name in files:
        out += [(name, d.span.line, d.code) for d in check_path(str(tmp_path / name)).diagnostics]
    return sorted(out)


def test_split_into_a_package_one_helper_deeper_inside_a_trainer_class(tmp_path: Path):
    """Param groups given as dicts (a group's own `lr`, the defaults' `momentum`), the optimizer built before the
    model moves (its parameters are where the model is when the step runs), the state made by a helper."""
    found = _project(tmp_path, "torch.zeros(p.size())")
    state_line = _line(_SGDW, 'state["momentum_buffer"] = ')
    assert found == [("optim/sgdw.py", state_line, "DEV201"), ("train.py", _line(_TRAINER, "self.optimizer.step()"), "DEV201")]


def test_the_package_with_the_state_made_on_the_parameter_stays_silent(tmp_path: Path):
    assert _project(tmp_path, "torch.zeros_like(p.data)") == []
