"""Semantics found missing by the unseen batch ao (tabular, time-series and recommender code,
tests/fixtures/engine/unseen/ao_*), each tested on the variations a user writes (renamed, split into files,
one helper deeper, inside a trainer class) and on the neighbours that must stay silent:
- numpy data has no `.to()` / `.cuda()` / `.cpu()`: where a value the engine took for numpy data reaches such
  a call (the `else` of a type-dispatching helper, `if isinstance(X, np.ndarray): ... else: X = X.to(d)`,
  whose test the engine does not split paths on), the call returns only if the value was a tensor, so its
  result is on the target device (before: unknown, which silenced every later mix);
- an empty dict whose keys are all known (a `{}` literal, a `sizes or {}` default, keys tracked since) is falsy:
  `if self.embedding_sizes:` on it is decided, so the module built under it is absent and the cpu stand-in of
  the `else` (`torch.Tensor()`, `torch.zeros(B, T, 0)`) is what meets the batch (before: undecided, the two
  paths joined and the mix was lost)."""

from __future__ import annotations

from devflow.api import check_source

from project_fixtures import codes as _codes, write_project as _project


def _found(src: str, path: str = "t.py") -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(src, path=path).diagnostics]


# --- numpy data moved by a type-dispatching helper -------------------------------------------------------

DISPATCH = """
import numpy as np
import torch

DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def to_tensor(X):
    if isinstance(X, np.ndarray):
        X = torch.from_numpy(X).to(DEVICE)
    else:
        X = X.to(DEVICE)
    return X


def time_gaps(mask):
    gaps = [torch.zeros(1, mask.shape[-1])]
    for step in range(1, mask.shape[1]):
        gaps.append(torch.ones(1, mask.shape[-1]) + (1 - mask[:, step]) * gaps[-1])
    return gaps
"""


def test_isinstance_dispatch_keeps_the_device_of_both_branches():
    src = DISPATCH + """
X = to_tensor(np.random.randn(8, 5, 3))
time_gaps((~torch.isnan(X)).float())
"""
    assert _found(src) == [(17, "DEV201")]


def test_dispatch_through_a_flag_variable_inside_a_model_class():
    src = """
import numpy as np
import torch


class Imputer:
    def __init__(self, device=None):
        self.device = device if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def check_input(self, data):
        is_array = isinstance(data, np.ndarray)
        if is_array:
            data = torch.from_numpy(data).to(self.device)
        else:
            data = data.to(self.device)
        return data

    def fit(self, data):
        data = self.check_input(data)
        counts = torch.zeros(data.shape[-1])
        return counts + data.sum(dim=(0, 1))


Imputer().fit(np.random.randn(4, 6, 2))
"""
    assert (20, "DEV201") in _found(src)


def test_dispatch_split_into_files(tmp_path):
    _project(tmp_path, {"pkg/__init__.py": "", "pkg/convert.py": DISPATCH, "run.py": """
import numpy as np
import torch
from pkg.convert import to_tensor, time_gaps


def main():
    series = np.random.randn(16, 12, 4)
    mask = (~torch.isnan(to_tensor(series))).float()
    return time_gaps(mask)


if __name__ == "__main__":
    main()
"""})
    assert (16, "DEV201") in _codes(tmp_path, "pkg/convert.py")  # the file is written without the leading newline


def test_cuda_method_on_dispatched_numpy():
    src = """
import numpy as np
import torch


def as_gpu(x):
    if isinstance(x, np.ndarray):
        return torch.as_tensor(x).cuda()
    return x.cuda()


feats = as_gpu(np.ones((4, 3)))
bias = torch.ones(3)
out = feats + bias
"""
    assert (13, "DEV201") in _found(src)


def test_silent_when_the_dispatch_follows_the_data():
    src = DISPATCH.replace("torch.zeros(1, mask.shape[-1])", "torch.zeros(1, mask.shape[-1], device=mask.device)") \
        .replace("torch.ones(1, mask.shape[-1])", "torch.ones(1, mask.shape[-1], device=mask.device)") + """
X = to_tensor(np.random.randn(8, 5, 3))
time_gaps((~torch.isnan(X)).float())
"""
    assert _found(src) == []


