"""Semantics found missing on unseen real cases, batch AA (tests/fixtures/engine/unseen/aa_*): modules
rebuilt, pruned or averaged after the move, and checkpoints.

- An in-place tensor method returns the tensor it ran on: `nn.Parameter(t).requires_grad_(False)` is still
  that Parameter, registered and moved with its module (pykan's KANLayer: no DEV105 on its grid).
- A torch container registers what it holds: modules first gathered in a plain list attribute and then
  wrapped (`self.layers = nn.ModuleList(self.layers)`) are submodules, not modules in a plain list.
- `self.to(device)` at the end of `__init__` with the cpu (`device='cpu'`, the default of a constructor that
  takes a device) is where the module is built, not a move: the model that holds it is still never moved.
- A `to()` override that records the device and calls `super().to(device)` moves the module (nn.Module.to).
- `layer.weight.data = t` re-points the parameter at `t`'s storage: a module whose parameters are all
  re-pointed at GPU tensors (a pruned copy of a layer, built on the cpu and filled from slices) is on the GPU.
- The result of an operation reported as a device mix is a tensor of unknown device: PyTorch raises there,
  so what is computed from it reports nothing more.
Together: a method that builds a new model without a device and returns it (pykan `prune()` ->
`prune_node()` -> `MultKAN(...)`) gives a cpu model that meets the cached GPU inputs (DEV106).
- Two devices compared (`device != next(model.parameters()).device`) are decided when they can never be
  equal on a GPU machine (the cpu and an accelerator): the branch they guard is known.
- An object made inside one branch of an undecided `if` and moved to the cpu there (an EMA copy built with
  `device='cpu'` under `if args.model_ema:`) is on the cpu after the `if`: on the other path it does not
  exist, so it is no "offload on one branch" that leaves its device unknown.
Together: timm's ModelEmaV3(model, device='cpu') keeps a cpu copy and `ema_v.lerp_(model_v)` writes the
cuda model's values into it (DEV202, timm#2127).
- A function that takes the device as a parameter with a device string for default and moves what it
  builds to it (`def init_alignment_model(name, device='cuda'): ...; model.to(device)`) runs on whatever
  device its caller passes, the cpu included: a `torch.load` in it without map_location fails there on a checkpoint saved
  from the GPU (DEV301, facexlib#37), as in a file that falls back to the cpu itself."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_LAYER = """
    import copy
    import torch
    import torch.nn as nn


    class Layer(nn.Module):
        def __init__(self, n, device='cpu'):
            super().__init__()
            self.grid = nn.Parameter(torch.zeros(n)).requires_grad_(False)
            self.scale = torch.nn.Parameter(torch.ones(n)).requires_grad_(True)
            self.to(device)

        def forward(self, x):
            return (x - self.grid[None, :]) * self.scale

        def subset(self, ids):
            small = Layer(len(ids))
            small.grid.data = self.grid[ids]
            small.scale.data = self.scale[ids]
            return small
