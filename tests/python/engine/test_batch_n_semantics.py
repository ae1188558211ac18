"""Semantics found missing by the unseen batch N (tests/fixtures/engine/unseen/n_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, a subclass of a subclass) and on
the neighbours that must stay silent:
- transformers' Trainer calls `compute_loss(model, inputs)` with the model and every tensor of the batch
  on `args.device` (knowledge scanned from the transformers wheel: the hooks it calls after
  `_prepare_inputs`): a class weight made there on the cpu meets them;
- a project module whose forward moves an input first (`x.to(self.first)` with a device kept on self,
  `x = x.to(...)` as the first read) takes that input wherever it is: the call is not a mismatch."""

from __future__ import annotations


import pytest

from project_fixtures import codes as _codes, write_project as _project


# --- transformers Trainer.compute_loss ------------------------------------------------------------

WEIGHTED = """
import torch
from torch import nn
from transformers import Trainer


class WeightedTrainer(Trainer):
    def compute_loss(self, net, batch, return_outputs=False, **kwargs):
        targets = batch.pop("labels")
        out = net(**batch)
        {make}
        loss = {loss}
        return (loss, out) if return_outputs else loss
"""

BUGGY = [
    # renamed parameters, the criterion built with a cpu weight
    ('crit = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0]))', 'crit(out.logits, targets)', 10),
    # the functional loss with a weight made from a list
    ('w = torch.FloatTensor([1.0, 3.0])', 'nn.functional.cross_entropy(out["logits"], targets, weight=w)', 10),
]

CLEAN = [
    ('crit = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0], device=net.device))', 'crit(out.logits, targets)'),
    ('crit = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0]).to(targets.device))', 'crit(out.logits, targets)'),
    ('crit = nn.CrossEntropyLoss()', 'crit(out.logits, targets)'),
]


@pytest.mark.parametrize("make,loss,line", BUGGY)
def test_compute_loss_cpu_class_weight_is_reported(tmp_path, make, loss, line):
    _project(tmp_path, {"trainer.py": WEIGHTED.format(make=make, loss=loss)})
    found = _codes(tmp_path, "trainer.py")
    assert [ln for ln, _ in found] == [line], found


@pytest.mark.parametrize("make,loss", CLEAN)
def test_compute_loss_weight_on_the_batch_device_is_silent(tmp_path, make, loss):
    _project(tmp_path, {"trainer.py": WEIGHTED.format(make=make, loss=loss)})
    assert _codes(tmp_path, "trainer.py") == []


def test_weight_kept_on_self_in_init_and_trainer_in_its_own_module(tmp_path):
    """A weight made in __init__ on the cpu and kept on self; the Trainer subclass derives from a project
    base class in another file that derives from Seq2SeqTrainer."""
    _project(tmp_path, {
        "base.py": """
            from transformers import Seq2SeqTrainer


            class BaseTrainer(Seq2SeqTrainer):
                pass
            """,
        "weighted.py": """
            import torch
            import torch.nn.functional as F
            from base import BaseTrainer


            class FocalTrainer(BaseTrainer):
                def __init__(self, *args, **kwargs):
                    super().__init__(*args, **kwargs)
                    self.alpha = torch.tensor([0.25, 0.75])

                def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                    labels = inputs["labels"]
                    logits = model(**inputs).logits
                    ce = F.cross_entropy(logits, labels, reduction="none")
                    loss = (self.alpha[labels] * ce).mean()
                    return loss
            """,
    })
    found = _codes(tmp_path, "weighted.py")
    assert found and all(code.startswith("DEV2") for _, code in found), found


def test_weight_given_by_the_caller_stays_silent(tmp_path):
    """Where the weight comes from the caller (its device unknown here), nothing is said."""
    _project(tmp_path, {"t.py": """
        from torch import nn
        from transformers import Trainer


        class T(Trainer):
            def __init__(self, *args, weights=None, **kwargs):
                super().__init__(*args, **kwargs)
                self.weights = weights

            def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                labels = inputs.pop("labels")
                logits = model(**inputs).logits
                return nn.CrossEntropyLoss(weight=self.weights)(logits, labels)
        """})
    assert _codes(tmp_path, "t.py") == []


def test_a_method_of_another_class_is_not_a_trainer_hook(tmp_path):
    _project(tmp_path, {"t.py": """
        import torch
        from torch import nn


        class Helper:
            def compute_loss(self, model, inputs):
                labels = inputs.pop("labels")
                return nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0]))(model(**inputs), labels)
        """})
    assert _codes(tmp_path, "t.py") == []


# --- a module whose forward moves its input itself ------------------------------------------------

SPLIT = """
import torch
import torch.nn as nn


class Split(nn.Module):
    def __init__(self, first={first}, second={second}):
        super().__init__()
        self.first, self.second = first, second
        self.a = nn.Linear(4, 8).to(first)
        self.b = nn.Linear(8, 2).to(second)

    def forward(self, x):
        {body}
        return self.b(h.to(self.second))


model = Split()
out = model(torch.randn(3, 4))
"""


