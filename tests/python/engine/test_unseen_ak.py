"""Semantics found missing by the unseen batch ak (library objects built and not moved, or fed from the
wrong device; tests/fixtures/engine/unseen/ak_*), each tested on the variations a user writes (renamed,
split into files, one helper deeper, inside a trainer class) and on the neighbours that must stay silent:
- a module constructed and called in one expression, `F1(num_classes=n)(preds, y)`, holds its state
  where its constructor made it, exactly like one bound to a name first: a metric (or a project module,
  or a torch.nn layer outside every forward) built on the cpu and fed device tensors is DEV108 / DEV106.
  torch.nn layers built in code a forward() runs stay DEV104's alone (one finding, no cascade);
- `sample(shape)` of a torch.distributions.Distribution subclass that implements only `rsample` runs
  that `rsample` (torch's Distribution.sample is `with torch.no_grad(): return self.rsample(shape)`), so
  a draw made on the cpu meets the distribution's cuda parameters in `log_prob`;
- `importlib.import_module("name")` with a constant absolute name is the module `import name` binds
  (`self._torch = importlib.import_module("torch")`, `self._PILImage = ...("PIL.Image")`); a name known
  only at run time, or a relative one, stays unknown;
- a distribution built from other distributions (`Independent(Normal(loc, scale), 1)`,
  `TransformedDistribution(base, transforms)`, `MixtureSameFamily(mix, components)`) computes with
  their parameters: a flow's base distribution made on the cpu in `__init__` (not a module: `.to()`
  does not move it) meets the moved model's cuda latents in `log_prob`."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

# ---- a module called straight on its constructor

LIT_MODEL = """
import pytorch_lightning as pl
import torch
import torch.nn as nn
from torchmetrics.classification import F1Score


class LitClassifier(pl.LightningModule):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.net = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.net(x)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        preds = self(x).argmax(dim=1)
        score = {metric}
        self.log("val_f1", score)
"""

FIT = """
from pytorch_lightning import Trainer

from model import LitClassifier


def main(train_loader, val_loader):
    model = LitClassifier(10)
    Trainer(accelerator="gpu", devices=1).fit(model, train_loader, val_loader)
