"""Calling a project metric (`class DER(torchmetrics.Metric)` with its own `update`, on the library's `forward`) runs
its `update` on the call's arguments (generated: frameworks.json `metrics.forward_runs`, the public methods
torchmetrics' `Metric.forward(*args, **kwargs)` hands its arguments to through the class's own methods). A tensor the
update makes on the cpu then meets the GPU predictions where they meet (DEV201 where it is made).

With it: `isinstance(0.5, numbers.Number)` is decided as Python decides it (the numeric ABCs of the running
interpreter's stdlib), and a script reaches a file through relative imports inside a namespace package
(`pyannote/audio/...` with no `pyannote/__init__.py`), so the finding is also reported in the file where it is."""

from __future__ import annotations

import textwrap

from devflow.api import check_source
from project_fixtures import codes as _codes, write_project as _project


def _found(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics)


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


_ONE_FILE = """
    from numbers import Number

    import torch
    from torchmetrics import Metric


    class ThresholdedHits(Metric):
        def __init__(self, threshold=0.5):
            super().__init__()
            self.threshold = threshold
            self.add_state("hits", torch.tensor(0.0), dist_reduce_fx="sum")

        def update(self, preds, target):
            threshold = self.threshold
            if isinstance(threshold, Number):
                threshold = THRESHOLD
            self.hits += ((preds.unsqueeze(-1) > threshold).float() * target.unsqueeze(-1)).sum()

        def compute(self):
            return self.hits


    def evaluate(model, batches, device):
        metric = ThresholdedHits().to(device)
        for x, y in batches:
            metric(model(x.to(device)), y.to(device))
        return metric.compute()


    if __name__ == "__main__":
        device = torch.device("cuda")
        model = torch.nn.Linear(8, 3).to(device)
        evaluate(model, [(torch.randn(4, 8), torch.ones(4, 3))], device)
"""


def _one(threshold: str = "torch.tensor([threshold])") -> str:
    return _ONE_FILE.replace("THRESHOLD", threshold)


def test_calling_a_project_metric_runs_its_update():
    src = _one()
    assert _found(src) == [(_line(src, "threshold = torch.tensor"), "DEV201")]


def test_update_placing_the_threshold_with_the_predictions_stays_silent():
    assert _found(_one("torch.tensor([threshold], device=preds.device)")) == []
    assert _found(_one("preds.new_tensor([threshold])")) == []
    assert _found(_one("threshold")) == []


def test_a_threshold_that_is_no_number_keeps_the_branch_undecided():
    src = _one().replace("ThresholdedHits()", "ThresholdedHits(threshold=load_thresholds())")
    assert _found(src) == []


def test_a_project_metric_with_its_own_forward_runs_that_forward():
    src = _one().replace("        def compute(self):", "        def forward(self, preds, target):\n"
                                                     "            return None\n\n        def compute(self):")
    assert _found(src) == []


def test_namespace_package_metric_in_a_lightning_module(tmp_path):
    """The metric module and its functional helper inside a namespace package, reached through a package
    `__init__`'s relative import (a project with its setup.py at the root); the module's validation step calls
    the metric."""
    _project(tmp_path, {
        "setup.py": "from setuptools import find_namespace_packages, setup\n\nsetup(name='der', packages=find_namespace_packages())\n",
        "der/metrics/__init__.py": "from .rate import ErrorRate\n",
        "der/metrics/rate.py": """
            import torch
            from torchmetrics import Metric

            from der.metrics.functional import error_update


            class ErrorRate(Metric):
                def __init__(self, threshold: float = 0.5):
                    super().__init__()
                    self.threshold = threshold
                    self.add_state("errors", torch.tensor(0.0), dist_reduce_fx="sum")

                def update(self, preds, target):
                    self.errors += error_update(preds, target, threshold=self.threshold)

                def compute(self):
                    return self.errors
        """,
        "der/metrics/functional.py": """
            from numbers import Number

            import torch


            def error_update(preds, target, threshold=0.5):
                if isinstance(threshold, Number):
                    threshold = torch.tensor([threshold], dtype=preds.dtype)
                return ((preds.unsqueeze(-1) > threshold).float() - target.unsqueeze(-1)).abs().sum()
        """,
        "der/model.py": """
            import pytorch_lightning as pl
            import torch
            from torch import nn

            from der.metrics import ErrorRate


            class Model(pl.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.classifier = nn.Linear(16, 3)
                    self.validation_metric = ErrorRate()

                def forward(self, x):
                    return torch.sigmoid(self.classifier(x))

                def training_step(self, batch, batch_idx):
                    x, y = batch
                    return nn.functional.binary_cross_entropy(self(x), y)

                def validation_step(self, batch, batch_idx):
                    x, y = batch
                    self.validation_metric(self(x), y)

                def configure_optimizers(self):
                    return torch.optim.Adam(self.parameters())
        """,
        "train.py": """
            import pytorch_lightning as pl
            import torch
            from torch.utils.data import DataLoader, TensorDataset

            from der.model import Model


            def loader():
                return DataLoader(TensorDataset(torch.randn(64, 16), (torch.rand(64, 3) > 0.5).float()), batch_size=8)


            if __name__ == "__main__":
                pl.Trainer(accelerator="gpu", devices=1, max_epochs=1).fit(Model(), loader(), loader())
        """})
    assert _codes(tmp_path, "der/metrics/functional.py") == [(8, "DEV201")]
