"""Semantics found missing on unseen real cases, batch BT (tests/fixtures/engine/unseen/bt_*): applications
(imputation models, RL agents, LLM embedders, renderers, forecasting).

- A DataLoader given no `sampler` / `batch_sampler` of the caller's draws its indices from its own
  SequentialSampler / RandomSampler, which yield Python ints: the project Dataset's `__getitem__(idx)` gets an
  int, so a sample it builds with `torch.tensor(idx)` (PyPOTS's `BaseDataset` returns `[torch.tensor(idx), X,
  missing_mask]`) is a cpu tensor and the batch is on the cpu, as for a sample of other cpu tensors. With a
  sampler of the caller's the index may be anything, so `torch.tensor(idx)` stays of unknown device
  (interp/loader_index.py).
- An entry of a collated dict batch taken by a string key (`batch["temporal_cols"]`, from a DataLoader or from
  Lightning's transfer before a step hook) is still an entry of the batch: a tensor where the batch is, or
  another object the transfer left alone. A method torch.Tensor does not have (`get_indexer` / `get_loc` of a
  pandas Index, outside the mapping methods `get` / `values` / `items`...) shows the entry is not a tensor, so
  what it returns has no device: NeuralForecast's DeepAR indexes its cpu scaler statistics with the
  `temporal_cols.get_indexer(["y"])` of its batch, which is no index on the GPU (the real mix is those cpu
  statistics with the decoder's cuda output in the Normal scale-decoupling).
- Indexing with None adds a dimension and a slice keeps one: `np.array(rewards)[:, None]` is a numpy column with
  (at least) two dimensions, and `torch.from_numpy` shares its shape, so iterating the tensor (`for reward in
  reward_batch`, `zip(done_batch, reward_batch, predictions)`) gives 1-D rows, not 0-dim ones that would mix with
  any device: seigot/tetris's DQN target `reward + gamma * prediction` adds such cpu rows to the target network's
  cuda predictions (interp/index_dims.py). Without the added dimension a row may be 0-dim and stays silent. The
  same holds for a tensor indexed with None (`torch.tensor(rewards)[:, None]`)."""

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


# --- the non-tensor entries of a collated dict batch ---------------------------------------------------------------
# `batch["cols"]` of a batch a DataLoader / Lightning's transfer collated is one of its entries: a tensor where the
# batch is, or another object the transfer left alone. A method torch.Tensor does not have (`get_indexer` of a pandas
# Index) shows the entry is not a tensor: what it returns (a numpy array) is not on the batch's device.

_LIGHTNING_STATS = """
    import pandas as pd
    import pytorch_lightning as pl
    import torch
    import torch.nn as nn


    def identity_statistics(x):
        shape = list(x.shape)
        shape[-1] = 1
        return torch.zeros(shape), torch.ones(shape)


    class Scaler(nn.Module):
        def transform(self, x):
            self.x_shift, self.x_scale = identity_statistics(x)
            return x


    class Forecaster(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.scaler = Scaler()
            self.decoder = nn.Linear(4, 2)

        def predict_step(self, batch, batch_idx):
            cols = batch["temporal_cols"]
            x = self.scaler.transform(batch["temporal"])
            y_scale = self.scaler.x_scale[:, 0, cols.get_indexer(["y"])].squeeze(-1){MOVE}
            out = self.decoder(x)
            return out[..., 0] * y_scale


    if __name__ == "__main__":
        loader = torch.utils.data.DataLoader([{"temporal": torch.randn(3, 4), "temporal_cols": pd.Index(["y", "m"])}])
        pl.Trainer(accelerator="gpu").predict(Forecaster(), dataloaders=loader)
"""


def test_batch_entry_with_non_tensor_method_is_not_an_index_on_the_device():
    # the pandas Index's get_indexer is no device tensor: the only mix is the cpu statistics with the decoder output
    # (made by `identity_statistics(x)` with the cuda `x` in scope: fixed there, `device=x.device`)
    assert _codes(_LIGHTNING_STATS.replace("{MOVE}", "")) == [(11, "DEV201")]


def test_batch_entry_non_tensor_method_fixed_twin_is_silent():
    assert _codes(_LIGHTNING_STATS.replace("{MOVE}", ".to(x.device)")) == []


def test_batch_entry_tensor_method_keeps_the_batch_device():
    # `batch["ids"].long()` is a Tensor method: the entry is a tensor on the batch's device, indexing cpu stats
    src = _LIGHTNING_STATS.replace('cols.get_indexer(["y"])', 'batch["ids"].long()').replace("{MOVE}", "")
    assert _codes(src) == [(29, "DEV204")]