"""


def _lit(root, metric):
    _project(root, {"model.py": LIT_MODEL.format(metric=metric), "train.py": FIT})


def test_metric_built_and_called_in_a_lightning_step(tmp_path):
    _lit(tmp_path, "F1Score(task='multiclass', num_classes=self.num_classes)(preds, y)")
    assert _codes(tmp_path, "model.py") == [(19, "DEV108")]
    assert _codes(tmp_path, "train.py") == [(8, "DEV108")]


def test_renamed_metric_through_the_package_alias(tmp_path):
    _lit(tmp_path, "torchmetrics.Accuracy(task='multiclass', num_classes=self.num_classes)(preds, y)")
    (tmp_path / "model.py").write_text("import torchmetrics\n" + (tmp_path / "model.py").read_text())
    assert _codes(tmp_path, "model.py") == [(20, "DEV108")]


def test_metric_made_by_the_step_and_moved_in_place_is_silent(tmp_path):
    _lit(tmp_path, "F1Score(task='multiclass', num_classes=self.num_classes).to(self.device)(preds, y)")
    assert _codes(tmp_path, "model.py") == []
    assert _codes(tmp_path, "train.py") == []


def test_metric_attribute_of_the_module_is_silent(tmp_path):
    # the report's fix: made in __init__, the Trainer's move carries it
    _project(tmp_path, {"model.py": LIT_MODEL.format(metric="self.f1(preds, y)").replace(
        "self.net = nn.Linear(32, num_classes)",
        "self.net = nn.Linear(32, num_classes)\n        self.f1 = F1Score(task='multiclass', num_classes=num_classes)"),
        "train.py": FIT})
    assert _codes(tmp_path, "model.py") == []


def test_metric_built_in_place_in_a_helper_of_a_plain_loop(tmp_path):
    _project(tmp_path, {"metrics.py": """
        import torchmetrics


        def batch_accuracy(out, label):
            return torchmetrics.Accuracy(task="binary")(out, label)
        """, "train.py": """
        import torch

        from metrics import batch_accuracy


        def evaluate(model, loader, device):
            scores = []
            for img, label in loader:
                out = model(img.to(device))
                scores.append(batch_accuracy(out, label.to(device)))
            return scores


        if __name__ == "__main__":
            device = torch.device("cuda")
            model = torch.nn.Linear(4, 1).to(device)
            evaluate(model, torch.load("val.pt"), device)
        """})
    assert _codes(tmp_path, "metrics.py") == [(5, "DEV108")]
    assert _codes(tmp_path, "train.py") == [(10, "DEV108")]


def test_metric_built_in_place_inside_a_trainer_class(tmp_path):
    _project(tmp_path, {"trainer.py": """
        import torch
        import torchmetrics


        class Trainer:
            def __init__(self, model, device="cuda"):
                self.device = torch.device(device)
                self.model = model.to(self.device)

            def eval_step(self, x, y):
                x, y = x.to(self.device), y.to(self.device)
                logits = self.model(x)
                return torchmetrics.AUROC(task="binary")(logits.sigmoid(), y)
        """, "run.py": """
        import torch

        from trainer import Trainer

        trainer = Trainer(torch.nn.Linear(4, 1))
        print(trainer.eval_step(torch.randn(8, 4), torch.randint(0, 2, (8,))))
        """})
    assert _codes(tmp_path, "trainer.py") == [(13, "DEV108")]


def test_unknown_input_device_stays_silent(tmp_path):
    _project(tmp_path, {"metrics.py": """
        import torchmetrics


        def batch_accuracy(out, label):
            return torchmetrics.Accuracy(task="binary")(out, label)
        """})
    assert _codes(tmp_path, "metrics.py") == []


def test_cpu_inputs_stay_silent(tmp_path):
    _project(tmp_path, {"score.py": """
        import torch
        import torchmetrics

        preds = torch.rand(8)
        target = torch.randint(0, 2, (8,))
        print(torchmetrics.Accuracy(task="binary")(preds, target))
        """})
    assert _codes(tmp_path, "score.py") == []


def test_project_module_built_in_place_on_cuda_inputs(tmp_path):
    _project(tmp_path, {"probe.py": """
        import torch
        import torch.nn as nn


        class Probe(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 2)

            def forward(self, x):
                return self.fc(x)


        feats = torch.randn(4, 16, device="cuda")
        print(Probe()(feats))
        """})
    assert _codes(tmp_path, "probe.py") == [(15, "DEV106")]


def test_torch_layer_built_in_forward_is_dev104_alone(tmp_path):
    _project(tmp_path, {"net.py": """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 8)

            def forward(self, x):
                return nn.BatchNorm1d(8)(self.fc(x))


        model = Net().to("cuda")
        print(model(torch.randn(4, 16, device="cuda")))
        """})
    assert _codes(tmp_path, "net.py") == [(11, "DEV104")]


# ---- Distribution.sample runs the subclass's rsample

PRIOR = """
import torch
import torch.distributions as dist


class {name}(dist.Distribution):
    arg_constraints = {{}}

    def __init__(self, low, high):
        super().__init__(validate_args=False)
        self.low = low
        self.high = high

    def rsample(self, sample_shape=torch.Size()):
        u = torch.rand(sample_shape{dev})
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        inside = (value >= self.low) & (value <= self.high)
        return torch.where(inside, -torch.log(self.high - self.low), torch.full_like(value, float("-inf")))
