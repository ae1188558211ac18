"""Semantics found missing on unseen real cases, batch BH (tests/fixtures/engine/unseen/bh_*): frameworks and
big libraries in use (torchvision model surgery, library classes named by class attributes).

- A module stored on a submodule of a library model after the model was moved (`model.roi_heads.box_predictor
  = FastRCNNPredictor(...)` after `fasterrcnn_resnet50_fpn_v2(...).to(device)`): nn.Module.__setattr__ registers
  it inside the moved model, nothing moves it, the next forward meets it on the cpu (DEV101), as for a direct
  attribute (`model.fc = ...`). A module without parameters or buffers (`nn.Identity()`, `nn.Dropout(p)`) has
  no device: storing one after the move is harmless, directly or on a submodule; a model dispatched with
  device_map is left to the DEV5xx rules.
- A class attribute that names a class or function (`distr_cls = Normal`, `layer_cls = nn.Linear`) is read
  through the instance as that object: `self.distr_cls(loc, scale)` builds a Normal on the device of its
  arguments, `self.layer_cls(4, 4)` a cpu Linear. Not when any file of the run stores `<x>.attr` (an instance
  attribute of that name would hide the class's).
- A library file gets the findings of the scripts that run it also when they sit two folders deep
  (`examples/pytorch/vicregl.py` importing `lightly.loss`): a loss that accumulates `loss = torch.tensor(0.0);
  loss += <cuda>` in place is reported at its accumulator, not only at the example's call."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- a module stored on a submodule of a moved library model ------------------------------------------------

_HEAD = """
    import torch
    from torch import nn
    from torchvision.models.detection import fasterrcnn_resnet50_fpn_v2
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""


def test_head_replaced_on_a_submodule_after_the_move():
    assert _codes(_HEAD + """
    model = fasterrcnn_resnet50_fpn_v2(weights="DEFAULT").to(device)
    in_features = model.roi_heads.box_predictor.cls_score.in_features
    model.roi_heads.box_predictor = FastRCNNPredictor(in_features, 2)
    """) == [(11, "DEV101")]


def test_head_replaced_on_a_submodule_renamed_and_two_levels_deep():
    assert _codes("""
    import torch
    import torchvision
    from torch import nn

    dev = "cuda:0"
    net = torchvision.models.resnet50(weights=None)
    net = net.to(dev)
    net.layer4[0].downsample = nn.Sequential(nn.Conv2d(1024, 2048, 1), nn.BatchNorm2d(2048))
    """) == [(9, "DEV101")]


def test_head_replaced_by_a_helper_one_call_deeper():
    assert _codes(_HEAD + """
    def replace_head(model, num_classes):
        in_features = model.roi_heads.box_predictor.cls_score.in_features
        model.roi_heads.box_predictor = FastRCNNPredictor(in_features, num_classes)
        return model


    model = fasterrcnn_resnet50_fpn_v2(weights="DEFAULT").to(device)
    model = replace_head(model, 3)
    """) == [(16, "DEV102")]


def test_head_replaced_inside_a_trainer_class():
    found = _codes(_HEAD + """
    class Trainer:
        def __init__(self, num_classes):
            self.model = fasterrcnn_resnet50_fpn_v2(weights="DEFAULT")
            self.model.to(device)
            self.model.roi_heads.box_predictor = FastRCNNPredictor(1024, num_classes)


    Trainer(2)
    """)
    assert found == [(13, "DEV101")]


def test_head_replaced_split_into_files(tmp_path: Path):
    (tmp_path / "heads.py").write_text(textwrap.dedent("""
        from torchvision.models.detection.faster_rcnn import FastRCNNPredictor


        def with_new_head(model, num_classes):
            in_features = model.roi_heads.box_predictor.cls_score.in_features
            model.roi_heads.box_predictor = FastRCNNPredictor(in_features, num_classes)
            return model
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from torchvision.models.detection import fasterrcnn_resnet50_fpn_v2

        from heads import with_new_head

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = with_new_head(fasterrcnn_resnet50_fpn_v2(weights="DEFAULT").to(device), 2)
    """))
    found = [(d.span.line, d.code) for d in check_path(str(tmp_path / "train.py")).diagnostics]
    assert found == [(8, "DEV102")]


def test_silent_head_replaced_before_the_move():
    assert _codes(_HEAD + """
    model = fasterrcnn_resnet50_fpn_v2(weights="DEFAULT")
    model.roi_heads.box_predictor = FastRCNNPredictor(1024, 2)
    model.to(device)
    """) == []


def test_silent_new_head_moved_where_it_is_stored():
    assert _codes(_HEAD + """
    model = fasterrcnn_resnet50_fpn_v2(weights="DEFAULT").to(device)
    model.roi_heads.box_predictor = FastRCNNPredictor(1024, 2).to(device)
    """) == []


def test_silent_parameter_free_modules_stored_after_the_move():
    assert _codes("""
    import torch
    import torchvision
    from torch import nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torchvision.models.resnet18(weights=None).to(device)
    model.fc = nn.Identity()
    model.layer4.act = nn.ReLU()
    model.layer4.drop = nn.Dropout(0.1)
    """) == []


def test_silent_submodule_of_a_dispatched_model():
    assert _codes("""
    from torch import nn
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", device_map="auto")
    model.bert.pooler = nn.Linear(768, 768)
    """) == []


def test_silent_model_never_moved():
    assert _codes("""
    import torchvision
    from torch import nn

    model = torchvision.models.resnet18(weights=None)
    model.layer4.fc2 = nn.Linear(512, 10)
    """) == []


