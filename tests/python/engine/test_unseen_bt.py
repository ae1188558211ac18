"""Semantics found missing on unseen real cases, batch BT (tests/fixtures/engine/unseen/bt_*): applications
(imputation models, RL agents, LLM embedders, renderers, forecasting).

- A DataLoader given no `sampler` / `batch_sampler` of the caller's draws its indices from its own
  SequentialSampler / RandomSampler, which yield Python ints: the project Dataset's `__getitem__(idx)` gets an
  int, so a sample it builds with `torch.tensor(idx)` (PyPOTS's `BaseDataset` returns `[torch.tensor(idx), X,
  missing_mask]`) is a cpu tensor and the batch is on the cpu, as for a sample of other cpu tensors. With a
  sampler of the caller's the index may be anything, so `torch.tensor(idx)` stays of unknown device
  (interp/loader_index.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _path_codes(root: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, src in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    out = []
    for name in files:
        out += [(name, d.span.line, d.code) for d in check_path(str(root / name)).diagnostics]
    return sorted(out)


# --- the int index a DataLoader hands __getitem__ ----------------------------------------------------------------

_INDEXED_SAMPLES = """
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, Dataset


    class SeriesSet(Dataset):
        def __init__(self, data):
            self.X = torch.from_numpy(data["X"])

        def __len__(self):
            return len(self.X)

        def __getitem__(self, idx):
            x = torch.nan_to_num(self.X[idx].float())
            return [torch.tensor(idx), x, (~torch.isnan(self.X[idx])).float()]


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Linear(4, 4).to(device)
    loader = DataLoader(SeriesSet({"X": np.zeros((8, 4))}), batch_size=2{LOADER_ARGS})
    for batch in loader:
        net(batch[1])
"""


def test_loader_default_sampler_gives_int_index():
    assert _codes(_INDEXED_SAMPLES.replace("{LOADER_ARGS}", "")) == [(24, "DEV202")]


def test_loader_shuffled_default_sampler_gives_int_index():
    assert _codes(_INDEXED_SAMPLES.replace("{LOADER_ARGS}", ", shuffle=True")) == [(24, "DEV202")]


def test_loader_with_callers_sampler_stays_unknown():
    src = _INDEXED_SAMPLES.replace("{LOADER_ARGS}", ", sampler=my_sampler").replace(
        "device = torch", "my_sampler = object()\ndevice = torch")
    assert _codes(src) == []


def test_loader_index_samples_moved_batch_is_silent():
    src = _INDEXED_SAMPLES.replace("{LOADER_ARGS}", "").replace("net(batch[1])", "net(batch[1].to(device))")
    assert _codes(src) == []


def test_loader_index_getitem_through_helper_in_trainer_split_into_files(tmp_path):
    files = {
        "data/series.py": """
            import torch
            from torch.utils.data import Dataset


            class ImputeSet(Dataset):
                def __init__(self, X):
                    self.X = torch.tensor(X)

                def __len__(self):
                    return len(self.X)

                def _fetch(self, index):
                    X = self.X[index].to(torch.float32)
                    return torch.tensor(index), torch.nan_to_num(X), (~torch.isnan(X)).to(torch.float32)

                def __getitem__(self, index):
                    return self._fetch(index)
            """,
        "train.py": """
            import torch
            import torch.nn as nn
            from torch.utils.data import DataLoader
            from data.series import ImputeSet


            class Imputer:
                def __init__(self, device=None):
                    self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu") if device is None else device
                    self.model = nn.Linear(8, 4).to(self.device)

                def impute(self, X):
                    loader = DataLoader(ImputeSet(X), batch_size=16, shuffle=False)
                    out = []
                    for data in loader:
                        inputs = {"X": data[1], "mask": data[2]}
                        out.append(self.model(torch.cat([inputs["X"], inputs["mask"]], dim=1)))
                    return out


            if __name__ == "__main__":
                Imputer().impute([[0.0] * 4] * 32)
            """,
    }
    found = _path_codes(tmp_path, files)
    assert ("train.py", 18, "DEV202") in found, found


def test_loader_index_getitem_returning_device_tensors_is_silent():
    src = _INDEXED_SAMPLES.replace("{LOADER_ARGS}", "").replace(
        "return [torch.tensor(idx), x, (~torch.isnan(self.X[idx])).float()]",
        "return [torch.tensor(idx, device=device), x.to(device), x.to(device)]")
    assert _codes(src) == []
