"""Semantics found missing by the unseen batch L (tests/fixtures/engine/unseen/l_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- a loop over a literal list of constants (`for name, w in zip(["mse", "ssim"], [1.0, 0.5])`, also read from
  a config module) runs its body once per element, so `"ssim" in name` and a registry lookup `LOSSES[name]`
  are decided per name; `a or b` of known falsy constants is the last one;
- `t.type()` names the legacy type of the tensor's device type ("torch.cuda.FloatTensor" on any GPU), and a
  cpu tensor cast to it goes to the *current* cuda device, not to `t`'s (`u.type(t.type())` with `t` on
  cuda:1 lands on cuda:0); a tensor already on a GPU keeps its own;
- `type(x) is not list` and `isinstance(x, (list, tuple))` of a tensor are decided (torch.Tensor is no Python
  container), not of a DataLoader batch (a tensor or a list / tuple of them);
- a module built on torch's `_Loss` that holds only param-free losses and activations has no device (it is
  no model left on the cpu); a torch.nn container or layer subclass without its own forward (`class
  Block(nn.Sequential)` built by `super().__init__(...)`) runs torch's forward on the module's device.
A mix of a named GPU (cuda:1) and the current one is reported at the value that went to the current
device by default."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


# --- loops over literal constants ------------------------------------------------------------------

LOSSES = """
import torch
import torch.nn.functional as F
from torch import nn


def make_kernel(size):
    k = torch.ones(1, 1, size, size) / (size * size)
    return k.expand(3, 1, size, size).contiguous()


class BlurLoss(nn.Module):
    def __init__(self, size=3, on_gpu=True):
        super().__init__()
        self.kernel = make_kernel(size)
        if on_gpu:
            self.kernel = self.kernel.cuda()

    def forward(self, a, b):
        return F.l1_loss(F.conv2d(a, self.kernel, padding=1, groups=3), F.conv2d(b, self.kernel, padding=1, groups=3))


class L2(nn.Module):
    def forward(self, a, b):
        return F.mse_loss(a, b)


REGISTRY = {"l2": L2, "blur": BlurLoss}
"""

CONFIG = """
NAMES = ["l2", "blur"]
WEIGHTS = [1.0, 0.1]
"""

NET = """
from torch import nn

from losses import REGISTRY


class Net(nn.Module):
    def __init__(self, names, weights):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.criteria = []
        self.weights = []
        for name, w in zip(names, weights):
            if "blur" in name or "edge" in name:
                self.criteria.append(REGISTRY[name](size=3, on_gpu=False))
            else:
                self.criteria.append(REGISTRY[name]())
            self.weights.append(w)

    def forward(self, x, y):
        out = self.conv(x)
        return sum(c(out, y) * w for c, w in zip(self.criteria, self.weights))