"""


def _prior(root, name="BoxPrior", dev="", script=None):
    _project(root, {"priors.py": PRIOR.format(name=name, dev=dev), "run.py": script or f"""
        import torch

        from priors import {name}

        prior = {name}(torch.tensor(1.0, device="cuda"), torch.tensor(5.0, device="cuda"))
        print(prior.log_prob(prior.sample((16,))))
        """})


def test_sample_of_a_distribution_subclass_runs_its_rsample(tmp_path):
    _prior(tmp_path)
    assert _codes(tmp_path, "priors.py") == [(14, "DEV201")]
    assert _codes(tmp_path, "run.py") == [(6, "DEV201")]


def test_renamed_prior_sampled_in_a_helper_one_call_deeper(tmp_path):
    _prior(tmp_path, name="UniformInVolume", script="""
        import torch

        from priors import UniformInVolume


        def draw(prior, n):
            return prior.sample((n,))


        def score(prior, n):
            return prior.log_prob(draw(prior, n))


        print(score(UniformInVolume(torch.tensor(1.0, device="cuda"), torch.tensor(5.0, device="cuda")), 8))
        """)
    assert _codes(tmp_path, "priors.py") == [(14, "DEV201")]


def test_prior_sampled_inside_a_trainer_class(tmp_path):
    _prior(tmp_path, script="""
        import torch

        from priors import BoxPrior


        class Trainer:
            def __init__(self, device="cuda"):
                self.device = torch.device(device)
                self.prior = BoxPrior(torch.zeros(3, device=self.device), torch.ones(3, device=self.device))

            def step(self, n):
                theta = self.prior.sample((n,))
                return self.prior.log_prob(theta).sum()


        print(Trainer().step(4))
        """)
    assert _codes(tmp_path, "priors.py") == [(14, "DEV201")]


def test_rsample_on_the_bounds_device_is_silent(tmp_path):
    # the report's fix: the draw is made on the bounds' device
    _prior(tmp_path, dev=", device=self.low.device")
    assert _codes(tmp_path, "priors.py") == []
    assert _codes(tmp_path, "run.py") == []


def test_cpu_bounds_are_silent(tmp_path):
    _prior(tmp_path, script="""
        import torch

        from priors import BoxPrior

        prior = BoxPrior(torch.tensor(1.0), torch.tensor(5.0))
        print(prior.log_prob(prior.sample((16,))))
        """)
    assert _codes(tmp_path, "priors.py") == []


def test_bounds_of_unknown_device_are_silent(tmp_path):
    _prior(tmp_path, script="""
        from priors import BoxPrior


        def fit(low, high):
            prior = BoxPrior(low, high)
            return prior.log_prob(prior.sample((16,)))
        """)
    assert _codes(tmp_path, "priors.py") == []


def test_a_subclass_with_its_own_sample_keeps_it(tmp_path):
    _project(tmp_path, {"priors.py": PRIOR.format(name="BoxPrior", dev="").replace(
        "    def log_prob(self, value):",
        "    def sample(self, sample_shape=torch.Size()):\n"
        "        return self.low + torch.rand(sample_shape, device=self.low.device) * (self.high - self.low)\n\n"
        "    def log_prob(self, value):"), "run.py": """
        import torch

        from priors import BoxPrior

        prior = BoxPrior(torch.tensor(1.0, device="cuda"), torch.tensor(5.0, device="cuda"))
        print(prior.log_prob(prior.sample((16,))))
        """})
    assert _codes(tmp_path, "priors.py") == []


# ---- importlib.import_module("name") is the module `import name` binds

EMBEDDER = """
import importlib

import torchvision
import torchvision.transforms as T


class ImageEmbedder:
    def __init__(self, device="cpu"):
        self._torch = importlib.import_module("torch")
        self._PILImage = importlib.import_module("PIL.Image")
        self._model = torchvision.models.resnet18()
        self._model.to(device)
        self._device = device
        self._preprocess = T.Compose([T.Resize(224), T.ToTensor()])

    def embed(self, image):
        pil_image = self._PILImage.fromarray(image)
        with self._torch.no_grad():
            return self._model(self._preprocess(pil_image).unsqueeze(0){move})
"""

INDEX = """
import numpy as np

from embedder import ImageEmbedder

