"""Semantics found missing on unseen real cases, batch AS (tests/fixtures/engine/unseen/as_*): checkpoints,
optimizer state and the training loop's state.

- `optimizer.load_state_dict(sd)` casts every state tensor to its parameter's device *of that moment*: a
  load (even `opt.load_state_dict(opt.state_dict())`) once every model the optimizer updates has moved
  re-places state left behind by the move (Adagrad's `state["sum"]` made in `__init__`, state restored
  before the move): the earlier DEV304 / DEV302 goes (hippynn#15, through a controller object and a
  setup routine in another file). A load before the move, or of another optimizer, changes nothing.
- `isinstance(x, dict)` (any builtin type) of an instance of a project class that derives from no builtin
  type is False, and `isinstance(x, Base)` of an instance of a project subclass of `Base` is True: the
  branch that converts a dict into the params object, or builds a default controller when none was
  given, is not the path taken (hippynn's `setup_training`).
- `c and x or y` with `x` always truthy (a non-empty string, a `torch.device(...)`) is the old spelling of
  `x if c else y`: `(torch.cuda.is_available() and torch.device(...)) or torch.device("cpu")` chooses the
  accelerator like the conditional expression does (hippynn's `tools.device_fallback`).
- An optimizer that keeps copies of its parameters as its own attribute, made in `__init__`
  (`self.slow_weights = [[p.clone().detach() for p in group["params"]] for group in self.param_groups]`,
  LookAhead in Ranger), holds per-parameter state on the device the parameters have then, like state
  written into `self.state[p]` (DEV304, Ranger#1).
- A project optimizer (a subclass of `torch.optim.Optimizer`) restored with the `load_state_dict` it
  inherits is restored like a built-in one: loaded before the model moves, its state stays on the cpu
  (DEV302, mt-dnn#40: `Adamax` restored in `MTDNNModel.__init__`, moved by `MTDNNModel.cuda()`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _project(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return sorted((str(Path(f)), d.span.line, d.code) for f in files if f.endswith(".py")
                  for d in check_path(str(tmp_path / f)).diagnostics)


# --- a state dict loaded after the move re-places the state -------------------------------------------

_ADAGRAD = """
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 4)
    opt = torch.optim.Adagrad(model.parameters())
    model.to("cuda")
    {reload}
    model(torch.randn(2, 4, device="cuda")).sum().backward()
    opt.step()