"""


def test_a_loop_over_literal_names_decides_each_branch_and_lookup(tmp_path):
    _project(tmp_path, {"losses.py": LOSSES, "config.py": CONFIG, "net.py": NET, "train.py": """
        import torch

        from config import NAMES, WEIGHTS
        from net import Net


        def main():
            model = Net(NAMES, WEIGHTS).cuda()
            x = torch.rand(2, 3, 8, 8).cuda()
            loss = model(x, x)
            loss.backward()
        """})
    assert _codes(tmp_path, "train.py") == [(10, "DEV202")]


def test_literal_names_inside_a_trainer_class_one_helper_deeper(tmp_path):
    _project(tmp_path, {"losses.py": LOSSES, "net.py": NET, "engine.py": """
        import torch

        from net import Net


        def step(model, x):
            return model(x, x)


        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda")
                self.model = Net(["l2", "blur"], [1.0, 0.5]).to(self.device)

            def fit(self, batches):
                for x in batches:
                    loss = step(self.model, x.to(self.device))
                    loss.backward()
        """, "run.py": """
        import torch

        from engine import Trainer


        def main():
            Trainer().fit([torch.rand(2, 3, 8, 8)])
        """})
    assert _codes(tmp_path, "run.py") == [(7, "DEV202")]


def test_names_from_the_command_line_stay_silent(tmp_path):
    # which losses run is decided at run time: the join of a cpu and a cuda kernel is unknown
    _project(tmp_path, {"losses.py": LOSSES, "net.py": NET, "train.py": """
        import argparse

        import torch

        from net import Net


        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--losses", nargs="+", default=["l2"])
            args = p.parse_args()
            model = Net(args.losses, [1.0] * len(args.losses)).cuda()
            x = torch.rand(2, 3, 8, 8).cuda()
            model(x, x).backward()
        """})
    assert _codes(tmp_path, "train.py") == []


def test_literal_names_with_the_kernel_moved_stay_silent(tmp_path):
    _project(tmp_path, {"losses.py": LOSSES, "config.py": CONFIG, "net.py": NET.replace("on_gpu=False", "on_gpu=True"),
                        "train.py": """
        import torch

        from config import NAMES, WEIGHTS
        from net import Net


        def main():
            model = Net(NAMES, WEIGHTS).cuda()
            x = torch.rand(2, 3, 8, 8).cuda()
            model(x, x).backward()
        """})
    assert _codes(tmp_path, "train.py") == []


def test_or_of_known_falsy_constants_is_the_last(tmp_path):
    _project(tmp_path, {"m.py": """
        import torch


        def main():
            for name in ["l2", "l1"]:
                t = torch.zeros(3)
                if "blur" in name or "edge" in name:
                    t = t.cuda()
                t + torch.ones(3, device="cuda")
        """})
    assert _codes(tmp_path, "m.py") == [(6, "DEV201")]


# --- t.type(): the current cuda device ---------------------------------------------------------------

ADV = """
import torch
from torch.nn.modules.loss import _Loss


class TargetLoss(_Loss):
    def __init__(self):
        super().__init__()
        self.act = torch.nn.LeakyReLU(0.05)
        self.loss_fct = torch.nn.MSELoss()

    def target_like(self, logits, real):
        label = torch.tensor(1).fill_(1.0 if real else 0.0).type(logits.type())
        return label.expand_as(logits)

    def forward(self, logits, real):
        if type(logits) is not list:
            logits = [logits]
        targets = [self.target_like(o, real) for o in logits]
        return sum(self.loss_fct(self.act(o), t) for o, t in zip(logits, targets))
