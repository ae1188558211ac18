"""Semantics found missing by the unseen batch Q (tests/fixtures/engine/unseen/q_*: cpu tensors made in
model and loss code), each tested on the variations a user writes (renamed, split into files, one helper
deeper, inside a trainer class) and on the neighbours that must stay silent:
- `x if cond else None` is the other branch wherever it is used as a tensor (None never is one);
- a loop over a dict whose keys are all known runs once per key: `for k in batch.keys(): if k not in skip:
  batch[k] = batch[k].to(device)` moves each entry but the skipped ones; `k in ("a", "b")` is decided;
- a script importing a package (`from pkg import loss_fn`) imports what its `__init__` imports: the
  findings its run makes in `pkg/losses.py` are placed there too;
- DEV103: a list literal of layers with parameters is not registered even with parameter-free layers
  (`nn.ReLU()`) between them; handed to `nn.Sequential(*self.layers)` it is."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


ARCH = """
import torch
import torch.nn as nn


class Matcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, data):
        scores = self.proj(data["feats"])
        matches = data["matches"] if "matches" in data else None
        if matches is None:
            return {"scores": scores}
        gt = matches.clone() if matches is not None else None
        hits = torch.arange(0, gt.shape[0])[gt > 0]
        return {"scores": scores, "hits": hits}
"""


# ---- `x if cond else None` and a loop over a dict's known keys
def test_optional_entry_of_a_batch_moved_key_by_key_inside_a_model_wrapper(tmp_path):
    _project(tmp_path, {"arch.py": ARCH, "wrapper.py": """
        import torch
        from arch import Matcher


        class Wrapper:
            def __init__(self, gpus):
                self.device = torch.device("cuda" if gpus > 0 else "cpu")
                self.net = Matcher().to(self.device)

            def feed_data(self, data):
                self.data = data
                for key in data.keys():
                    if key not in ("name",):
                        self.data[key] = data[key].to(self.device)

            def step(self):
                return self.net(self.data)
        """, "train.py": """
        import torch
        from wrapper import Wrapper

        w = Wrapper(torch.cuda.device_count())
        for i in range(3):
            w.feed_data({"name": "a", "feats": torch.randn(4, 8), "matches": torch.randint(-1, 4, (4,))})
            w.step()
        """})
    assert _codes(tmp_path, "train.py") == [(7, "DEV204")]
    assert (17, "DEV204") in _codes(tmp_path, "wrapper.py")


def test_entry_skipped_by_the_key_loop_stays_on_cpu_and_is_silent(tmp_path):
    _project(tmp_path, {"arch.py": ARCH, "train.py": """
        import torch
        from arch import Matcher

        device = torch.device("cuda")
        net = Matcher().to(device)
        batch = {"name": "a", "feats": torch.randn(4, 8), "matches": torch.randint(-1, 4, (4,))}
        for k, v in batch.items():
            if k not in ("name", "matches"):
                batch[k] = v.to(device)
        net(batch)
        """})
    assert _codes(tmp_path, "train.py") == []


def test_dict_loop_over_items_with_an_equality_test_moves_one_entry(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch

        device = torch.device("cuda")
        batch = {"x": torch.randn(3), "m": torch.randint(0, 2, (3,))}
        for k, v in batch.items():
            if k == "m":
                batch[k] = v.to(device)
        picked = torch.arange(3)[batch["m"] > 0]
        fine = torch.arange(3)[batch["x"] > 0]
        """})
    assert _codes(tmp_path, "train.py") == [(8, "DEV204")]


