"""Semantics found missing by the unseen batch K (tests/fixtures/engine/unseen/k_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- `model.modules()` / `children()` iterate submodules whose parameters are the model's: an optimizer built
  from parameter groups a generator yields over them holds the model's parameters (moved with it);
- `getattr(torch.optim, cfg.OPTIMIZER_NAME)(params)` is one of torch.optim's optimizers, whichever the
  name, and `getattr(torch.optim, "Adam")` is torch.optim.Adam;
- a script with `sys.path.append('.')` in a subfolder (`python tools/train.py`) imports from the folder
  above it;
- `x is not None` on a tensor is a Python bool (decided), `"class" in protocol` on two known strings is
  decided, and a function that returns cuda on one path and the cpu on another picks the accelerator."""

from __future__ import annotations

from pathlib import Path

from project_fixtures import codes as _codes, write_project as _project


# --- parameter groups over model.modules() --------------------------------------------------------

GROUPS = """
from torch import nn


def conv_params(model, name):
    for module in model.modules():
        for param_name, param in module.named_parameters():
            if isinstance(module, nn.Conv2d) and param_name == name:
                yield param


def bn_params(model, name):
    for _, module in model.named_modules():
        for param_name, param in module.named_parameters(recurse=False):
            if isinstance(module, nn.BatchNorm2d) and param_name == name:
                yield param
"""

NET = """
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
        self.head = nn.Sequential(nn.Conv2d(8, 4, 1))

    def forward(self, x):
        return self.head(self.features(x))
"""

RESUME_SCRIPT = """
import torch

from groups import bn_params, conv_params
from net import Net


def train(checkpoint_path, loader):
    net = Net()
    optimizer = torch.optim.Adam([
        {{"params": conv_params(net.features, "weight")}},
        {{"params": bn_params(net.features, "weight"), "weight_decay": 0}},
        {{"params": conv_params(net.head, "weight"), "lr": 1e-3}},
    ], lr=1e-4)
    {before}
    if checkpoint_path:
        checkpoint = torch.load(checkpoint_path)
        net.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    {after}
    for images in loader:
        optimizer.zero_grad()
        net(images.cuda()).mean().backward()
        optimizer.step()
"""


def test_param_groups_from_modules_loaded_before_the_move(tmp_path):
    _project(tmp_path, {"groups.py": GROUPS, "net.py": NET,
                        "train.py": RESUME_SCRIPT.format(before="", after="net = torch.nn.DataParallel(net).cuda()")})
    assert _codes(tmp_path, "train.py") == [(18, "DEV302")]


def test_param_groups_from_modules_moved_first_stay_silent(tmp_path):
    _project(tmp_path, {"groups.py": GROUPS, "net.py": NET,
                        "train.py": RESUME_SCRIPT.format(before="net.cuda()", after="")})
    assert _codes(tmp_path, "train.py") == []


TRAINER = """
import torch

from groups import conv_params
from net import Net


class Trainer:
    def __init__(self, device, resume=None):
        self.device = device
        self.model = Net()
        self.optimizer = torch.optim.SGD(conv_params(self.model, "weight"), lr=0.1, momentum=0.9)
        if resume is not None:
            self.optimizer.load_state_dict(torch.load(resume, map_location="cpu")["optimizer"])
        self.model.to(self.device)

    def step(self, images):
        self.optimizer.zero_grad()
        self.model(images.to(self.device)).mean().backward()
        self.optimizer.step()


def main():
    trainer = Trainer(torch.device("cuda"), resume="last.pt")
    trainer.step(torch.rand(2, 3, 16, 16))
"""


def test_param_groups_from_modules_inside_a_trainer_class(tmp_path):
    _project(tmp_path, {"groups.py": GROUPS, "net.py": NET, "trainer.py": TRAINER})
    assert _codes(tmp_path, "trainer.py") == [(13, "DEV302")]


