"""`trainer.fit(model)` (validate / test / predict; the Trainer classes and these methods are read from the
lightning wheel into frameworks.json) runs the step hooks on the instance the program built, moved to the
Trainer's device, so what its constructor was given decides its branches and registry lookups. A Trainer
subclass of the project runs them too; afterwards the model's placement is unknown."""

from __future__ import annotations


from devflow.api import check_path
from project_fixtures import codes as _codes, write_project as _project

MODEL = """
import torch
import lightning as L
from torch import nn


def eye_penalty(w):
    return (w - torch.eye(w.shape[-1])).abs().sum()


def plain_penalty(w):
    return w.abs().sum()


PENALTIES = {"eye": eye_penalty, "plain": plain_penalty}


class Net(L.LightningModule):
    def __init__(self, penalty="plain"):
        super().__init__()
        self.layer = nn.Linear(4, 4)
        self.penalty = PENALTIES[penalty]

    def training_step(self, batch, batch_idx):
        x, y = batch
        return self.layer(x).sum() + self.penalty(self.layer.weight)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""

TRAIN = """
import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

from {model_module} import Net
{trainer_import}

model = Net({arg})
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 4)), batch_size=4)
{trainer}.fit(model, loader)
"""


def test_the_built_instance_decides_the_registry(tmp_path):
    _project(tmp_path, {"net.py": MODEL, "train.py": TRAIN.format(model_module="net", trainer_import="", arg='"eye"',
                                                                 trainer='L.Trainer(accelerator="gpu")')})
    assert _codes(tmp_path, "train.py") == [(10, "DEV201")]  # at the fit call; the message names net.py:7
    assert "net.py:7" in check_path(str(tmp_path / "train.py")).diagnostics[0].message


def test_renamed_and_a_project_trainer_subclass_in_another_file(tmp_path):
    _project(tmp_path, {
        "models/__init__.py": "", "models/net.py": MODEL.replace("Net", "Estimator").replace("eye_penalty", "acyclic"),
        "engine.py": """
        import lightning as L


        class GraphTrainer(L.Trainer):
            def predict_params(self, model, loader):
                return self.predict(model, loader)
        """,
        "fit.py": TRAIN.format(model_module="models.net", trainer_import="from engine import GraphTrainer", arg="penalty='eye'",
                               trainer="GraphTrainer(max_epochs=1)").replace("Net", "Estimator")})
    assert _codes(tmp_path, "fit.py") == [(10, "DEV201")]


def test_silent_neighbours(tmp_path):
    # the other registry entry: nothing made on the cpu
    _project(tmp_path / "plain", {"net.py": MODEL, "train.py": TRAIN.format(
        model_module="net", trainer_import="", arg='"plain"', trainer="L.Trainer()")})
    assert _codes(tmp_path / "plain", "train.py") == []
    # the penalty built on the weight's device
    _project(tmp_path / "fixed", {"net.py": MODEL.replace("torch.eye(w.shape[-1])", "torch.eye(w.shape[-1], device=w.device)"),
                                  "train.py": TRAIN.format(model_module="net", trainer_import="", arg='"eye"', trainer="L.Trainer()")})
    assert _codes(tmp_path / "fixed", "train.py") == []
    # a model of unknown kind handed to fit: nothing is run
    _project(tmp_path / "unknown", {"train.py": """
        import lightning as L
        from somewhere import build

        L.Trainer().fit(build(), None)
        """})
    assert _codes(tmp_path / "unknown", "train.py") == []
