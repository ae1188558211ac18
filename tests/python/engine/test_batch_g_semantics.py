"""Semantics found missing by the unseen batch G (tests/fixtures/engine/unseen/g_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- a helper that returns `x.cuda()` on one path and `[t.cuda() for t in x]` on another (it accepts a
  tensor or a list of them) gives tensors all on that device, whichever path runs: a one-element cpu
  tensor made downstream (`torch.FloatTensor([lam])`) then meets them;
- a DataParallel call returns its replicas' outputs gathered on device_ids[0] (output_device), so what
  forward returns on the replica's GPU is on device_ids[0] after the call."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


TO_GPU = """
def to_gpu(x, enabled=True):
    if enabled:
        if isinstance(x, list):
            return [t.cuda(non_blocking=True) for t in x]
        return x.cuda(non_blocking=True)
    return x
"""

MIX = """
import numpy as np
import torch


def blend(images, masks, alpha):
    perm = torch.randperm(images.size(0))
    w = np.random.beta(alpha, alpha)
    w = {weight}
    images = images * w + images[perm] * (1 - w)
    return images, masks * w + masks[perm] * (1 - w)
"""

TRAINER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from utils.gpu import to_gpu
from utils.mix import blend


class Trainer:
    def __init__(self, use_gpu):
        self.use_gpu = use_gpu
        self.net = nn.Conv2d(1, 1, 3, padding=1)
        if use_gpu:
            self.net.cuda()

    def fit(self, loader):
        for images, masks in loader:
            images = to_gpu(images, self.use_gpu)
            masks = to_gpu(masks, self.use_gpu)
            images, masks = blend(images, masks, 0.4)
            loss = ((self.net(images) - masks) ** 2).mean()
            loss.backward()


if __name__ == "__main__":
    x = torch.rand(16, 1, 8, 8)
    Trainer(torch.cuda.is_available()).fit(DataLoader(TensorDataset(x, x), batch_size=4))
"""


def test_one_element_cpu_weight_meets_batch_moved_by_tensor_or_list_helper_in_a_trainer(tmp_path):
    _project(tmp_path, {"utils/gpu.py": TO_GPU, "utils/mix.py": MIX.format(weight="torch.FloatTensor([max(w, 1 - w)])"),
                        "train.py": TRAINER})
    assert _codes(tmp_path, "train.py") == [(20, "DEV201")]  # at the call into blend(), where it fails


def test_zero_dim_cpu_weight_mixes_with_any_device_silent(tmp_path):
    _project(tmp_path, {"utils/gpu.py": TO_GPU, "utils/mix.py": MIX.format(weight="torch.tensor(max(w, 1 - w))"),
                        "train.py": TRAINER})
    assert _codes(tmp_path, "train.py") == []


def test_weight_moved_to_the_batch_device_silent(tmp_path):
    _project(tmp_path, {"utils/gpu.py": TO_GPU,
                        "utils/mix.py": MIX.format(weight="torch.FloatTensor([max(w, 1 - w)]).to(images.device)"),
                        "train.py": TRAINER})
    assert _codes(tmp_path, "train.py") == []


def test_renamed_single_file_one_helper_deeper(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch

        def place(v, gpu):
            if gpu:
                if isinstance(v, (list, tuple)):
                    return [e.cuda() for e in v]
                return v.cuda()
            return v

        def scale(v):
            k = torch.Tensor([0.5])
            return v * k

        def augment(v):
            return scale(v)

        def main(batches, gpu):
            for b in batches:
                b = place(b, gpu)
                b = augment(b)

        main(torch.utils.data.DataLoader(torch.rand(8, 2), batch_size=2), torch.cuda.is_available())
        """})
    assert _codes(tmp_path, "run.py") == [(11, "DEV201")]


DP_NET = """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x, label=None):
        emb = self.fc(x)
        if label is not None:
            return emb.sum(1), emb
        return emb
"""


def test_data_parallel_outputs_are_gathered_on_device_ids_0_silent(tmp_path):
    _project(tmp_path, {"nets.py": DP_NET, "train.py": """
        import torch
        import torch.nn as nn
        from nets import Head

        GPUS = [0, 1]
        device = torch.device("cuda:%d" % GPUS[0])
        model = nn.DataParallel(Head(), device_ids=GPUS).to(device)
        for x, y in torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.rand(8, 8), torch.rand(8)), batch_size=4):
            x, y = x.to(device), y.to(device)
            score, emb = model(x, y)
            loss = ((score - y) ** 2).mean()
        """})
    assert _codes(tmp_path, "train.py") == []


def test_data_parallel_gathered_output_meets_a_cpu_target(tmp_path):
    _project(tmp_path, {"nets.py": DP_NET, "train.py": """
        import torch
        import torch.nn as nn
        from nets import Head

        GPUS = [0, 1]
        device = torch.device("cuda:%d" % GPUS[0])
        model = nn.DataParallel(Head(), device_ids=GPUS).to(device)
        for x, y in torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.rand(8, 8), torch.rand(8)), batch_size=4):
            score, emb = model(x.to(device), y.to(device))
            loss = ((score - y) ** 2).mean()
        """})
    assert _codes(tmp_path, "train.py") == [(10, "DEV202")]


# ---- variations of batch G cases found at first contact (regression guards)
def test_gradient_penalty_alpha_on_cpu_inside_a_gan_trainer_class(tmp_path):
    _project(tmp_path, {"gan/penalty.py": """
        import torch

        def interpolate(real, fake):
            eps = torch.rand(real.size(0), 1, 1, 1)
            return real * eps + fake * (1 - eps)

        def penalty(critic, real, fake):
            mixed = interpolate(real, fake).requires_grad_(True)
            grad = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)[0]
            return ((grad.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
        """, "train.py": """
        import argparse
        import torch
        import torch.nn as nn
        from gan.penalty import penalty

        class WGANTrainer:
            def __init__(self, args):
                self.device = torch.device(args.device)
                self.G = nn.Sequential(nn.Linear(16, 3 * 8 * 8), nn.Tanh()).to(self.device)
                self.D = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 1)).to(self.device)

            def critic_step(self, real):
                real = real.to(self.device)
                fake = self.G(torch.randn(real.size(0), 16, device=self.device)).view(-1, 3, 8, 8)
                return self.D(fake).mean() - self.D(real).mean() + 10 * penalty(self.D, real, fake)

        p = argparse.ArgumentParser()
        p.add_argument("--device", default="cuda")
        trainer = WGANTrainer(p.parse_args())
        for real, _ in torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.rand(8, 3, 8, 8), torch.zeros(8)), batch_size=4):
            trainer.critic_step(real)
        """})
    assert _codes(tmp_path, "train.py") == [(15, "DEV201")]  # the call into penalty(), where it fails


def test_gradient_penalty_alpha_made_on_the_inputs_device_silent(tmp_path):
    _project(tmp_path, {"penalty.py": """
        import torch

        def interpolate(real, fake):
            eps = torch.rand(real.size(0), 1, 1, 1, device=real.device)
            return real * eps + fake * (1 - eps)
        """, "train.py": """
        import torch
        from penalty import interpolate

        device = "cuda" if torch.cuda.is_available() else "cpu"
        real = torch.rand(4, 3, 8, 8).to(device)
        fake = torch.rand(4, 3, 8, 8, device=device)
        mixed = interpolate(real, fake)
        """})
    assert _codes(tmp_path, "train.py") == []
