"""A model picked at run time among several (a flag, a registry keyed by a command-line value): for where
its parameters are, any of them is the model when all are built on one device (issue 10, stop 15)."""

from __future__ import annotations

from project_fixtures import codes, write_project

_MODELS = """
    import torch.nn as nn


    class ResNetish(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(4, n)

        def forward(self, x):
            return self.fc(x)


    class VGGish(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, n))

        def forward(self, x):
            return self.body(x)
    """

_ARGS = """
    import argparse
    import torch
    {imports}

    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="resnet")
    args = p.parse_args()
    device = torch.device("cuda")
    """


def _train(imports: str, body: str) -> str:
    return _ARGS.format(imports=imports) + body


def test_model_chosen_by_a_flag_among_two_classes_never_moved(tmp_path):
    write_project(tmp_path, {"models.py": _MODELS, "train.py": _train("from models import ResNetish, VGGish", """
    if args.arch == "resnet":
        model = ResNetish(10)
    else:
        model = VGGish(10)
    x = torch.rand(2, 4).to(device)
    print(model(x))
    """)})
    assert codes(tmp_path, "train.py") == [(15, "DEV106")]


def test_model_from_a_registry_dict_keyed_by_the_command_line(tmp_path):
    write_project(tmp_path, {"models.py": _MODELS + """
    MODELS = {"resnet": ResNetish, "vgg": VGGish}
    """, "train.py": _train("from models import MODELS", """
    model = MODELS[args.arch](10)
    x = torch.rand(2, 4).to(device)
    print(model(x))
    """)})
    assert codes(tmp_path, "train.py") == [(12, "DEV106")]


def test_registry_of_lambdas_in_an_ordered_dict_one_helper_deeper_in_a_trainer(tmp_path):
    write_project(tmp_path, {"models.py": _MODELS + """
    from collections import OrderedDict

    KNOWN = OrderedDict([("resnet", lambda n: ResNetish(n)), ("vgg", lambda n: VGGish(n))])


    def build_model(name, n):
        return KNOWN[name](n)
    """, "trainer.py": """
    import torch
    from models import build_model


    class Trainer:
        def __init__(self, arch, device):
            self.device = device
            self.model = build_model(arch, 10)

        def step(self, x):
            x = x.to(self.device)
            return self.model(x)
    """, "train.py": _train("from trainer import Trainer", """
    Trainer(args.arch, device).step(torch.rand(2, 4))
    """)})
    assert [c for _, c in codes(tmp_path, "trainer.py")] == ["DEV106"]


def test_choice_moved_afterwards_is_silent(tmp_path):
    write_project(tmp_path, {"models.py": _MODELS + """
    MODELS = {"resnet": ResNetish, "vgg": VGGish}
    """, "train.py": _train("from models import MODELS", """
    model = MODELS[args.arch](10).to(device)
    x = torch.rand(2, 4).to(device)
    print(model(x))
    """)})
    assert codes(tmp_path, "train.py") == []


def test_choices_on_different_devices_stay_unknown(tmp_path):
    # one entry builds its model on the GPU: which one runs is not known, nor where the model is
    write_project(tmp_path, {"models.py": _MODELS + """
    MODELS = {"resnet": ResNetish, "vgg": lambda n: VGGish(n).cuda()}
    """, "train.py": _train("from models import MODELS", """
    model = MODELS[args.arch](10)
    x = torch.rand(2, 4).to(device)
    print(model(x))
    """)})
    assert codes(tmp_path, "train.py") == []


def test_registry_filled_by_a_decorator_or_an_unknown_key_stays_unknown(tmp_path):
    write_project(tmp_path, {"models.py": _MODELS + """
    import sys

    MODELS = {}


    def register(name):
        def deco(cls):
            MODELS[name] = cls
            return cls
        return deco


    @register("mlp")
    class MLP(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(4, n)

        def forward(self, x):
            return self.fc(x)


    EXTRA = {"resnet": ResNetish}
    EXTRA[sys.argv[1]] = lambda n: VGGish(n).cuda()
    """, "train.py": _train("from models import MODELS, EXTRA", """
    model = MODELS[args.arch](10)
    other = EXTRA[args.arch](10)
    x = torch.rand(2, 4).to(device)
    print(model(x), other(x))
    """)})
    assert codes(tmp_path, "train.py") == []


def test_a_non_callable_entry_leaves_the_pick_unknown(tmp_path):
    write_project(tmp_path, {"models.py": _MODELS + """
    MODELS = {"resnet": ResNetish, "vgg": VGGish, "default": "resnet"}
    """, "train.py": _train("from models import MODELS", """
    model = MODELS[args.arch](10)
    x = torch.rand(2, 4).to(device)
    print(model(x))
    """)})
    assert codes(tmp_path, "train.py") == []