"""


def test_adagrad_built_before_the_move_is_reported():
    assert _codes(_ADAGRAD.format(reload="")) == [(6, "DEV304")]


def test_own_state_dict_reloaded_after_the_move_stays_silent():
    assert _codes(_ADAGRAD.format(reload="opt.load_state_dict(opt.state_dict())")) == []


def test_checkpoint_loaded_into_the_optimizer_after_the_move_stays_silent():
    src = _ADAGRAD.format(reload='opt.load_state_dict(torch.load("ckpt.pt", map_location="cpu")["optimizer"])')
    assert _codes(src) == []


def test_reload_of_another_optimizer_does_not_cure_this_one():
    src = """
        import torch
        import torch.nn as nn

        model, head = nn.Linear(4, 4), nn.Linear(4, 2)
        opt = torch.optim.Adagrad(model.parameters())
        other = torch.optim.Adagrad(head.parameters())
        model.to("cuda")
        head.to("cuda")
        other.load_state_dict(other.state_dict())
        model(torch.randn(2, 4, device="cuda")).sum().backward()
        opt.step()
    """
    assert [c for c in _codes(src) if c[0] == 6] == [(6, "DEV304")]


def test_restore_before_the_move_then_reload_after_it_stays_silent():
    src = """
        import torch
        import torch.nn as nn


        def resume(path):
            model = nn.Linear(4, 4)
            optimizer = torch.optim.Adam(model.parameters())
            optimizer.load_state_dict(torch.load(path, map_location="cpu")["optimizer"])
            model.cuda()
            optimizer.load_state_dict(optimizer.state_dict())
            return model, optimizer
    """
    assert _codes(src) == []


_CONTROLLER = {
    "train/controllers.py": """
        class Controller:
            def __init__(self, optimizer, batch_size):
                self.optimizer = optimizer
                self.batch_size = batch_size


        class PatienceController(Controller):
            def __init__(self, *args, termination_patience, **kwargs):
                super().__init__(*args, **kwargs)
                self.patience = termination_patience
    """,
    "train/routines.py": """
        from dataclasses import dataclass
        from typing import Optional

        import torch

        from .controllers import Controller


        @dataclass
        class SetupParams:
            device: Optional[str] = None
            controller: Optional[Controller] = None
            optimizer: object = torch.optim.Adam


        def device_fallback():
            return (torch.cuda.is_available() and torch.device(torch.cuda.current_device())) or torch.device("cpu")


        def setup_training(model, setup_params):
            if isinstance(setup_params, dict):
                setup_params = SetupParams(**setup_params)
            model.to(setup_params.device or device_fallback())
            controller = setup_params.controller
            if not isinstance(controller, Controller):
                controller = Controller(setup_params.optimizer(model.parameters()), 16)
            {reload}
            return controller


        def train(model, controller, batches):
            for x, y in batches:
                controller.optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x.cuda()), y.cuda()).backward()
                controller.optimizer.step()
    """,
    "run.py": """
        import torch
        import torch.nn as nn

        from train.controllers import PatienceController
        from train.routines import SetupParams, setup_training, train

        if __name__ == "__main__":
            model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
            optimizer = torch.optim.Adagrad(model.parameters(), lr=1e-3)
            controller = PatienceController(optimizer=optimizer, batch_size=16, termination_patience=5)
            controller = setup_training(model, SetupParams(controller=controller))
            train(model, controller, torch.load("batches.pt"))
    """,
}


def _controller_files(reload: str) -> dict[str, str]:
    files = dict(_CONTROLLER)
    files["train/routines.py"] = files["train/routines.py"].replace("{reload}", reload)
    files["train/__init__.py"] = ""
    return files


def test_optimizer_given_in_a_controller_moved_by_a_setup_routine_is_reported(tmp_path: Path):
    assert _project(tmp_path, _controller_files("")) == [("run.py", 10, "DEV304")]


def test_controller_optimizer_reloaded_after_the_setup_move_stays_silent(tmp_path: Path):
    files = _controller_files("else:\n                controller.optimizer.load_state_dict(controller.optimizer.state_dict())")
    assert _project(tmp_path, files) == []


# --- isinstance of project instances, `c and x or y` ---------------------------------------------------

def test_isinstance_of_a_project_instance_decides_the_branch():
    src = """
        import torch
        import torch.nn as nn


        class Params:
            def __init__(self, device):
                self.device = device


        class Base:
            pass


        class Child(Base):
            pass


        def setup(model, params, helper):
            if isinstance(params, dict):
                params = Params(**params)
            if not isinstance(helper, Base):
                model = nn.Linear(4, 4)
            model.to(params.device)
            return model


        net = nn.Linear(4, 4)
        opt = torch.optim.Adagrad(net.parameters())
        net = setup(net, Params("cuda"), Child())
        net(torch.randn(2, 4, device="cuda")).sum().backward()
        opt.step()
    """
    assert _codes(src) == [(29, "DEV304")]


def test_a_project_class_built_on_dict_stays_undecided():
    src = """
        class Config(dict):
            pass


        def f(cfg):
            return isinstance(cfg, dict)


        print(f(Config()))
    """
    assert _codes(src) == []


def test_and_or_device_choice_is_the_accelerator():
    src = """
        import torch
        import torch.nn as nn

        device = (torch.cuda.is_available() and torch.device("cuda")) or torch.device("cpu")
        model = nn.Linear(4, 4)
        opt = torch.optim.Adagrad(model.parameters())
        model.to(device)
        model(torch.randn(2, 4, device=device)).sum().backward()
        opt.step()
    """
    assert _codes(src) == [(7, "DEV304")]


def test_and_or_device_choice_built_after_the_move_stays_silent():
    src = """
        import torch
        import torch.nn as nn

        device = torch.cuda.is_available() and "cuda" or "cpu"
        model = nn.Linear(4, 4).to(device)
        opt = torch.optim.Adagrad(model.parameters())
        x = torch.randn(2, 4).to(device)
        model(x).sum().backward()
        opt.step()
    """
    assert _codes(src) == []


# --- parameter copies an optimizer keeps as its own attribute ------------------------------------------

_LOOKAHEAD = """
    import itertools as it

    import torch
    from torch.optim.optimizer import Optimizer


    class Lookahead(Optimizer):
        def __init__(self, params, lr=1e-3, alpha=0.5, k=6):
            super().__init__(params, dict(lr=lr))
            self.alpha, self.k = alpha, k
            self.buffer = [[None, None, None] for ind in range(10)]
            self.slow_weights = [[p.clone().detach() for p in group['params']]
                                 for group in self.param_groups]
            for w in it.chain(*self.slow_weights):
                w.requires_grad = False

        @torch.no_grad()
        def step(self, closure=None):
            for group, slow_weights in zip(self.param_groups, self.slow_weights):
                for p, q in zip(group['params'], slow_weights):
                    p.add_(p.grad, alpha=-group['lr'])
                    q.add_({other}, alpha=self.alpha)
                    p.copy_(q)
