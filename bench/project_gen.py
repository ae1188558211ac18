"""A generated 20-file training project for the project-mode benchmarks and tests.

    models/  a base class, blocks, an encoder, a decoder, heads, the network (imports its siblings)
    data/    a dataset, transforms, collate functions, a loader helper
    utils/   the device and config, meters, checkpoints, seeding, schedules
    train.py the entry script, importing all three packages, padded to about `entry_lines` lines

It has real cross-file device bugs, so a check has findings that depend on the imported files:
`Net.reset_head()` (models/net.py) builds a new cpu head after `model.to(device)` in train.py,
and `data.collate.with_mask()` adds a cpu mask to the batch it is given. `DEVICE` in
utils/config.py is the device the script runs on: edit it (`device_edit`) to change the findings.
"""

from __future__ import annotations

import os

FILES: dict[str, str] = {
    "models/__init__.py": "from models.net import Net\nfrom models.heads import LinearHead\n",
    "models/base.py": '''import torch
import torch.nn as nn


class BaseModel(nn.Module):
    """Common helpers of the project's models."""

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def freeze(self):
        for p in self.parameters():
            p.requires_grad_(False)
        return self
''',
    "models/blocks.py": '''import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Residual(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = MLP(dim, hidden)

    def forward(self, x):
        return x + self.mlp(self.norm(x))
''',
    "models/encoder.py": '''import torch
import torch.nn as nn

from models.base import BaseModel
from models.blocks import Residual


class Encoder(BaseModel):
    def __init__(self, dim, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([Residual(dim, dim * 2) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
''',
    "models/decoder.py": '''import torch
import torch.nn as nn

from models.base import BaseModel
from models.blocks import MLP


class Decoder(BaseModel):
    def __init__(self, dim):
        super().__init__()
        self.mlp = MLP(dim, dim * 2)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        return self.out(self.mlp(x))
''',
    "models/heads.py": '''import torch.nn as nn


class LinearHead(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        return self.fc(x)
''',
    "models/net.py": '''import torch
import torch.nn as nn

from models.base import BaseModel
from models.decoder import Decoder
from models.encoder import Encoder
from models.heads import LinearHead


class Net(BaseModel):
    def __init__(self, dim=32, classes=10):
        super().__init__()
        self.encoder = Encoder(dim)
        self.decoder = Decoder(dim)
        self.head = LinearHead(dim, classes)

    def reset_head(self, classes):
        self.head = LinearHead(self.head.fc.in_features, classes)

    def forward(self, x):
        return self.head(self.decoder(self.encoder(x)))
''',
    "data/__init__.py": "",
    "data/dataset.py": '''import torch
from torch.utils.data import Dataset


class RandomDataset(Dataset):
    def __init__(self, n, dim):
        self.x = torch.randn(n, dim)
        self.y = torch.randint(0, 10, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]
''',
    "data/transforms.py": '''import torch


def normalize(x, eps=1e-6):
    return (x - x.mean(dim=-1, keepdim=True)) / (x.std(dim=-1, keepdim=True) + eps)


def jitter(x, scale=0.01):
    return x + scale * torch.randn_like(x)
''',
    "data/collate.py": '''import torch


def stack_batch(items):
    xs = torch.stack([x for x, _ in items])
    ys = torch.stack([y for _, y in items])
    return xs, ys


def with_mask(x):
    mask = torch.ones(x.shape[0], x.shape[1])
    return x * mask
''',
    "data/loader.py": '''from torch.utils.data import DataLoader

from data.collate import stack_batch
from data.dataset import RandomDataset


def make_loader(n, dim, batch_size=16):
    return DataLoader(RandomDataset(n, dim), batch_size=batch_size, collate_fn=stack_batch)
''',
    "utils/__init__.py": "",
    "utils/config.py": '''from dataclasses import dataclass

import torch

DEVICE = "cuda"


@dataclass
class Config:
    dim: int = 32
    classes: int = 10
    lr: float = 1e-3
    epochs: int = 2
''',
    "utils/device.py": '''import torch

from utils.config import DEVICE


def get_device():
    return torch.device(DEVICE)


def to_device(batch, device):
    return tuple(t.to(device) for t in batch)
''',
    "utils/meters.py": '''class AverageMeter:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.total += float(value) * n
        self.count += n

    @property
    def avg(self):
        return self.total / max(self.count, 1)
''',
    "utils/checkpoint.py": '''import torch


def save(model, path):
    torch.save(model.state_dict(), path)


def load(model, path, device):
    model.load_state_dict(torch.load(path, map_location=device))
    return model
''',
    "utils/seed.py": '''import random

import torch


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
''',
    "utils/schedule.py": '''import math

import torch


def cosine(optimizer, steps):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * s / steps)))
''',
}

TRAIN_HEAD = '''import torch
import torch.nn.functional as F

from data.collate import with_mask
from data.loader import make_loader
from data.transforms import jitter, normalize
from models.net import Net
from utils.checkpoint import save
from utils.config import Config
from utils.device import get_device, to_device
from utils.meters import AverageMeter
from utils.schedule import cosine
from utils.seed import seed_everything

cfg = Config()
device = get_device()
seed_everything(0)
model = Net(cfg.dim, cfg.classes).to(device)
model.reset_head(cfg.classes)
'''

TRAIN_BLOCK = '''

def train_epoch_{i}(model, loader, optimizer, scheduler, device):
    meter = AverageMeter()
    model.train()
    for batch in loader:
        x, y = to_device(batch, device)
        x = normalize(jitter(x))
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        meter.update(loss.item(), x.shape[0])
    return meter.avg


def evaluate_{i}(model, loader, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for batch in loader:
            x, y = to_device(batch, device)
            correct += (model(normalize(x)).argmax(-1) == y).sum().item()
    return correct
'''

TRAIN_TAIL = '''

def main():
    loader = make_loader(256, cfg.dim)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    scheduler = cosine(optimizer, cfg.epochs * len(loader))
    for epoch in range(cfg.epochs):
        train_epoch_0(model, loader, optimizer, scheduler, device)
        print(evaluate_0(model, loader, device))
    for x, y in loader:
        x = x.to(device)
        print(with_mask(x).sum())
    save(model, "model.pt")


if __name__ == "__main__":
    main()
'''


def train_source(entry_lines: int = 2000) -> str:
    out, i = [TRAIN_HEAD], 0
    body = len(TRAIN_HEAD.splitlines()) + len(TRAIN_TAIL.splitlines())
    while body + len(TRAIN_BLOCK.splitlines()) <= entry_lines or i == 0:
        out.append(TRAIN_BLOCK.format(i=i))
        body += len(TRAIN_BLOCK.splitlines())
        i += 1
    out.append(TRAIN_TAIL)
    return "".join(out)


def project_files(entry_lines: int = 2000) -> dict[str, str]:
    """Relative path -> text of the 20 files."""
    return {**FILES, "train.py": train_source(entry_lines)}


def write_project(root: str, entry_lines: int = 2000) -> dict[str, str]:
    """Write the project under `root` (with a pyproject.toml marking its root); returns its files."""
    files = project_files(entry_lines)
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(os.path.join(root, "pyproject.toml"), "w", encoding="utf-8") as fh:
        fh.write('[project]\nname = "bench-project"\nversion = "0"\n')
    return files


def device_edit(text: str, device: str) -> str:
    """utils/config.py with `DEVICE` set to `device`."""
    import re

    return re.sub(r'^DEVICE = "[^"]*"', f'DEVICE = "{device}"', text, count=1, flags=re.M)