"""


def test_parameter_with_requires_grad_is_still_a_parameter():
    assert _codes(_LAYER + """
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    layer = Layer(4).to(device)
    layer(torch.randn(2, 4, device=device))
    """) == []


def test_parameter_filled_in_place_is_still_a_parameter():
    assert _codes("""
        import torch
        import torch.nn as nn

        class Scale(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.w = nn.Parameter(torch.empty(n)).uniform_(-1, 1)

            def forward(self, x):
                return x * self.w

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        m = Scale(4).to(device)
        m(torch.randn(2, 4, device=device))
        """) == []


_NET = _LAYER + """

    class Net(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.width = width
            self.layers = []
            for i in range(len(width) - 1):
                self.layers.append(Layer(width[i]))
            self.layers = nn.ModuleList(self.layers)
            self.cache_data = None

        def forward(self, x):
            self.cache_data = x
            for l in range(len(self.width) - 1):
                x = self.layers[l](x)
            return x

        def shrink(self):
            model2 = Net(copy.deepcopy(self.width))
            model2.load_state_dict(self.state_dict())
            model2.cache_data = self.cache_data
            return model2

        def prune(self):
            self = self.shrink()
            self.forward(self.cache_data)
            return self
"""


def test_model_rebuilt_by_a_method_meets_the_cached_inputs():
    src = _NET + """
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net([4, 4, 4]).to(device)
    model(torch.randn(2, 4).to(device))
    model = model.prune()
    """
    found = _codes(src)
    assert found and {c for _, c in found} == {"DEV106"}


def test_model_rebuilt_and_moved_is_silent():
    src = _NET.replace("model2 = Net(copy.deepcopy(self.width))",
                       "model2 = Net(copy.deepcopy(self.width)).to(self.cache_data.device)") + """
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net([4, 4, 4]).to(device)
    model(torch.randn(2, 4).to(device))
    model = model.prune()
    """
    assert _codes(src) == []


def test_model_rebuilt_on_unknown_inputs_is_silent():
    src = _NET + """
    def run(model, batch):
        model(batch)
        return model.prune()
    """
    assert _codes(src) == []


def test_to_override_calling_super_moves_the_module():
    assert _codes("""
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self, device='cpu'):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.device = device
                self.to(device)

            def to(self, device):
                super(Net, self).to(device)
                self.device = device
                return self

            def forward(self, x):
                return self.fc(x)

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Net().to(device)
        model(torch.randn(2, 4).to(device))
        """) == []


def test_layer_subset_filled_from_gpu_slices_is_on_the_gpu():
    # the pruned copy is built on the cpu and every parameter re-pointed at the GPU layer's slices
    assert _codes(_LAYER + """

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer(4), Layer(4)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    model.layers[0] = model.layers[0].subset([0, 1, 2, 3])
    model(torch.randn(2, 4, device=device))
    """) == []


def test_layer_subset_filled_from_cpu_slices_is_reported():
    found = _codes(_LAYER + """

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer(4), Layer(4)])

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    model.layers[0] = Layer(4).subset([0, 1, 2, 3])
    """)
    assert [c for _, c in found] == ["DEV101"]


def test_no_follow_on_report_after_a_mix_with_an_unmoved_models_parameter():
    # PyTorch raises at the first mix inside the pruned copy's layer; the statistics computed from that
    # layer's output (with the same unmoved model's other parameters) do not meet the input again
    found = _codes("""
        import torch
        import torch.nn as nn

        class Layer(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.grid = nn.Parameter(torch.linspace(-1, 1, n))
                self.coef = nn.Parameter(torch.randn(n, n))

            def forward(self, x):
                basis = torch.exp(-(x - self.grid) ** 2)
                y = torch.einsum("ij,jk->ik", basis, self.coef)
                return y, x

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = Layer(4)
                self.scores = None

            def forward(self, x):
                out, pre = self.layer(x)
                self.scores = torch.std(out, dim=0) / (torch.std(pre, dim=0) + 0.1)
                return out

            def rebuilt(self, x):
                other = Net()
                return other.forward(x)

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Net().to(device)
        model.rebuilt(torch.randn(2, 4).to(device))
        """)
    assert found and {c for _, c in found} == {"DEV106"}


def test_pruned_kan_split_into_files(tmp_path):
    pkg = tmp_path / "kan"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .net import Net\n")
    (pkg / "net.py").write_text(textwrap.dedent(_NET))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from kan import Net

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Net([4, 4, 4]).to(device)
        model(torch.randn(2, 4).to(device))
        model = model.prune()
        """))
    found = [(d.span.line, d.code) for d in check_path(str(tmp_path / "train.py")).diagnostics]
    assert found == [(8, "DEV106")]


_EMA = """
    from copy import deepcopy
    import torch
    import torch.nn as nn


    class ModelEma(nn.Module):
        def __init__(self, model, decay=0.999, device=None):
            super().__init__()
            self.module = deepcopy(model)
            self.decay = decay
            self.device = device
            self.foreach = True
            if self.device is not None and device != next(model.parameters()).device:
                self.foreach = False
                self.module.to(device=device)

        @torch.no_grad()
        def update(self, model):
            if self.foreach:
                torch._foreach_lerp_(list(self.module.parameters()), list(model.parameters()), weight=1. - self.decay)
            else:
                for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                    if ema_v.is_floating_point():
                        ema_v.lerp_(MODEL_V, weight=1. - self.decay)
                    else:
                        ema_v.copy_(model_v)
"""


def _ema(tail: str, fixed: bool = False) -> str:
    return _EMA.replace("MODEL_V", "model_v.to(device=self.device)" if fixed else "model_v") + tail


def test_ema_copy_kept_on_the_cpu_takes_the_models_values():
    found = _codes(_ema("""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 4).to(device)
    ema = ModelEma(model, device="cpu")
    ema.update(model)
    """))
    assert [c for _, c in found] == ["DEV202"] and found[0][0] == 25  # the lerp_