"""


def test_type_string_of_a_second_gpu_tensor_casts_to_the_current_device(tmp_path):
    _project(tmp_path, {"adv.py": ADV, "train.py": """
        import torch

        from adv import TargetLoss

        device = torch.device("cuda:1")


        def main():
            disc = torch.nn.Conv2d(1, 1, 3).to(device)
            crit = TargetLoss()
            x = torch.rand(2, 1, 8, 8, device=device)
            crit(disc(x), real=True).backward()
        """})
    assert _codes(tmp_path, "train.py") == [(12, "DEV202")]


def test_type_string_in_one_file_reports_the_converted_value(tmp_path):
    _project(tmp_path, {"m.py": """
        import torch


        def main():
            x = torch.rand(4, 3, device="cuda:1")
            y = torch.zeros(1).type(x.type()).expand_as(x)
            return x - y
        """})
    assert _codes(tmp_path, "m.py") == [(6, "DEV202")]


def test_type_string_on_the_current_device_stays_silent(tmp_path):
    _project(tmp_path, {"adv.py": ADV, "a.py": """
        import torch

        from adv import TargetLoss

        device = torch.device("cuda:1")


        def main():
            torch.cuda.set_device(device)
            crit = TargetLoss()
            x = torch.rand(2, 1, 8, 8, device=device)
            crit(x, real=False)
        """, "b.py": """
        import torch

        from adv import TargetLoss


        def main():
            crit = TargetLoss()
            x = torch.rand(2, 1, 8, 8).cuda()
            crit(x, real=False)
        """, "c.py": """
        import torch


        def main():
            x = torch.rand(4, 3, device="cuda:1")
            y = torch.rand(4, 3, device="cuda:1").type(x.type())  # already on a GPU: a cast, it stays there
            return x - y
        """})
    assert _codes(tmp_path, "a.py") == []
    assert _codes(tmp_path, "b.py") == []
    assert _codes(tmp_path, "c.py") == []


def test_a_loss_module_without_state_is_no_model_on_the_cpu(tmp_path):
    # (the fixed loss: the target follows the input; the _Loss subclass itself holds nothing to move)
    _project(tmp_path, {"adv.py": ADV.replace(".type(logits.type())", ".type(logits.type()).to(logits.device)"),
                        "train.py": """
        import torch

        from adv import TargetLoss


        def main():
            crit = TargetLoss()
            x = torch.rand(2, 1, 8, 8, device="cuda:1")
            crit(x, real=True)
        """})
    assert _codes(tmp_path, "train.py") == []


def test_isinstance_of_one_tensor_as_a_python_container_is_false(tmp_path):
    _project(tmp_path, {"losses.py": """
        import torch


        def multi_scale(outputs):
            if not isinstance(outputs, (list, tuple)):
                outputs = [outputs]
            return sum((o + torch.ones(o.shape[-1])).mean() for o in outputs)
        """, "train.py": """
        import torch

        from losses import multi_scale


        def main():
            x = torch.rand(4, 3).cuda()
            multi_scale(x)
        """})
    assert _codes(tmp_path, "train.py") == [(8, "DEV201")]


def test_a_loader_batch_may_be_a_list_and_stays_undecided(tmp_path):
    # a DataLoader batch is a tensor or a list/tuple of them: `isinstance` / `type` of it decide nothing
    _project(tmp_path, {"train.py": """
        import torch
        from torch.utils.data import DataLoader, TensorDataset


        def main():
            model = torch.nn.Linear(3, 2).cuda()
            loader = DataLoader(TensorDataset(torch.rand(8, 3)), batch_size=4)
            for batch in loader:
                if isinstance(batch, (list, tuple)):
                    batch = [b.cuda() for b in batch]
                else:
                    batch = batch.cuda()
                if type(batch) is not list:
                    batch = [batch]
                model(batch[0])
        """})
    assert _codes(tmp_path, "train.py") == []


# --- a torch.nn container subclass with torch's own forward --------------------------------------------

DISC = """
from torch import nn


class Discriminator(nn.Sequential):
    def __init__(self, cin=1, ch=16):
        super().__init__(nn.Conv2d(cin, ch, 4, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(ch, 1, 4, padding=1))
"""


def test_a_sequential_subclass_without_forward_runs_on_its_device(tmp_path):
    _project(tmp_path, {"adv.py": ADV, "disc.py": DISC, "train.py": """
        import torch

        from adv import TargetLoss
        from disc import Discriminator

        device = torch.device("cuda:1")


        def main():
            disc = Discriminator().to(device)
            crit = TargetLoss()
            x = torch.rand(2, 1, 16, 16, device=device)
            crit(disc(x), real=True).backward()
        """, "plain.py": """
        import torch

        from disc import Discriminator


        def main():
            disc = Discriminator().cuda()
            logits = disc(torch.rand(2, 1, 16, 16).cuda())
            return logits - torch.zeros(1, 1, 7, 7)
        """})
    assert _codes(tmp_path, "train.py") == [(13, "DEV202")]
    assert _codes(tmp_path, "plain.py") == [(9, "DEV201")]


def test_a_sequential_subclass_output_with_the_fixed_target_stays_silent(tmp_path):
    _project(tmp_path, {"adv.py": ADV.replace(".type(logits.type())", ".type(logits.type()).to(logits.device)"),
                        "disc.py": DISC, "train.py": """
        import torch

        from adv import TargetLoss
        from disc import Discriminator

        device = torch.device("cuda:1")


        def main():
            disc = Discriminator().to(device)
            x = torch.rand(2, 1, 16, 16, device=device)
            TargetLoss()(disc(x), real=False).backward()
        """})
    assert _codes(tmp_path, "train.py") == []
