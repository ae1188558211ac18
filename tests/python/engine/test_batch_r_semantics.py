"""Semantics found missing by the unseen batch R (tests/fixtures/engine/unseen/r_*: research, tutorial and
course code), each tested on the variations a user writes (renamed, split into files, one helper deeper,
inside a trainer class) and on the neighbours that must stay silent:
- calling a module runs `type(m).__call__`: a project class that overrides `nn.Module.__call__` (a GAN
  loss called as `criterion(prediction, target_is_real)`) runs its own `__call__`, and a `__call__` that
  delegates with `super().__call__(...)` reaches `forward` as nn.Module does;
- a file gets the findings of the scripts that run its code through the project modules they import
  (`train.py` -> `models/warp_model.py` -> `models/base_gan.py` -> `modules/loss.py`), not only of
  those that name it;
- `(0.7, 1.1) if smooth else 1.0` is Python numbers on either branch: `torch.tensor()` of it is a cpu
  tensor (that may be 0-dim), and the elements unpacked from it once it is a buffer moved to cuda are
  0-dim cuda tensors, which a 1-element cpu tensor (`torch.rand(1)`) does not mix with;
- `SummaryWriter.add_graph(model, input_to_model)` traces the model, calling it on the example inputs
  (known from an ast scan of torch's own sources, tools/knowledge/frameworks.py);
- what a torch layer of a project model built on the cpu and never moved computes is on the cpu because
  the model was not moved: a cuda tensor meeting it is said where they meet (DEV106), naming the model."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


# --- a module's own __call__ ---------------------------------------------------------------------

GAN_LOSS = """
import torch
from torch import nn


class {NAME}(nn.Module):
    def __init__(self, smooth_labels=True):
        super().__init__()
        real = (0.7, 1.1) if smooth_labels else 1.0
        self.register_buffer("real_label", torch.tensor(real))

    @staticmethod
    def rand_between(low, high):
        return torch.rand(1) * (high - low) + low

    def get_target_tensor(self, prediction):
        low, high = self.real_label
        return {NAME}.rand_between(low, high).expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        target = self.get_target_tensor(prediction)
        return nn.functional.mse_loss(prediction, target)
"""

TRAINER = """
import argparse

import torch
from {MOD} import {NAME}


class Trainer:
    def __init__(self, opt):
        self.device = torch.device(f"cuda:{opt.gpu_id}") if opt.gpu_id is not None else torch.device("cpu")
        self.criterion = {NAME}(opt.smooth).to(self.device)

    def backward_d(self, pred):
        return self.criterion(pred, True)