def test_silent_when_the_target_device_is_unknown():
    src = """
import numpy as np
import torch


def to_tensor(X, device):
    if isinstance(X, np.ndarray):
        return torch.from_numpy(X).to(device)
    return X.to(device)


def run(arr, device):
    X = to_tensor(arr, device)
    return X + torch.zeros(X.shape)
"""
    assert _found(src) == []


def test_silent_when_numpy_stays_numpy():
    src = """
import numpy as np
import torch

arr = np.random.randn(4, 3).astype(np.float32)
scaled = (arr - arr.mean(0)) / arr.std(0)
x = torch.from_numpy(scaled)
y = x + torch.ones(3)
"""
    assert _found(src) == []


# --- an empty dict with known keys is falsy ----------------------------------------------------------------

CAT_NET = """
import torch
import torch.nn as nn


class CategoricalEmbedding(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.tables = nn.ModuleDict({name: nn.Embedding(n, d) for name, (n, d) in sizes.items()})

    def forward(self, cats):
        return torch.cat([self.tables[name](cats[name]) for name in self.tables], dim=-1)


class Forecaster(nn.Module):
    def __init__(self, n_real, embedding_sizes=None):
        super().__init__()
        self.embedding_sizes = embedding_sizes if embedding_sizes is not None else {}
        self.embedding = None
        if self.embedding_sizes:
            self.embedding = CategoricalEmbedding(self.embedding_sizes)
        self.rnn = nn.GRU(n_real, 16, batch_first=True)

    def forward(self, real, cats):
        emb = self.embedding(cats) if self.embedding is not None else torch.Tensor()
        out, _ = self.rnn(torch.cat((real, emb), dim=2))
        return out
"""


def test_empty_dict_default_decides_the_absent_embedding():
    src = CAT_NET + """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Forecaster(3).to(device)
model(torch.randn(4, 10, 3).to(device), {})
"""
    assert (25, "DEV201") in _found(src)


def test_empty_dict_literal_in_a_trainer_class_split_into_files(tmp_path):
    _project(tmp_path, {"tsmodels/__init__.py": "", "tsmodels/net.py": CAT_NET, "train.py": """
import torch
from tsmodels.net import Forecaster


class Trainer:
    def __init__(self, device="cuda"):
        self.device = torch.device(device)
        self.model = Forecaster(3, embedding_sizes={}).to(self.device)

    def step(self, real):
        return self.model(real.to(self.device), {}).mean()


if __name__ == "__main__":
    Trainer().step(torch.randn(4, 10, 3))
"""})
    assert (24, "DEV201") in _codes(tmp_path, "tsmodels/net.py")


def test_empty_dict_flag_chooses_the_cpu_device():
    src = """
import torch

overrides = {}
if overrides:
    device = "cuda"
else:
    device = "cpu"
x = torch.zeros(3, device=device) + torch.ones(3).cuda()
"""
    assert _found(src) == [(9, "DEV202")]


def test_silent_when_the_embedding_is_present():
    src = CAT_NET + """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Forecaster(3, {"store": (10, 2)}).to(device)
model(torch.randn(4, 10, 3).to(device), {"store": torch.zeros(4, 10, dtype=torch.long).to(device)})
"""
    assert _found(src) == []


def test_silent_when_the_empty_stand_in_follows_the_batch():
    src = CAT_NET.replace("torch.Tensor()", "torch.zeros(real.shape[0], real.shape[1], 0, device=real.device)") + """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Forecaster(3).to(device)
model(torch.randn(4, 10, 3).to(device), {})
"""
    assert _found(src) == []


def test_silent_when_the_dict_was_filled_by_an_unknown_call():
    src = """
import torch
import config_loader

overrides = {}
config_loader.fill(overrides)
if overrides:
    device = "cuda"
else:
    device = "cpu"
x = torch.zeros(3, device=device) + torch.ones(3).cuda()
"""
    assert _found(src) == []


def test_silent_when_a_copy_spreads_a_dict_filled_by_an_unknown_call():
    src = """
import torch
import config_loader

overrides = {}
config_loader.fill(overrides)
options = {**overrides}
if options:
    device = "cuda"
else:
    device = "cpu"
x = torch.zeros(3, device=device) + torch.ones(3).cuda()
"""
    assert _found(src) == []