def test_optional_value_used_as_a_tensor_is_the_tensor_one_helper_deeper(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch


        def pick(labels, key):
            target = labels.get(key) if key in labels else None
            return torch.eye(4)[target]


        device = torch.device("cuda")
        labels = {"cls": torch.randint(0, 4, (8,)).to(device)}
        onehot = pick(labels, "cls")
        """})
    assert (6, "DEV204") in _codes(tmp_path, "train.py")


# ---- a package's __init__ re-export: the script imports the module
LOSSES = """
import torch


def ordinal_loss(logits, levels):
    first = torch.cat([torch.ones((levels.shape[0], 1)), levels[:, :-1]], dim=1)
    return ((logits - levels) * first).abs().mean()
"""


def test_finding_placed_in_a_module_the_script_imports_through_its_package(tmp_path):
    _project(tmp_path, {"ordlib/__init__.py": "from .losses import ordinal_loss\n", "ordlib/losses.py": LOSSES,
                        "fit.py": """
        import torch
        from ordlib import ordinal_loss

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 3).to(device)
        for step in range(3):
            x = torch.randn(8, 4).to(device)
            levels = (torch.rand(8, 3) > 0.5).float().to(device)
            loss = ordinal_loss(model(x), levels)
        """})
    assert _codes(tmp_path, "fit.py") == [(9, "DEV201")]
    assert _codes(tmp_path, "ordlib/losses.py") == [(5, "DEV201")]


def test_package_import_whose_module_is_not_reached_places_nothing(tmp_path):
    _project(tmp_path, {"ordlib/__init__.py": "from .losses import ordinal_loss\n", "ordlib/losses.py": LOSSES,
                        "fit.py": """
        import torch
        from ordlib import ordinal_loss

        device = torch.device("cuda")
        levels = (torch.rand(8, 3) > 0.5).float()
        loss = ordinal_loss(torch.randn(8, 3), levels)
        """})
    assert _codes(tmp_path, "ordlib/losses.py") == []


# ---- DEV103 with parameter-free layers in the list
def test_layer_list_mixing_parameter_free_layers_is_not_registered(tmp_path):
    _project(tmp_path, {"layers.py": """
        import torch.nn as nn


        class TNet(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.mlp = [nn.Conv1d(k, 64, 1), nn.BatchNorm1d(64), nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU()]

            def forward(self, x):
                for layer in self.mlp:
                    x = layer(x)
                return x
        """})
    assert _codes(tmp_path, "layers.py") == [(7, "DEV103")]


def test_layer_list_handed_to_sequential_or_parameter_free_only_is_silent(tmp_path):
    _project(tmp_path, {"layers.py": """
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.layers = [nn.Conv1d(k, 64, 1), nn.ReLU()]
                self.body = nn.Sequential(*self.layers)
                self.acts = [nn.ReLU(), nn.Dropout(0.1)]

            def forward(self, x):
                x = self.body(x)
                for act in self.acts:
                    x = act(x)
                return self.layers[0].weight.sum() + x
        """})
    assert _codes(tmp_path, "layers.py") == []


# ---- a method named at run time, `isinstance` of a list the code built, `get_buffer`
DISPATCH = """
import numpy as np
import torch
import torch.nn as nn


def causal_mask(size):
    upper = np.triu(np.ones((1, size, size)), k=1).astype("uint8")
    return torch.from_numpy(upper) == 0


class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, *args, **kwargs):
        mode = kwargs.get("mode", "forward")
        if "mode" in kwargs:
            del kwargs["mode"]
        return getattr(self, "_" + mode)(*args, **kwargs)

    def _forward(self, x):
        return self.proj(x)

    def _sample(self, x):
        scores = self.proj(x)
        return scores.masked_fill(causal_mask(x.size(1)) == 0, -1e9)
