"""Semantics found missing on unseen real cases, batch BS (tests/fixtures/engine/unseen/bs_*): the training
machinery (runners and callbacks, optimizers, quantization wrappers, DataParallel).

- A parameter annotated as a numpy array (`np.ndarray`, `np.array`, `numpy.typing.NDArray[...]`, alone or
  `Optional` / `| None`) receives host data when the argument a call gives it is not known (an array from
  pandas or scikit-learn, or no caller): `torch.tensor(arr)` of it is a cpu tensor, and a DataLoader over a
  `TensorDataset` of such tensors yields cpu batches. deep_tabular_augmentation's `create_datasets(train_data:
  np.array, ...)` builds the TensorDatasets its Runner trains on; the model is moved, the batches are not. A
  known argument keeps its own value (a cuda tensor given to the parameter stays on cuda), and a union with
  another type (`np.ndarray | torch.Tensor`) says nothing (interp/numpy_params.py)."""

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


# --- a parameter declared as a numpy array ----------------------------------------------------------------------

_NUMPY_PARAM = """
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    device = torch.device("cuda")
    model = nn.Linear(4, 2).to(device)


    def create_datasets(train_data: ANN, train_target: ANN):
        return TensorDataset(torch.tensor(train_data).float(), torch.tensor(train_target).long())


    def run(x, y):
        for xb, yb in DataLoader(create_datasets(x, y), batch_size=2):
            model(xb)
"""


def test_numpy_annotated_parameter_is_host_data():
    for ann in ("np.array", "np.ndarray", "'np.ndarray'", "np.ndarray | None", "Optional[np.ndarray]",
                "npt.NDArray[np.float32]"):
        src = _NUMPY_PARAM.replace("ANN", ann).replace(
            "import numpy as np\n", "import numpy as np\n    import numpy.typing as npt\n    from typing import Optional\n")
        assert _codes(src) == [(19, "DEV202")], ann


def test_numpy_parameter_fixed_by_moving_the_batch_is_clean():
    assert _codes(_NUMPY_PARAM.replace("ANN", "np.ndarray").replace("model(xb)", "model(xb.to(device))")) == []


def test_numpy_parameter_given_a_known_tensor_keeps_it():
    src = _NUMPY_PARAM.replace("ANN", "np.ndarray") + """
    run(torch.randn(8, 4, device=device), torch.zeros(8, device=device))
"""
    # a known argument is what it is: cuda tensors stay on cuda, whatever the annotation says
    assert _codes(src) == []


def test_union_or_unannotated_parameter_stays_unknown():
    for ann in ("np.ndarray | torch.Tensor", "Union[np.ndarray, torch.Tensor]", "object"):
        src = _NUMPY_PARAM.replace("ANN", ann).replace("import numpy as np\n", "import numpy as np\n    from typing import Union\n")
        assert _codes(src) == [], ann
    src = _NUMPY_PARAM.replace("train_data: ANN, train_target: ANN", "train_data, train_target")
    assert _codes(src) == []


def test_numpy_parameter_as_a_0dim_tensor_directly_is_not_reported():
    # `torch.tensor(arr)` of an array of unknown shape may be a 0-dim cpu scalar, which mixes with any device:
    # only the DataLoader's stacked batches are known to have a batch dimension
    src = """
        import numpy as np
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 2).to("cuda")


        def score(arr: np.ndarray):
            return model.weight * torch.tensor(arr)
    """
    assert _codes(src) == []


def test_numpy_parameter_runner_split_in_files(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/data.py": """
            import numpy as np
            import torch
            from torch.utils.data import DataLoader, TensorDataset


            def create_datasets(train_data: np.array, test_data: np.array):
                return TensorDataset(torch.tensor(train_data).float()), TensorDataset(torch.tensor(test_data).float())


            def create_loaders(data, bs=128):
                trn_ds, tst_ds = data
                return DataLoader(trn_ds, batch_size=bs, shuffle=True), DataLoader(tst_ds, batch_size=bs)
        """,
        "pkg/runner.py": """
            class Learner:
                def __init__(self, model, data):
                    self.model, self.data = model, data


            class Runner:
                @property
                def model(self):
                    return self.learn.model

                def one_batch(self, xb):
                    self.xb = xb
                    self.pred = self.model(self.xb)

                def fit(self, epochs, learn):
                    self.epochs, self.learn = epochs, learn
                    for epoch in range(epochs):
                        for (xb,) in self.learn.data[0]:
                            self.one_batch(xb)
        """,
        "train.py": """
            import pandas as pd
            import torch
            import torch.nn as nn

            from pkg.data import create_datasets, create_loaders
            from pkg.runner import Learner, Runner

            df = pd.read_csv("data.csv")
            DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            loaders = create_loaders(create_datasets(df.values[:800], df.values[800:]))
            model = nn.Linear(4, 2).to(DEVICE)
            Runner().fit(3, Learner(model, loaders))
        """,
    }
    # reported where the script starts the run that feeds the cpu batch to the moved model
    assert _path_codes(tmp_path, files) == [("train.py", 13, "DEV202")]
    files["train.py"] = files["train.py"].replace("model = nn.Linear(4, 2).to(DEVICE)", "model = nn.Linear(4, 2)")
    assert _path_codes(tmp_path, files) == []