embedder = ImageEmbedder(device="cuda")
print(embedder.embed(np.zeros((64, 64, 3), dtype=np.uint8)))
"""


def test_module_imported_by_name_on_an_attribute(tmp_path):
    _project(tmp_path, {"embedder.py": EMBEDDER.format(move=""), "index.py": INDEX})
    assert _codes(tmp_path, "embedder.py") == [(19, "DEV202")]
    assert _codes(tmp_path, "index.py") == [(6, "DEV202")]


def test_inputs_moved_to_the_embedders_device_are_silent(tmp_path):
    _project(tmp_path, {"embedder.py": EMBEDDER.format(move=".to(self._device)"), "index.py": INDEX})
    assert _codes(tmp_path, "embedder.py") == []
    assert _codes(tmp_path, "index.py") == []


def test_torch_imported_by_name_in_a_helper(tmp_path):
    _project(tmp_path, {"ops.py": """
        import importlib

        th = importlib.import_module("torch")


        def add_bias(x):
            return x + th.ones(x.shape[-1])
        """, "run.py": """
        import torch

        from ops import add_bias

        print(add_bias(torch.randn(4, 8, device="cuda")))
        """})
    assert _codes(tmp_path, "ops.py") == [(7, "DEV201")]


def test_project_module_imported_by_name(tmp_path):
    _project(tmp_path, {"nets/__init__.py": "", "nets/mlp.py": """
        import torch.nn as nn


        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 2)

            def forward(self, x):
                return self.fc(x)
        """, "train.py": """
        import importlib

        import torch

        nets = importlib.import_module("nets.mlp")
        model = nets.MLP()
        print(model(torch.randn(4, 8, device="cuda")))
        """})
    assert _codes(tmp_path, "train.py") == [(7, "DEV106")]


def test_module_named_at_run_time_stays_silent(tmp_path):
    _project(tmp_path, {"run.py": """
        import importlib
        import sys

        import torch

        backend = importlib.import_module(sys.argv[1])
        print(backend.ones(3) + torch.randn(3, device="cuda"))
        """})
    assert _codes(tmp_path, "run.py") == []


def test_relative_module_name_stays_silent(tmp_path):
    _project(tmp_path, {"run.py": """
        import importlib

        import torch

        ops = importlib.import_module(".ops", package="mypkg")
        print(ops.ones(3) + torch.randn(3, device="cuda"))
        """})
    assert _codes(tmp_path, "run.py") == []


def test_stateless_project_loss_built_in_place_is_silent(tmp_path):
    _project(tmp_path, {"loss.py": """
        import torch
        import torch.nn as nn


        class CharbonnierLoss(nn.Module):
            def __init__(self, eps=1e-6):
                super().__init__()
                self.eps = eps

            def forward(self, a, b):
                return torch.sqrt((a - b) ** 2 + self.eps).mean()


        x = torch.randn(4, 3, device="cuda")
        print(CharbonnierLoss()(x, torch.zeros_like(x)))
        """})
    assert _codes(tmp_path, "loss.py") == []


# ---- distributions built from distributions

FLOW = """
import torch
import torch.nn as nn
{imports}


class RealNVP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 2 * dim))
        self.base = {base}

    def log_prob(self, x):
        s, t = self.net(x).chunk(2, dim=-1)
        z = x * torch.exp(s) + t
        return self.base.log_prob(z) + s.sum(-1)
"""

FLOW_TRAIN = """
import torch

from flows import RealNVP