def test_batch_entry_non_tensor_method_split_into_files_with_helper(tmp_path):
    files = {
        "nf/scalers.py": """
            import torch


            def identity_statistics(x):
                return torch.zeros(x.shape[0], 1), torch.ones(x.shape[0], 1)
            """,
        "nf/model.py": """
            import pytorch_lightning as pl
            import torch.nn as nn
            from nf.scalers import identity_statistics


            def column_of(cols, name):
                return cols.get_loc(name)


            class Net(pl.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.head = nn.Linear(4, 1)

                def predict_step(self, batch, batch_idx):
                    shift, scale = identity_statistics(batch["x"])
                    col = column_of(batch["cols"], "y")
                    loc = shift[:, col]
                    return self.head(batch["x"])[:, 0] + loc.to(batch["x"].device)
            """,
        "run.py": """
            import pandas as pd
            import pytorch_lightning as pl
            import torch
            from nf.model import Net

            if __name__ == "__main__":
                data = [{"x": torch.randn(4), "cols": pd.Index(["y"])}]
                pl.Trainer(accelerator="gpu").predict(Net(), dataloaders=torch.utils.data.DataLoader(data))
            """,
    }
    assert [f for f in _path_codes(tmp_path, files) if f[2] == "DEV204"] == []


# --- a numpy column made with [:, None] -------------------------------------------------------------------------

_DQN_TARGET = """
    import copy
    from collections import deque
    from random import sample

    import numpy as np
    import torch
    import torch.nn as nn


    class Agent:
        def __init__(self):
            self.model = nn.Linear(4, 1)
            if torch.cuda.is_available():
                self.model.cuda()
            self.target_model = copy.deepcopy(self.model)
            self.memory = deque(maxlen=100)
            self.gamma = 0.99

        def update(self, states, rewards, dones):
            next_prediction_batch = self.target_model(states)
            reward_batch = torch.from_numpy(np.array(rewards, dtype=np.float32){COLUMN})
            done_batch = torch.from_numpy(np.array(dones){COLUMN})
            return torch.cat(tuple(reward if done[0] else reward + self.gamma * prediction
                                   for done, reward, prediction in zip(done_batch, reward_batch, next_prediction_batch)))


    if __name__ == "__main__":
        agent = Agent()
        s = torch.randn(8, 4)
        if torch.cuda.is_available():
            s = s.cuda()
        agent.update(s, [0.0] * 8, [False] * 8)
"""


def test_numpy_column_rows_are_not_0dim():
    assert _codes(_DQN_TARGET.replace("{COLUMN}", "[:, None]")) == [(22, "DEV202")]


def test_numpy_ellipsis_none_may_be_1d_and_stays_silent():
    # `a[..., None]` of a 0-d array is 1-D: its rows may be 0-dim
    assert _codes(_DQN_TARGET.replace("{COLUMN}", "[..., None]")) == []


def test_numpy_vector_rows_may_be_0dim_and_stay_silent():
    assert _codes(_DQN_TARGET.replace("{COLUMN}", "")) == []


def test_numpy_column_moved_to_the_predictions_device_is_silent():
    src = _DQN_TARGET.replace("{COLUMN}", "[:, None]").replace(
        "reward + self.gamma * prediction", "reward.to(prediction.device) + self.gamma * prediction")
    assert _codes(src) == []


def test_numpy_column_through_helper_split_into_files(tmp_path):
    files = {
        "rl/batch.py": """
            import numpy as np
            import torch


            def to_column(values):
                return torch.from_numpy(np.asarray(values, dtype=np.float32)[:, None])
            """,
        "rl/train.py": """
            import torch
            import torch.nn as nn
            from rl.batch import to_column


            class Trainer:
                def __init__(self):
                    self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                    self.critic = nn.Linear(3, 1).to(self.device)

                def td_targets(self, states, rewards):
                    values = self.critic(states.to(self.device))
                    out = []
                    for reward, value in zip(to_column(rewards), values):
                        out.append(reward + 0.9 * value)
                    return out


            if __name__ == "__main__":
                Trainer().td_targets(torch.randn(5, 3), [1.0] * 5)
            """,
    }
    found = _path_codes(tmp_path, files)
    assert found == [("rl/batch.py", 7, "DEV202"), ("rl/train.py", 16, "DEV202")], found


def test_tensor_column_with_none_rows_are_not_0dim():
    src = """
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        values = torch.randn(8, 1, device=device)
        rewards = torch.tensor([1.0] * 8)[:, None]
        targets = [r + 0.9 * v for r, v in zip(rewards, values)]
    """
    assert _codes(src) == [(6, "DEV201")]


def test_tensor_vector_rows_may_be_0dim_and_stay_silent():
    src = """
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        values = torch.randn(8, 1, device=device)
        rewards = torch.tensor([1.0] * 8)
        targets = [r + 0.9 * v for r, v in zip(rewards, values)]
    """
    assert _codes(src) == []