parser = argparse.ArgumentParser()
parser.add_argument("--gpu_id", type=int, default=0)
parser.add_argument("--smooth", action="store_true")
opt = parser.parse_args()
trainer = Trainer(opt)
trainer.backward_d(torch.randn(4, 1).cuda())
"""


def test_own_call_of_a_loss_module_runs_in_a_trainer(tmp_path):
    for name, mod in (("GANLoss", "losses"), ("AdvCriterion", "criteria")):
        root = tmp_path / name
        _project(root, {f"{mod}.py": GAN_LOSS.replace("{NAME}", name),
                        "train.py": TRAINER.replace("{NAME}", name).replace("{MOD}", mod)})
        assert _codes(root, "train.py") == [(13, "DEV201")], name
        assert _codes(root, f"{mod}.py") == [(13, "DEV201")], name


def test_own_call_one_helper_deeper_and_delegating_call(tmp_path):
    # the loss's __call__ reaches the mix through a helper function in another file
    _project(tmp_path / "deeper", {"labels.py": """
        import torch


        def smooth_target(label_range, like):
            low, high = label_range
            return (torch.rand(1) * (high - low) + low).expand_as(like)
        """, "losses.py": """
        import torch
        from torch import nn
        from labels import smooth_target


        class GANLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("real_label", torch.tensor((0.7, 1.1)))

            def __call__(self, prediction, target_is_real):
                return nn.functional.mse_loss(prediction, smooth_target(self.real_label, prediction))
        """, "train.py": """
        import torch
        from losses import GANLoss

        device = torch.device("cuda")
        criterion = GANLoss().to(device)
        print(criterion(torch.randn(4, 1, device=device), True))
        """})
    assert _codes(tmp_path / "deeper", "train.py") == [(6, "DEV201")]
    # a __call__ that logs and delegates to nn.Module.__call__: forward runs, as it does in torch
    _project(tmp_path / "delegating", {"net.py": """
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 2)
                self.calls = 0

            def __call__(self, *args, **kwargs):
                self.calls += 1
                return super().__call__(*args, **kwargs)

            def forward(self, x):
                return self.fc(x) + torch.randn(x.size(0), 2)
        """, "train.py": """
        import torch
        from net import Net

        model = Net().cuda()
        print(model(torch.randn(3, 8).cuda()))
        """})
    assert _codes(tmp_path / "delegating", "net.py") == [(16, "DEV201")]


def test_own_call_silent_where_the_target_follows_the_labels(tmp_path):
    fixed = GAN_LOSS.replace("torch.rand(1)", "torch.rand(1, device=low.device)")
    _project(tmp_path / "fixed", {"losses.py": fixed.replace("{NAME}", "GANLoss"),
                                  "train.py": TRAINER.replace("{NAME}", "GANLoss").replace("{MOD}", "losses")})
    assert _codes(tmp_path / "fixed", "train.py") == []
    # the criterion is never moved: labels, noise and (cpu) prediction all on the cpu
    _project(tmp_path / "cpu", {"losses.py": GAN_LOSS.replace("{NAME}", "GANLoss"), "train.py": """
        import torch
        from losses import GANLoss

        criterion = GANLoss()
        print(criterion(torch.randn(4, 1), True))
        """})
    assert _codes(tmp_path / "cpu", "train.py") == []


# --- Python numbers joined ------------------------------------------------------------------------

def test_numbers_or_tuple_of_numbers_make_a_cpu_tensor(tmp_path):
    # the buffer is made from Python numbers on either branch, then follows the module to cuda
    _project(tmp_path, {"train.py": """
        import sys
        import torch


        class Labels(torch.nn.Module):
            def __init__(self, smooth):
                super().__init__()
                real = (0.7, 1.1) if smooth else 1.0
                self.register_buffer("real", torch.tensor(real))
                self.register_buffer("scale", torch.tensor([0.5, 2.0] if smooth else [1.0, 1.0]))


        labels = Labels(len(sys.argv) > 1).to(torch.device("cuda"))
        low, high = labels.real
        noise = torch.rand(1) * (high - low)
        print(labels.scale * torch.ones(2))
        """})
    assert _codes(tmp_path, "train.py") == [(15, "DEV201"), (16, "DEV201")]


def test_numbers_joined_with_unknown_data_stay_silent(tmp_path):
    _project(tmp_path, {"train.py": """
        import sys
        import torch
        from data import load_labels


        class Labels(torch.nn.Module):
            def __init__(self, smooth):
                super().__init__()
                real = load_labels() if smooth else 1.0
                self.register_buffer("real", torch.tensor(real))


        labels = Labels(len(sys.argv) > 1).to(torch.device("cuda"))
        low, high = labels.real
        print(torch.rand(1) * (high - low))
        """})
    assert _codes(tmp_path, "train.py") == []


# --- SummaryWriter.add_graph runs the model on its example ------------------------------------------

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x, mask=None):
        return self.fc(x) if mask is None else self.fc(x) * mask
"""


def test_add_graph_runs_the_model_on_the_example(tmp_path):
    _project(tmp_path / "script", {"net.py": NET, "train.py": """
        import torch
        from torch.utils.tensorboard import SummaryWriter
        from net import Net

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        writer = SummaryWriter("runs/mnist")
        model = Net().to(device)
        example = torch.rand(64, 784)
        writer.add_graph(model, example)
        """})
    assert _codes(tmp_path / "script", "train.py") == [(8, "DEV201")]
    # in a trainer class, by keyword, with a tuple of example inputs, the writer from the module path
    _project(tmp_path / "trainer", {"net.py": NET, "trainer.py": """
        import torch
        import torch.utils.tensorboard as tb
        from net import Net


        class Trainer:
            def __init__(self, args):
                self.device = torch.device(args.device)
                self.model = Net().to(self.device)
                self.writer = tb.writer.SummaryWriter(args.logdir)

            def log_graph(self, images):
                mask = torch.ones(images.size(0), 10, device=self.device)
                self.writer.add_graph(model=self.model, input_to_model=(images.view(-1, 784), mask))


        class Args:
            device = "cuda"
            logdir = "runs"


        Trainer(Args()).log_graph(torch.rand(8, 1, 28, 28))
        """})
    assert _codes(tmp_path / "trainer", "trainer.py") == [(22, "DEV201")]


def test_add_graph_silent_when_example_and_model_agree(tmp_path):
    for key, example in {"moved": "torch.rand(64, 784).to(device)", "on_device": "torch.rand(64, 784, device=device)",
                         "unknown": "load_example()"}.items():
        _project(tmp_path / key, {"net.py": NET, "train.py": f"""
            import torch
            from torch.utils.tensorboard import SummaryWriter
            from net import Net
            from data import load_example

            device = torch.device("cuda")
            writer = SummaryWriter()
            model = Net().to(device)
            writer.add_graph(model, {example})
            """})
        assert _codes(tmp_path / key, "train.py") == [], key
    # model and example both left on the cpu
    _project(tmp_path / "cpu", {"net.py": NET, "train.py": """
        import torch
        from torch.utils.tensorboard import SummaryWriter
        from net import Net

        SummaryWriter().add_graph(Net(), torch.rand(2, 784))
        """})
    assert _codes(tmp_path / "cpu", "train.py") == []