# --- a class attribute naming a class --------------------------------------------------------------------

_DISTR = """
    import torch
    from torch import nn
    from torch.distributions import Normal

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    class NormalOutput:
        distr_cls = Normal

        def distribution(self, loc, scale):
            return self.distr_cls(loc, scale)


    net = nn.Linear(8, 2).to(device)
    out = net(torch.randn(4, 8, device=device))
"""


def test_distribution_class_named_by_a_class_attribute():
    assert _codes(_DISTR + """
    d = NormalOutput().distribution(out[:, 0], out[:, 1].exp())
    q = d.icdf(torch.tensor([0.5]))
    """) == [(20, "DEV201")]


def test_class_attribute_inherited_from_a_base():
    assert _codes(_DISTR + """
    class StudentOutput(NormalOutput):
        pass


    d = StudentOutput().distribution(out[:, 0], out[:, 1].exp())
    lp = d.log_prob(torch.zeros(4))
    """) == [(24, "DEV201")]


def test_layer_class_named_by_a_class_attribute_builds_a_cpu_module():
    assert _codes("""
    import torch
    from torch import nn


    class Head:
        layer_cls = nn.Linear

        def build(self):
            return self.layer_cls(4, 4)


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    layer = Head().build()
    y = layer(torch.randn(2, 4, device=device))
    """) == [(15, "DEV106")]


def test_class_attribute_split_into_files(tmp_path: Path):
    (tmp_path / "outputs.py").write_text(textwrap.dedent("""
        from torch.distributions import Normal


        class NormalOutput:
            distr_cls = Normal

            def distribution(self, loc, scale):
                return self.distr_cls(loc, scale)
    """))
    (tmp_path / "predict.py").write_text(textwrap.dedent("""
        import torch

        from outputs import NormalOutput

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        loc = torch.zeros(5, device=device)
        d = NormalOutput().distribution(loc, torch.ones(5, device=device))
        print(d.icdf(torch.tensor([0.5])))
    """))
    found = [(d.span.line, d.code) for d in check_path(str(tmp_path / "predict.py")).diagnostics]
    assert found == [(9, "DEV201")]


def test_silent_level_on_the_distribution_device():
    assert _codes(_DISTR + """
    d = NormalOutput().distribution(out[:, 0], out[:, 1].exp())
    q = d.icdf(torch.tensor([0.5], device=d.mean.device))
    """) == []


def test_silent_class_attribute_overridden_on_an_instance():
    assert _codes("""
    import torch
    from torch import nn


    class Head:
        layer_cls = nn.Linear

        def __init__(self, layer_cls=None):
            if layer_cls is not None:
                self.layer_cls = layer_cls

        def build(self):
            return self.layer_cls(4, 4)


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    layer = Head(lambda i, o: nn.Linear(i, o).to(device)).build()
    y = layer(torch.randn(2, 4, device=device))
    """) == []


def test_silent_class_attribute_naming_a_value():
    assert _codes("""
    import torch

    SCALE = torch.ones(3)


    class Cfg:
        scale = SCALE

        def apply(self, x):
            return x * self.scale


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(Cfg().apply(torch.ones(3)))
    """) == []


def test_head_replaced_on_the_model_inside_data_parallel():
    assert _codes("""
    import torch
    import torchvision
    from torch import nn

    model = torch.nn.DataParallel(torchvision.models.resnet18(weights=None).cuda())
    model.module.layer4.extra = nn.Conv2d(512, 512, 1)
    """) == [(7, "DEV101")]


def test_silent_part_moved_on_its_own_before_the_new_module():
    assert _codes("""
    import torchvision
    from torch import nn

    model = torchvision.models.resnet18(weights=None).to("cuda:0")
    model.layer4.to("cuda:1")
    model.layer4.extra = nn.Conv2d(512, 512, 1)
    """) == []


# --- a runner two folders deep ------------------------------------------------------------------------------

_LOSS = """
    import torch
    from torch.nn import Module


    class PairLoss(Module):
        def forward(self, views):
            loss = torch.tensor(0.0)
            for a, b in zip(views[:-1], views[1:]):
                loss += (a - b).pow(2).mean()
            return loss
"""

_EXAMPLE = """
    import torch
    from torch import nn

    from mylib.loss import PairLoss

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Linear(8, 8).to(device)
    views = [model(torch.randn(4, 8, device=device)) for _ in range(2)]
    print(PairLoss()(views))
"""


def _lib_with_example(root: Path, loss_src: str) -> None:
    (root / "mylib").mkdir()
    (root / "mylib" / "__init__.py").write_text("")
    (root / "mylib" / "loss.py").write_text(textwrap.dedent(loss_src))
    (root / "setup.py").write_text("from setuptools import setup\nsetup(name='mylib', packages=['mylib'])\n")
    (root / "examples" / "pytorch").mkdir(parents=True)
    (root / "examples" / "pytorch" / "pair.py").write_text(textwrap.dedent(_EXAMPLE))


def test_library_loss_reported_for_an_example_two_folders_deep(tmp_path: Path):
    _lib_with_example(tmp_path, _LOSS)
    found = [(d.span.line, d.code) for d in check_path(str(tmp_path / "mylib" / "loss.py")).diagnostics]
    assert found == [(8, "DEV201")]


def test_silent_library_loss_with_its_accumulator_on_the_views_device(tmp_path: Path):
    _lib_with_example(tmp_path, _LOSS.replace("torch.tensor(0.0)", "torch.tensor(0.0, device=views[0].device)"))
    assert check_path(str(tmp_path / "mylib" / "loss.py")).diagnostics == []