"""


def test_method_chosen_by_getattr_on_a_mode_string_runs_inside_a_trainer(tmp_path):
    _project(tmp_path, {"captioner.py": DISPATCH, "trainer.py": """
        import torch
        from captioner import Captioner


        class Trainer:
            def __init__(self, device):
                self.device = device
                self.model = Captioner().to(device)

            def evaluate(self, batches):
                for x in batches:
                    self.model(x.to(self.device), mode="sample")


        Trainer(torch.device("cuda")).evaluate([torch.randn(2, 4, 8)])
        """})
    assert _codes(tmp_path, "trainer.py") == [(12, "DEV202")]


def test_method_chosen_by_getattr_whose_path_is_on_the_device_is_silent(tmp_path):
    _project(tmp_path, {"captioner.py": DISPATCH, "trainer.py": """
        import torch
        from captioner import Captioner

        device = torch.device("cuda")
        model = Captioner().to(device)
        out = model(torch.randn(2, 4, 8).to(device), mode="forward")
        name = input()
        other = getattr(model, "_" + name)(torch.randn(2, 4, 8).to(device))
        """})
    assert _codes(tmp_path, "trainer.py") == []


def test_isinstance_of_a_list_argument_picks_the_branch_that_runs(tmp_path):
    _project(tmp_path, {"losses.py": """
        import torch
        from torch import nn


        class Focal(nn.Module):
            def __init__(self, alpha=None, num_classes=3):
                super().__init__()
                if alpha is None:
                    self.alpha = torch.ones(num_classes)
                elif isinstance(alpha, (list, tuple)):
                    self.alpha = torch.tensor(alpha)
                else:
                    self.alpha = torch.full((num_classes,), float(alpha))

            def forward(self, logits, labels):
                at = self.alpha.gather(0, labels)
                return (at * logits.logsumexp(1)).mean()
        """, "train.py": """
        import torch
        from losses import Focal

        device = torch.device("cuda")
        crit = Focal(alpha=[0.2, 0.3, 0.5])
        for step in range(3):
            x = torch.randn(4, 3, device=device)
            y = torch.randint(0, 3, (4,), device=device)
            loss = crit(x, y)
        """})
    assert _codes(tmp_path, "losses.py") == [(11, "DEV201")]
    assert _codes(tmp_path, "train.py") == [(9, "DEV201")]


def test_get_buffer_reads_the_registered_table_moved_or_not(tmp_path):
    loss = """
        import torch
        from torch import nn


        class SoftTargets(nn.Module):
            def __init__(self, num_classes):
                super().__init__()
                self.register_buffer("table", torch.eye(num_classes) * 0.9 + 0.1 / num_classes)

            def forward(self, logits, target):
                soft = self.get_buffer("table")[target]
                return -(soft * logits.log_softmax(1)).sum(1).mean()
        """
    _project(tmp_path / "bad", {"soft.py": loss, "train.py": """
        import torch
        from soft import SoftTargets

        device = torch.device("cuda")
        crit = SoftTargets(5)
        loss = crit(torch.randn(4, 5, device=device), torch.randint(0, 5, (4,), device=device))
        """})
    _project(tmp_path / "good", {"soft.py": loss, "train.py": """
        import torch
        from soft import SoftTargets

        device = torch.device("cuda")
        crit = SoftTargets(5).to(device)
        loss = crit(torch.randn(4, 5, device=device), torch.randint(0, 5, (4,), device=device))
        """})
    assert _codes(tmp_path / "bad", "train.py") in ([(6, "DEV204")], [(6, "DEV106")])
    assert _codes(tmp_path / "good", "train.py") == []


# ---- a criterion picked by an option: one of several callables, each a path that runs
LOSSES_BY_NAME = """
import torch
import torch.nn as nn


def dice_loss(logits, true, eps=1e-7):
    one_hot = torch.eye(logits.shape[1]){eye_device}[true]
    probas = logits.softmax(1)
    return 1 - (2 * (probas * one_hot).sum() / ((probas + one_hot).sum() + eps))


def hybrid_loss(predictions, target):
    loss = 0
    for p in predictions:
        loss += nn.functional.cross_entropy(p, target) + dice_loss(p, target)
    return loss


def get_criterion(opt):
    if opt.loss_function == "hybrid":
        criterion = hybrid_loss
    if opt.loss_function == "bce":
        criterion = nn.CrossEntropyLoss()
    if opt.loss_function == "dice":
        criterion = dice_loss
    return criterion
"""

TRAIN_BY_NAME = """
import argparse
import torch
from losses import get_criterion

parser = argparse.ArgumentParser()
parser.add_argument("--loss_function", default="hybrid")
opt = parser.parse_args()
dev = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(16, 4).to(dev)
criterion = get_criterion(opt)
for step in range(3):
    x, labels = torch.randn(8, 16).to(dev), torch.randint(0, 4, (8,)).to(dev)
    out = model(x)
    loss = criterion((out, out), labels)
"""


def test_criterion_chosen_by_a_command_line_option_runs_each_choice(tmp_path):
    _project(tmp_path, {"losses.py": LOSSES_BY_NAME.replace("{eye_device}", ""), "train.py": TRAIN_BY_NAME})
    assert _codes(tmp_path, "train.py") == [(14, "DEV204")]


def test_criterion_chosen_by_an_option_whose_choices_all_place_their_tensors_is_silent(tmp_path):
    _project(tmp_path, {"losses.py": LOSSES_BY_NAME.replace("{eye_device}", ".to(true.device)"),
                        "train.py": TRAIN_BY_NAME})
    assert _codes(tmp_path, "train.py") == []