# --- a layer of a model never moved ---------------------------------------------------------------

CC = """
import torch
import torch.nn as nn


def INF(B, H, W):
    return -torch.diag(torch.tensor(float("inf")).cuda().repeat(H), 0).unsqueeze(0).repeat(B * W, 1, 1)


class CrissCross(nn.Module):
    def __init__(self, in_dim):
        super().__init__()
        self.query_conv = nn.Conv2d(in_dim, in_dim // 8, 1)
        self.key_conv = nn.Conv2d(in_dim, in_dim // 8, 1)
        self.INF = INF

    def forward(self, x):
        b, _, h, w = x.size()
        q = self.query_conv(x).permute(0, 3, 1, 2).contiguous().view(b * w, -1, h).permute(0, 2, 1)
        k = self.key_conv(x).permute(0, 3, 1, 2).contiguous().view(b * w, -1, h)
        return torch.bmm(q, k) + self.INF(b, h, w)
"""


def test_layer_output_of_an_unmoved_model_blames_the_model(tmp_path):
    # the model is built (and left on the cpu) in a script of its own; its hard-coded cuda constant meets
    # what its own layers compute: said where they meet, naming the model's line
    _project(tmp_path / "script", {"cc.py": CC, "demo.py": """
        import torch
        from cc import CrissCross

        model = CrissCross(64)
        print(model(torch.randn(2, 64, 5, 6)).shape)
        """})
    assert _codes(tmp_path / "script", "cc.py") == [(20, "DEV106")]
    # one level deeper: the attention block inside a network built by a trainer
    _project(tmp_path / "trainer", {"cc.py": CC, "net.py": """
        import torch.nn as nn
        from cc import CrissCross


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 64, 3, padding=1)
                self.cca = CrissCross(64)

            def forward(self, x):
                return self.cca(self.stem(x))
        """, "train.py": """
        import torch
        from net import Net


        class Trainer:
            def __init__(self):
                self.net = Net()

            def step(self, images):
                return self.net(images).mean()


        Trainer().step(torch.randn(2, 3, 8, 8))
        """})
    assert _codes(tmp_path / "trainer", "train.py") == [(10, "DEV106")]
    assert _codes(tmp_path / "trainer", "net.py") == [(12, "DEV106")]
    assert _codes(tmp_path / "trainer", "cc.py") == [(20, "DEV106")]  # train.py -> net.py -> cc.py


def test_layer_output_of_a_moved_or_unknown_model_stays_silent(tmp_path):
    for key, line in {"moved": "model = CrissCross(64).cuda()", "unknown": "model = CrissCross(64).to(pick_device())"}.items():
        _project(tmp_path / key, {"cc.py": CC, "demo.py": f"""
            import torch
            from cc import CrissCross
            from devices import pick_device

            {line}
            print(model(torch.randn(2, 64, 5, 6).cuda()).shape)
            """})
        assert _codes(tmp_path / key, "cc.py") == [], key


# --- findings from scripts that import a file through other project modules ---------------------------

def test_file_imported_through_packages_gets_the_scripts_findings(tmp_path):
    files = {
        "modules/__init__.py": "from . import loss\n",
        "modules/loss.py": GAN_LOSS.replace("{NAME}", "GANLoss"),
        "models/__init__.py": "",
        "models/base_gan.py": """
            import torch
            import modules


            class BaseGAN:
                def __init__(self, opt):
                    self.device = torch.device(f"cuda:{opt.gpu_id}")
                    self.criterion_GAN = modules.loss.GANLoss(opt.smooth).to(self.device)

                def backward_D(self, pred):
                    return self.criterion_GAN(pred, False)
            """,
        "models/warp_model.py": """
            from .base_gan import BaseGAN


            class WarpModel(BaseGAN):
                def optimize_parameters(self, pred):
                    return self.backward_D(pred)
            """,
        "scripts/train.py": """
            import sys
            import torch
            sys.path.append(".")
            from models.warp_model import WarpModel


            class Opt:
                gpu_id = 0
                smooth = True


            if __name__ == "__main__":
                WarpModel(Opt()).optimize_parameters(torch.randn(4, 1).cuda())
            """,
        "tools/unrelated.py": """
            import torch

            if __name__ == "__main__":
                print(torch.rand(1) * torch.ones(1).cuda())
            """,
    }
    _project(tmp_path, {**files, "pyproject.toml": ""})
    assert _codes(tmp_path, "modules/loss.py") == [(13, "DEV201")]
    assert _codes(tmp_path, "models/base_gan.py") == [(11, "DEV201")]
    # the file nobody's script reaches stays as it is alone: silent
    _project(tmp_path / "alone", {"modules/__init__.py": "", "modules/loss.py": GAN_LOSS.replace("{NAME}", "GANLoss"),
                                  "train.py": "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(2))\n"})
    assert _codes(tmp_path / "alone", "modules/loss.py") == []