@pytest.mark.parametrize("first,second", [('"cuda:0"', '"cuda:1"'), ('torch.device("cuda", 0)', 'torch.device("cuda:1")')])
@pytest.mark.parametrize("body", ["h = self.a(x.to(self.first))", "x = x.to(self.first)\n        h = self.a(x)"])
def test_forward_that_moves_its_input_takes_a_cpu_input(tmp_path, first, second, body):
    _project(tmp_path, {"m.py": SPLIT.format(first=first, second=second, body=body)})
    assert _codes(tmp_path, "m.py") == []


def test_forward_that_casts_its_input_still_needs_it_on_the_device(tmp_path):
    """`x.to(self.dtype)` with a dtype kept on self is a cast: the cpu input still meets the layer."""
    _project(tmp_path, {"m.py": """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.dtype_ = torch.float16
                self.a = nn.Linear(4, 2)

            def forward(self, x):
                return self.a(x.to(self.dtype_))


        model = Net().to("cuda")
        out = model(torch.randn(3, 4))
        """})
    assert [c for _, c in _codes(tmp_path, "m.py")], "the cpu input is still reported"


# --- a project class deriving from a model library's module ---------------------------------------
# (torchvision's ResNet is an nn.Module: knowledge scanned from the wheel; its own __init__ is not run,
# so the layers it builds, `self.fc`, stay unknown: the head here is the subclass's own)

RESNET_SPLIT = """
import torch
import torch.nn as nn
{imp}


class CNN({base}):
    def __init__(self):
        super().__init__({args})
        self.stage1 = nn.Sequential(self.conv1, self.bn1, self.relu, self.layer1).to("cuda:0")
        self.stage2 = nn.Sequential(self.layer4, self.avgpool).to("cuda:1")
        self.head = nn.Linear(512, 2).to("cuda:1")

    def forward(self, x):
        x = self.stage2(self.stage1(x).to("cuda:1"))
        return self.head(torch.flatten(x, 1))


def train(model, loader, criterion):
    for images, labels in loader:
        output = model(images.to("cuda:0"))
        loss = criterion(output, labels.to({labels_to}))
        loss.backward()


train(CNN(), [(torch.randn(2, 3, 64, 64), torch.tensor([0, 1]))], nn.CrossEntropyLoss())
"""

BASES = [
    ("from torchvision.models.resnet import ResNet, Bottleneck", "ResNet", "Bottleneck, [3, 4, 6, 3], num_classes=2"),
    ("from torchvision.models import ResNet\nfrom torchvision.models.resnet import BasicBlock", "ResNet", "BasicBlock, [2, 2, 2, 2]"),
    ("import torchvision", "torchvision.models.resnet.ResNet", "torchvision.models.resnet.BasicBlock, [2, 2, 2, 2]"),
]


@pytest.mark.parametrize("imp,base,args", BASES)
def test_model_parallel_subclass_of_a_library_model_labels_on_the_first_gpu(tmp_path, imp, base, args):
    _project(tmp_path, {"m.py": RESNET_SPLIT.format(imp=imp, base=base, args=args, labels_to='"cuda:0"')})
    assert _codes(tmp_path, "m.py"), "the cuda:1 output meets the cuda:0 labels"


@pytest.mark.parametrize("labels_to", ['"cuda:1"', "output.device"])
def test_model_parallel_subclass_labels_on_the_output_gpu_is_silent(tmp_path, labels_to):
    imp, base, args = BASES[0]
    _project(tmp_path, {"m.py": RESNET_SPLIT.format(imp=imp, base=base, args=args, labels_to=labels_to)})
    assert _codes(tmp_path, "m.py") == []


# --- "cuda:N" if available else "cpu": that GPU on a GPU machine ----------------------------------

DP = """
import torch
import torch.nn as nn

device = {device}
model = nn.Sequential(nn.Linear(3, 4))
model = torch.nn.DataParallel(model{ids})
model = model.to(device)
out = model(torch.randn(2, 3).to(device))
"""


@pytest.mark.parametrize("device", ['torch.device("cuda:1" if torch.cuda.is_available() else "cpu")',
                                    '"cuda:1" if torch.cuda.is_available() else "cpu"'])
def test_dataparallel_default_ids_with_the_model_on_the_second_gpu(tmp_path, device):
    _project(tmp_path, {"m.py": DP.format(device=device, ids="")})
    assert [c for _, c in _codes(tmp_path, "m.py")] == ["DEV106"]


@pytest.mark.parametrize("device,ids", [('"cuda:0" if torch.cuda.is_available() else "cpu"', ""),
                                        ('"cuda" if torch.cuda.is_available() else "cpu"', ""),
                                        ('"cuda:1" if torch.cuda.is_available() else "cpu"', ", device_ids=[1, 2]")])
def test_dataparallel_on_its_first_gpu_is_silent(tmp_path, device, ids):
    _project(tmp_path, {"m.py": DP.format(device=device, ids=ids)})
    assert _codes(tmp_path, "m.py") == []