"""

_LOOKAHEAD_TRAIN = """
    import torch
    import torch.nn as nn

    from lookahead import Lookahead


    class Trainer:
        def __init__(self, model, device):
            self.model = model
            {first}
            {second}

        def fit(self, batches):
            for x, y in batches:
                self.opt.zero_grad()
                nn.functional.cross_entropy(self.model(x.to(self.device)), y.to(self.device)).backward()
                self.opt.step()


    if __name__ == "__main__":
        Trainer(nn.Linear(16, 3), "cuda").fit(torch.load("batches.pt"))
"""

_BUILD = "self.opt = Lookahead(self.model.parameters(), lr=1e-3)"
_MOVE = "self.device = device; self.model.to(device)"


def test_parameter_copies_kept_as_an_optimizer_attribute_are_eager_state(tmp_path: Path):
    files = {"lookahead.py": _LOOKAHEAD.replace("{other}", "p - q"),
             "train.py": _LOOKAHEAD_TRAIN.format(first=_BUILD, second=_MOVE)}
    assert _project(tmp_path, files) == [("train.py", 11, "DEV304")]


def test_lookahead_built_after_the_move_stays_silent(tmp_path: Path):
    files = {"lookahead.py": _LOOKAHEAD.replace("{other}", "p - q"),
             "train.py": _LOOKAHEAD_TRAIN.format(first=_MOVE, second=_BUILD)}
    assert _project(tmp_path, files) == []


def test_lookahead_whose_step_brings_the_copies_to_the_parameter_stays_silent(tmp_path: Path):
    files = {"lookahead.py": _LOOKAHEAD.replace("{other}", "p - q.to(p.device)"),
             "train.py": _LOOKAHEAD_TRAIN.format(first=_BUILD, second=_MOVE)}
    assert _project(tmp_path, files) == []


def test_an_attribute_that_is_no_parameter_copy_is_not_state():
    src = """
        import torch
        import torch.nn as nn
        from torch.optim.optimizer import Optimizer


        class Counting(Optimizer):
            def __init__(self, params, lr=1e-3):
                super().__init__(params, dict(lr=lr))
                self.buffer = [[None, None] for _ in range(10)]
                self.sizes = [p.numel() for group in self.param_groups for p in group["params"]]

            @torch.no_grad()
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        p.add_(p.grad, alpha=-group["lr"])


        model = nn.Linear(4, 4)
        opt = Counting(model.parameters())
        model.cuda()
        model(torch.randn(2, 4).cuda()).sum().backward()
        opt.step()
    """
    assert _codes(src) == []


# --- a project optimizer restored with the load_state_dict it inherits ---------------------------------

_WRAPPER = """
    import torch
    import torch.nn as nn
    from torch.optim import Optimizer


    class Adamax(Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, dict(lr=lr))

        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    if len(state) == 0:
                        state["exp_avg"] = torch.zeros_like(p.data)
                    state["exp_avg"].mul_(0.9).add_(p.grad)
                    p.data.add_(-group["lr"] * state["exp_avg"])


    class Model(object):
        def __init__(self, opt, state_dict=None):
            self.network = nn.Linear(8, 2)
            {early}
            self.optimizer = Adamax(self.network.parameters(), opt["lr"])
            if state_dict and "optimizer" in state_dict:
                self.optimizer.load_state_dict(state_dict["optimizer"])

        def update(self, x, y):
            loss = nn.functional.cross_entropy(self.network(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

        def cuda(self):
            self.network.cuda()
"""

_WRAPPER_MAIN = """
    import torch

    from model import Model


    def main(cuda):
        state_dict = torch.load("model_3.pt")
        model = Model({"lr": 1e-3}, state_dict=state_dict)
        {late}
        for x, y in torch.load("batches.pt"):
            model.update(x.cuda(), y.cuda())


    if __name__ == "__main__":
        main(torch.cuda.is_available())
"""


def test_project_optimizer_restored_before_the_wrapper_moves_the_model(tmp_path: Path):
    files = {"model.py": _WRAPPER.replace("{early}", ""),
             "main.py": _WRAPPER_MAIN.replace("{late}", "if cuda:\n            model.cuda()")}
    got = _project(tmp_path, files)
    assert ("model.py", 27, "DEV302") in got and all(c == "DEV302" for _, _, c in got)


def test_project_optimizer_restored_after_the_network_moved_stays_silent(tmp_path: Path):
    files = {"model.py": _WRAPPER.replace("{early}", "self.network.cuda()"),
             "main.py": _WRAPPER_MAIN.replace("{late}", "")}
    assert _project(tmp_path, files) == []


_SCHEDULE_FREE = """
    import torch
    import torch.nn as nn


    class ScheduleFree(torch.optim.Optimizer):
        def __init__(self, params, lr=1.0):
            super().__init__(params, dict(lr=lr))

        @torch.no_grad()
        def eval(self):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    if "z" in state:
                        p.lerp_(end={z}, weight=0.5)


    def build(path):
        model = nn.Linear(4, 2)
        optimizer = ScheduleFree(model.parameters())
        checkpoint = torch.load(path, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        return model, optimizer


    model, optimizer = build("checkpoint.pt")
    model.to("cuda")
    optimizer.eval()
"""


def test_project_optimizer_with_inherited_restore_before_the_move_is_reported():
    assert _codes(_SCHEDULE_FREE.replace("{z}", 'state["z"]')) == [(24, "DEV302")]


def test_project_optimizer_that_brings_its_state_to_the_parameter_stays_silent():
    assert _codes(_SCHEDULE_FREE.replace("{z}", 'state["z"].to(p.device)')) == []


_COPIES_IN_LOOP = """
    import torch
    import torch.nn as nn
    from torch.optim import Optimizer


    class SlowFast(Optimizer):
        def __init__(self, params, lr=1e-3, alpha=0.5):
            super().__init__(params, dict(lr=lr))
            self.alpha = alpha
            self.slow = {kind}
            for group in self.param_groups:
                for p in group["params"]:
                    {store}

        @torch.no_grad()
        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad, alpha=-group["lr"])


    model = nn.Linear(4, 4)
    opt = SlowFast(model.parameters())
    model.cuda()
    model(torch.randn(2, 4).cuda()).sum().backward()
    opt.step()
"""


def test_parameter_copies_stored_in_a_dict_in_a_loop_are_eager_state():
    src = _COPIES_IN_LOOP.format(kind="{}", store="self.slow[p] = p.detach().clone()")
    assert _codes(src) == [(24, "DEV304")]


def test_parameter_copies_appended_in_a_loop_are_eager_state():
    src = _COPIES_IN_LOOP.format(kind="[]", store="self.slow.append(torch.zeros_like(p))")
    assert _codes(src) == [(24, "DEV304")]


def test_loop_that_keeps_no_tensor_is_not_state():
    src = _COPIES_IN_LOOP.format(kind="[]", store="self.slow.append(p.numel())")
    assert _codes(src) == []