def test_submodules_met_through_modules_are_unknown_otherwise(tmp_path):
    # initialising or calling a submodule reached through modules() says nothing about devices
    _project(tmp_path, {"net.py": NET, "init.py": """
        import torch
        from torch import nn

        from net import Net


        def main():
            model = Net().cuda()
            for m in model.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight)
                    m.bias.data.zero_()
            for name, child in model.named_children():
                child(torch.rand(1, 3, 8, 8).cuda())
            return model(torch.rand(1, 3, 8, 8).cuda())
        """})
    assert _codes(tmp_path, "init.py") == []


# --- an optimizer class named at run time -------------------------------------------------------

BUILD = """
import torch


def make_optimizer(cfg, model):
    params = []
    for key, value in model.named_parameters():
        lr = cfg["lr"] * (2 if "bias" in key else 1)
        params += [{{"params": [value], "lr": lr}}]
    return getattr(torch.optim, {name})(params)
"""

OPT_SCRIPT = """
import torch
from torch import nn

from build import make_optimizer


def main(cfg, path):
    model = nn.Linear(8, 2)
    {before}
    optimizer = make_optimizer(cfg, model)
    optimizer.load_state_dict(torch.load(path))
    model.to("cuda")
    optimizer.step()
"""


def test_optimizer_class_from_a_config_name(tmp_path):
    _project(tmp_path, {"build.py": BUILD.format(name='cfg["optimizer"]'), "train.py": OPT_SCRIPT.format(before="")})
    assert _codes(tmp_path, "train.py") == [(11, "DEV302")]


def test_optimizer_class_from_a_constant_name(tmp_path):
    _project(tmp_path, {"build.py": BUILD.format(name='"AdamW"'), "train.py": OPT_SCRIPT.format(before="")})
    assert _codes(tmp_path, "train.py") == [(11, "DEV302")]


def test_optimizer_class_from_a_name_built_after_the_move_is_silent(tmp_path):
    _project(tmp_path, {"build.py": BUILD.format(name='cfg["optimizer"]'),
                        "train.py": OPT_SCRIPT.format(before='model.to("cuda")')})
    assert _codes(tmp_path, "train.py") == []


def test_getattr_of_torch_optim_without_parameters_is_not_an_optimizer(tmp_path):
    # a scheduler looked up by name takes an optimizer, not parameters: nothing is made of it
    _project(tmp_path, {"train.py": """
        import torch
        from torch import nn


        def main(cfg, path):
            model = nn.Linear(8, 2)
            optimizer = torch.optim.Adam(model.parameters())
            model.to("cuda")
            scheduler = getattr(torch.optim.lr_scheduler, cfg["scheduler"])(optimizer, 10)
            optimizer.load_state_dict(torch.load(path))
            optimizer.step()
            scheduler.step()
        """})
    assert _codes(tmp_path, "train.py") == []


# --- scripts run from the folder above ------------------------------------------------------------

TOOLS_TRAIN = """
import sys

import torch
{path_line}
from config import cfg
from solver import make_optimizer
from torch import nn


def main(path):
    model = nn.Linear(8, 2)
    optimizer = make_optimizer(model)
    optimizer.load_state_dict(torch.load(path))
    model.to(cfg["device"])
    optimizer.step()
"""


def _tools_project(root: Path, path_line: str) -> None:
    _project(root, {
        "config/__init__.py": 'cfg = {"device": "cuda"}\n',
        "solver/__init__.py": "import torch\n\n\ndef make_optimizer(model):\n    return torch.optim.Adam(model.parameters())\n",
        "tools/train.py": TOOLS_TRAIN.format(path_line=path_line)})


def test_script_in_a_subfolder_importing_from_the_folder_it_is_run_in(tmp_path):
    _tools_project(tmp_path, "sys.path.append('.')")
    assert _codes(tmp_path, "tools/train.py") == [(13, "DEV302")]


def test_script_in_a_subfolder_with_the_folder_above_inserted_first(tmp_path):
    _tools_project(tmp_path, 'sys.path.insert(0, "..")')
    assert _codes(tmp_path, "tools/train.py") == [(13, "DEV302")]