def test_ema_made_under_a_flag_and_updated_in_a_trainer():
    found = _codes(_ema("""
    import argparse

    class Trainer:
        def __init__(self, model, model_ema, device):
            self.model, self.model_ema, self.device = model, model_ema, device

        def step(self, x):
            loss = self.model(x.to(self.device)).sum()
            loss.backward()
            if self.model_ema is not None:
                self.model_ema.update(self.model)

    parser = argparse.ArgumentParser()
    parser.add_argument("--model-ema", action="store_true")
    parser.add_argument("--model-ema-force-cpu", action="store_true")
    args = parser.parse_args()
    device = torch.device("cuda")
    model = nn.Linear(4, 4)
    model.to(device=device)
    model_ema = None
    if args.model_ema:
        model_ema = ModelEma(model, device="cpu" if args.model_ema_force_cpu else None)
    Trainer(model, model_ema, device).step(torch.randn(2, 4))
    """))
    assert [c for _, c in found] == ["DEV202"]


def test_ema_values_moved_to_the_ema_device_is_silent():
    assert _codes(_ema("""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 4).to(device)
    ema = ModelEma(model, device="cpu")
    ema.update(model)
    """, fixed=True)) == []


def test_ema_on_the_models_device_is_silent():
    assert _codes(_ema("""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 4).to(device)
    ema = ModelEma(model)
    ema.update(model)
    """)) == []


def test_ema_of_a_model_of_unknown_device_is_silent():
    assert _codes(_ema("""
    def attach(model):
        ema = ModelEma(model, device="cpu")
        ema.update(model)
        return ema
    """)) == []


def test_device_compare_decides_only_cpu_against_an_accelerator():
    # two cuda devices may be the same one: the branch stays undecided, nothing is said
    assert _codes(_ema("""
    device = torch.device("cuda")
    model = nn.Linear(4, 4).to(device)
    ema = ModelEma(model, device="cuda:0")
    ema.update(model)
    """)) == []


def test_module_offloaded_on_one_branch_is_still_unknown():
    # a model that existed before the `if` and is moved to the cpu on one branch only: either device after it
    assert _codes("""
        import sys
        import torch
        import torch.nn as nn

        device = torch.device("cuda")
        enc = nn.Linear(4, 4).to(device)
        if len(sys.argv) > 1:
            enc.cpu()
        enc(torch.randn(2, 4, device=device))
        """) == []


def _dev301(src: str) -> list[tuple[int, str]]:
    return [x for x in _codes(src) if x[1] == "DEV301"]


def test_loader_with_a_device_parameter_loads_without_map_location():
    assert _dev301("""
        import torch
        import torch.nn as nn

        def init_alignment_model(model_name, half=False, device='cuda', model_rootpath=None):
            model = nn.Linear(4, 4)
            model.load_state_dict(torch.load(model_rootpath)['state_dict'], strict=True)
            model.eval()
            model = model.to(device)
            return model
        """) == [(7, "DEV301")]


def test_loader_method_with_a_target_device_renamed():
    assert _dev301("""
        import torch

        class Restorer:
            def load(self, net, path, target_device="cuda:0"):
                state = torch.load(path)
                net.load_state_dict(state)
                return net.to(device=target_device)
        """) == [(6, "DEV301")]


def test_loader_renamed_with_the_load_in_a_helper():
    # any name, its default a device string; the load one helper deeper, the model built with device=
    assert _dev301("""
        import torch
        import torch.nn as nn

        def _restore(net, path):
            net.load_state_dict(torch.load(path))
            return net

        def build(weights, dev="cuda:0"):
            net = nn.Linear(4, 4, device=dev)
            return _restore(net, weights)
        """) == [(6, "DEV301")]


def test_loader_with_a_device_parameter_and_map_location_is_silent():
    assert _dev301("""
        import torch
        import torch.nn as nn

        def init_alignment_model(model_name, device='cuda', model_path=None):
            model = nn.Linear(4, 4)
            model.load_state_dict(torch.load(model_path, map_location=device)['state_dict'])
            return model.to(device)
        """) == []


def test_loader_without_a_device_parameter_is_silent():
    # a fixed-GPU script (no device chosen anywhere): its checkpoint comes from that GPU
    assert _dev301("""
        import torch
        import torch.nn as nn

        def load(path):
            model = nn.Linear(4, 4)
            model.load_state_dict(torch.load(path))
            return model.cuda()
        """) == []


def test_device_parameter_without_a_default_is_silent():
    # the caller's own device (an accelerator's): the checkpoint was most likely written on it
    assert _dev301("""
        import torch

        def load_and_set_ckpt(pipe, ckpt_path, device):
            state = torch.load(ckpt_path)
            pipe.load_state_dict(state)
            return pipe.to(device)
        """) == []


def test_device_parameter_not_used_to_move_is_silent():
    # the device only labels a log line: nothing says the function runs on the device it is given
    assert _dev301("""
        import torch

        def load(path, device="cuda"):
            print("loading on", device)
            return torch.load(path)
        """) == []
