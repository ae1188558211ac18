"""Forward hooks (analysis/interp/forward_hooks.py): `nn.Module.__call__` runs `register_forward_pre_hook` hooks as
`hook(module, args)` before `forward` (a returned value replaces the arguments) and `register_forward_hook` hooks as
`hook(module, args, output)` after it (a returned value replaces the output). What a hook keeps (Grad-CAM's
`self.activations = output`, a feature dict) is then on the hooked layer's output device, so a tensor made without
`device=` that meets it is found. A hook on a part of a library model (`model.layer4` of a torchvision ResNet) runs
when the model runs, on the model's device. `handle.remove()` takes the hook off."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devflow.api import check_path, check_source


def _found(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics)


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


_CAM = """
    import torch
    import torch.nn as nn
    import torchvision


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
            self.head = nn.Linear(8, 10)

        def forward(self, x):
            return self.head(self.features(x).mean((2, 3)))


    class GradCAM:
        def __init__(self, model, layer):
            self.model = model
            self.activations = None
            self.handle = layer.register_forward_hook(self.save_activation)

        def save_activation(self, module, inputs, output):
            self.activations = KEPT

        def __call__(self, x):
            self.model(x)
            weights = WEIGHTS
            return (weights[:, None, None] * self.activations[0]).sum(0)


    def main():
        device = torch.device("cuda")
        model = MODEL.to(device)
        cam = GradCAM(model, model.LAYER)
        print(cam(torch.randn(1, 3, 32, 32, device=device)))


    if __name__ == "__main__":
        main()
"""


def _cam(kept="output.detach()", weights="torch.ones(self.activations.shape[1])", model="Net()", layer="features"):
    return _CAM.replace("KEPT", kept).replace("WEIGHTS", weights).replace("MODEL", model).replace("LAYER", layer)


@pytest.mark.parametrize("model, layer", [("Net()", "features"), ("torchvision.models.resnet18()", "layer4")])
def test_activations_kept_by_a_hook_meet_a_cpu_tensor(model, layer):
    src = _cam(model=model, layer=layer)
    assert _found(src) == [(_line(src, "weights = torch.ones"), "DEV201")]


@pytest.mark.parametrize("change", [dict(kept="output.detach().cpu()"),
                                    dict(weights="torch.ones(self.activations.shape[1], device=self.activations.device)"),
                                    dict(weights="self.activations.mean((2, 3))[0]")])
def test_activations_on_the_weights_device_are_silent(change):
    assert _found(_cam(**change)) == []


def test_a_removed_hook_no_longer_runs():
    src = _cam().replace("        self.model(x)\n", "        self.handle.remove()\n        self.model(x)\n") \
        .replace("self.activations = None", "self.activations = torch.zeros(1, 8, 30, 30)")
    assert _found(src) == []  # the activations stay the cpu zeros, as the cpu weights


def test_unknown_model_is_silent():
    src = _cam().replace("def main():", "def main(model=None):").replace("        model = Net().to(device)\n", "")
    assert _found(src) == []


_FEATURES = """
    import functools

    import torch
    from torch import nn


    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, padding=1)
            self.block = nn.Conv2d(16, 16, 3, padding=1)

        def forward(self, x):
            return self.block(self.stem(x))


    class FeatureTap:
        def __init__(self, net, names):
            self.features = {}
            for name in names:
                getattr(net, name).register_forward_hook(functools.partial(self._keep, name))

        def _keep(self, name, module, inputs, output):
            self.features[name] = output


    def style_loss(net, tap, image):
        net(image)
        target = torch.zeros_like(tap.features["block"].cpu())
        return ((tap.features["block"] - target) ** 2).mean()


    if __name__ == "__main__":
        net = Backbone().cuda()
        tap = FeatureTap(net, ["stem", "block"])
        print(style_loss(net, tap, torch.rand(1, 3, 64, 64).cuda()))
"""


def test_a_partial_hook_filling_a_feature_dict_by_name():
    assert _found(_FEATURES) in ([], [(_line(_FEATURES, "target = torch.zeros_like"), "DEV202")])


def test_a_feature_dict_from_hooks_on_named_children_split_into_files(tmp_path: Path):
    (tmp_path / "models.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn


        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 4, 3)
                self.pool = nn.AdaptiveAvgPool2d(1)

            def forward(self, x):
                return self.pool(self.conv(x)).flatten(1)
        """))
    (tmp_path / "probe.py").write_text(textwrap.dedent("""\
        import torch


        class Probe:
            def __init__(self, layer):
                self.seen = []
                layer.register_forward_hook(lambda module, inputs, output: self.seen.append(output))

            def stacked(self):
                return torch.cat(self.seen + [torch.zeros(1, 4, 1, 1)])
        """))
    run = textwrap.dedent("""\
        import torch

        from models import Encoder
        from probe import Probe


        def evaluate(device):
            model = Encoder().to(device)
            probe = Probe(model.pool)
            model(torch.randn(2, 3, 16, 16, device=device))
            return probe.stacked()


        if __name__ == "__main__":
            evaluate(torch.device("cuda"))
        """)
    (tmp_path / "run.py").write_text(run)
    found = sorted((Path(d.path).name if getattr(d, "path", None) else "", d.span.line, d.code)
                   for d in check_path(tmp_path / "run.py").diagnostics)
    assert [c for _, _, c in found] == ["DEV201"]


_PRE = """
    import torch
    from torch import nn


    class Scaler(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)


    def to_half_range(module, args):
        return (ARGS,)


    if __name__ == "__main__":
        model = Scaler().cuda()
        model.register_forward_pre_hook(to_half_range)
        print(model(torch.randn(3, 4).cuda()))
"""


def test_a_pre_hook_replacing_the_inputs():
    src = _PRE.replace("ARGS", "args[0].cpu() * 0.5")
    assert [c for _, c in _found(src)] == ["DEV202"]
    assert _found(_PRE.replace("ARGS", "args[0] * 0.5")) == []