def test_script_in_a_subfolder_without_a_path_entry_does_not_guess(tmp_path):
    _tools_project(tmp_path, "")
    assert _codes(tmp_path, "tools/train.py") == []


# --- identity tests, string membership, a device chosen on returns --------------------------------

LOSSES = """
import torch.nn as nn

_LOSSES = {{
    "sequence_to_class": {{"cross_entropy": lambda **kwargs: nn.CrossEntropyLoss(**kwargs, ignore_index=-100)}},
    "sequence_to_value": {{"mse": lambda **kwargs: nn.MSELoss(**kwargs)}},
}}


def get_loss(protocol, choice, weight=None):
    loss = _LOSSES.get(protocol).get(choice)
    if weight is not None:
        return loss(weight=weight){move}
    return loss(){move}
"""

DEVICE = """
import torch


def get_device(device=None):
    if isinstance(device, torch.device):
        return device
    elif device:
        return torch.device(device)
    elif torch.cuda.is_available():
        return torch.device("cuda")
    else:
        return torch.device("cpu")
"""

ROUTINE = """
import torch
from torch import nn

from device import get_device
from losses import get_loss


class Solver:
    def __init__(self, network, loss_function, device=None):
        self.device = get_device(device)
        self.network = network.to(self.device)
        self.loss_function = loss_function

    def iteration(self, x, y):
        x, y = x.to(self.device), y.to(self.device)
        return self.loss_function(self.network(x), y)


def routine(protocol="sequence_to_class", use_class_weights=True, device=None):
    device = get_device(device)
    class_weights = None
    if "class" in protocol and use_class_weights:
        class_weights = torch.FloatTensor([1.0, 3.0])
    loss = get_loss(protocol, "cross_entropy", weight=class_weights{device_arg})
    solver = Solver(nn.Linear(4, 2), loss, device=device)
    return solver.iteration(torch.rand(8, 4), torch.randint(0, 2, (8,)))


if __name__ == "__main__":
    routine(use_class_weights=True)
"""


def test_class_weights_through_a_loss_registry_and_a_chosen_device(tmp_path):
    _project(tmp_path, {"losses.py": LOSSES.format(move=""), "device.py": DEVICE,
                        "routine.py": ROUTINE.format(device_arg="")})
    assert _codes(tmp_path, "routine.py") == [(16, "DEV203")]


def test_class_weights_moved_by_the_loss_factory_stay_silent(tmp_path):
    _project(tmp_path, {"losses.py": LOSSES.format(move="").replace("def get_loss(protocol, choice, weight=None)",
                                                                     "def get_loss(protocol, choice, weight=None, device=None)")
                        .replace("loss(weight=weight)", "loss(weight=weight).to(device)"),
                        "device.py": DEVICE, "routine.py": ROUTINE.format(device_arg=", device=device")})
    assert _codes(tmp_path, "routine.py") == []


def test_regression_protocol_without_weights_is_silent(tmp_path):
    _project(tmp_path, {"losses.py": LOSSES.format(move=""), "device.py": DEVICE,
                        "routine.py": ROUTINE.format(device_arg="").replace('protocol="sequence_to_class"',
                                                                            'protocol="sequence_to_value"')})
    assert _codes(tmp_path, "routine.py") == []


def test_a_device_chosen_on_returns_places_model_and_inputs_together(tmp_path):
    _project(tmp_path, {"device.py": DEVICE, "run.py": """
        import torch
        from torch import nn

        from device import get_device


        def main():
            device = get_device()
            model = nn.Linear(4, 2).to(get_device(device))
            x = torch.rand(3, 4).to(device)
            w = torch.ones(2).to(device)
            return model(x) * w
        """})
    assert _codes(tmp_path, "run.py") == []


def test_identity_test_on_a_tensor_keeps_the_none_path_out(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch


        def scale(x, mask=None):
            if mask is not None:
                return x * mask
            return x * torch.ones(x.shape[-1])


        def main():
            x = torch.rand(3, 4).cuda()
            return scale(x, mask=torch.ones(3, 4).cuda())
        """})
    assert _codes(tmp_path, "run.py") == []