def train(loader, epochs=10):
    device = torch.device("cuda")
    model = RealNVP(2).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(epochs):
        for x in loader:
            loss = -model.log_prob(x.to(device)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    train(torch.load("points.pt"))
"""


def _flow(root, base, imports="from torch.distributions import Independent, Normal"):
    _project(root, {"flows.py": FLOW.format(imports=imports, base=base), "train.py": FLOW_TRAIN})


def test_independent_base_of_a_flow_left_on_the_cpu(tmp_path):
    _flow(tmp_path, "Independent(Normal(torch.zeros(dim), torch.ones(dim)), 1)")
    assert _codes(tmp_path, "flows.py") == [(10, "DEV201")]
    assert _codes(tmp_path, "train.py") == [(12, "DEV201")]


def test_renamed_module_and_a_transformed_base(tmp_path):
    _flow(tmp_path, "D.TransformedDistribution(D.Normal(torch.zeros(dim), torch.ones(dim)), [D.transforms.TanhTransform()])",
          imports="import torch.distributions as D")
    assert _codes(tmp_path, "flows.py") == [(10, "DEV201")]


def test_mixture_base_built_by_a_helper(tmp_path):
    _project(tmp_path, {"priors.py": """
        import torch
        from torch.distributions import Categorical, Independent, MixtureSameFamily, Normal


        def gmm_prior(k, dim):
            mix = Categorical(torch.ones(k))
            comp = Independent(Normal(torch.randn(k, dim), torch.ones(k, dim)), 1)
            return MixtureSameFamily(mix, comp)
        """, "flows.py": FLOW.format(imports="from priors import gmm_prior", base="gmm_prior(4, dim)"),
        "train.py": FLOW_TRAIN})
    assert _codes(tmp_path, "priors.py") == [(6, "DEV201")]


def test_base_of_a_flow_inside_a_trainer_class(tmp_path):
    _project(tmp_path, {"trainer.py": """
        import torch
        import torch.nn as nn
        from torch.distributions import Independent, Normal


        class FlowTrainer:
            def __init__(self, dim, device="cuda"):
                self.device = torch.device(device)
                self.flow = nn.Linear(dim, dim).to(self.device)
                self.base = Independent(Normal(torch.zeros(dim), torch.ones(dim)), 1)

            def nll(self, x):
                z = self.flow(x.to(self.device))
                return -self.base.log_prob(z).mean()


        print(FlowTrainer(2).nll(torch.randn(8, 2)))
        """})
    assert _codes(tmp_path, "trainer.py") == [(10, "DEV201")]


def test_base_from_the_flows_buffers_is_silent(tmp_path):
    # the usual fix: the parameters are buffers (moved with the model), the distribution is built from them
    _project(tmp_path, {"flows.py": FLOW.format(imports="from torch.distributions import Independent, Normal",
                                               base="None").replace(
        "        self.base = None\n",
        "        self.register_buffer(\"loc\", torch.zeros(dim))\n        self.register_buffer(\"scale\", torch.ones(dim))\n").replace(
        "return self.base.log_prob(z)", "return Independent(Normal(self.loc, self.scale), 1).log_prob(z)"),
        "train.py": FLOW_TRAIN})
    assert _codes(tmp_path, "flows.py") == []
    assert _codes(tmp_path, "train.py") == []


def test_base_made_on_the_models_device_is_silent(tmp_path):
    _project(tmp_path, {"trainer.py": """
        import torch
        from torch.distributions import Independent, Normal


        def nll(flow, x, device):
            base = Independent(Normal(torch.zeros(2, device=device), torch.ones(2, device=device)), 1)
            return -base.log_prob(flow(x.to(device))).mean()


        print(nll(torch.nn.Linear(2, 2).cuda(), torch.randn(8, 2), "cuda"))
        """})
    assert _codes(tmp_path, "trainer.py") == []


def test_latents_of_unknown_device_are_silent(tmp_path):
    _project(tmp_path, {"score.py": """
        import torch
        from torch.distributions import Independent, Normal

        base = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)


        def score(z):
            return base.log_prob(z)
        """})
    assert _codes(tmp_path, "score.py") == []


def test_scalar_base_parameters_are_silent(tmp_path):
    # 0-dim cpu parameters (Python numbers) combine with cuda values
    _project(tmp_path, {"score.py": """
        import torch
        from torch.distributions import Independent, Normal

        base = Independent(Normal(torch.zeros(()), 1.0).expand([2]), 1)
        print(base.log_prob(torch.randn(8, 2, device="cuda")))
        """})
    assert _codes(tmp_path, "score.py") == []
