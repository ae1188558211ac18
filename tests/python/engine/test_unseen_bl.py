"""Semantics found missing on unseen real cases, batch BL (tests/fixtures/engine/unseen/bl_*): models written
by hand and their data.

- `nn.ModuleDict` entries: `d[key] = module` is `ModuleDict.__setitem__`, i.e. `add_module(key, module)`, so
  the module is a registered entry that `d[key]` reads back; `nn.ModuleDict({...})` holds the dict's modules.
  Read with a key not known there (`for k in self.obs_shapes: x = self.randomizers[k].forward_in(x)`), the
  entry is any of them: when all are alike (one class, one device) one stands for all and its methods are
  followed; entries that differ leave the read unknown (silent). Iterating `d.values()` / `d.items()` gives
  that entry too. robomimic's ObservationEncoder keeps its
  observation randomizers this way, and GaussianNoiseRandomizer adds cpu noise to the moved observations.
- `isinstance(m, C)` of a module built from a project class whose bases are project classes and `nn.Module`
  itself: its classes are exactly those, so `isinstance(m, nn.Identity)` (another torch class, or a project
  class not among its bases) is False and `isinstance(m, nn.Module)` True; the branch taken is known. A base
  the index does not resolve (a library class) leaves it undecided. The spectral optimal transport loss
  registers its bin positions as a buffer `if not isinstance(self.transform_module, nn.Identity)`, then moves
  its inputs back to the stale `self.device` ("cpu") after `.to("cuda")` moved the buffer.
- A bare `.cuda()` written in a module's own method that runs while the module is still on the cpu (never
  moved), outside `__init__`, pins the module's state to the current GPU whatever device it runs on; when
  that state meets a cpu value that is not what the module's own parameters computed (its cpu input), the
  written-in move is what is out of place: reported where it is written (ConvLSTM's `init_hidden`), not at
  the cpu input. A model moved to the GPU, state pinned in `__init__` before a move, or the module's own
  output meeting it (the model left on the cpu: DEV106) keep their diagnoses."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- ModuleDict entries ------------------------------------------------------------------------------------

_ENCODER = """
    from collections import OrderedDict

    import torch
    import torch.nn as nn


    class Noise(nn.Module):
        def __init__(self, std=0.3):
            super().__init__()
            self.std = std

        def forward_in(self, inputs):
            if self.training:
                return torch.rand(size=inputs.shape) * self.std + inputs
            return inputs


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.shapes = OrderedDict()
            self.randomizers = nn.ModuleDict()

        def register(self, name, shape, randomizer=None):
            self.shapes[name] = shape
            self.randomizers[name] = randomizer

        def forward(self, obs):
            feats = []
            for k in self.shapes:
                x = obs[k]
                if self.randomizers[k] is not None:
                    x = self.randomizers[k].forward_in(x)
                feats.append(x)
            return torch.cat(feats, dim=-1)


    enc = Encoder()
    enc.register("pos", (3,), randomizer=Noise(0.05))
    enc.register("grip", (2,), randomizer=Noise(0.01))
    enc = enc.to("cuda")
    batch = {"pos": torch.randn(4, 3), "grip": torch.randn(4, 2)}
    batch = {k: v.to("cuda") for k, v in batch.items()}
    out = enc(batch)
"""


def test_module_dict_entry_read_with_a_loop_key():
    assert _codes(_ENCODER) == [(15, "DEV201")]


def test_module_dict_entry_fixed_noise_on_the_inputs_device_is_clean():
    src = _ENCODER.replace("torch.rand(size=inputs.shape) * self.std", "torch.rand(size=inputs.shape, device=inputs.device) * self.std")
    assert _codes(src) == []


def test_module_dict_entries_that_differ_read_with_an_unknown_key_stay_silent():
    src = """
        import sys

        import torch
        import torch.nn as nn


        class Noise(nn.Module):
            def apply(self, x):
                return x + torch.rand(x.shape)


        class Clip(nn.Module):
            def apply(self, x):
                return x.clamp(-1, 1)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.augs = nn.ModuleDict({"noise": Noise(), "clip": Clip()})

            def forward(self, x, name):
                return self.augs[name].apply(x)


        net = Net().cuda()
        net(torch.randn(2, 3).cuda(), sys.argv[1])
    """
    assert _codes(src) == []


def test_module_dict_entry_renamed_and_read_with_a_known_key():
    src = """
        import torch
        import torch.nn as nn


        class Jitter(nn.Module):
            def perturb(self, x):
                return x + torch.randn(x.shape)


        class Policy(nn.Module):
            def __init__(self):
                super().__init__()
                self.aug = nn.ModuleDict()
                self.aug["state"] = Jitter()
                self.head = nn.Linear(8, 2)

            def forward(self, state):
                return self.head(self.aug["state"].perturb(state))


        policy = Policy().cuda()
        policy(torch.randn(5, 8).cuda())
    """
    assert _codes(src) == [(8, "DEV201")]


def test_module_dict_literal_entries_inside_a_trainer_class():
    src = """
        import torch
        import torch.nn as nn


        class Jitter(nn.Module):
            def perturb(self, x):
                return x + torch.randn(x.shape)


        class Net(nn.Module):
            def __init__(self, keys):
                super().__init__()
                self.keys = keys
                self.augs = nn.ModuleDict({"rgb": Jitter(), "depth": Jitter()})

            def forward(self, obs):
                return torch.cat([self.augs[k].perturb(obs[k]) for k in self.keys], dim=1)


        class Trainer:
            def __init__(self, device):
                self.device = device
                self.net = Net(["rgb", "depth"]).to(device)

            def step(self, obs):
                obs = {k: v.to(self.device) for k, v in obs.items()}
                return self.net(obs)


        Trainer(torch.device("cuda")).step({"rgb": torch.rand(2, 3), "depth": torch.rand(2, 1)})
    """
    assert _codes(src) == [(8, "DEV201")]


_ITERATED = """
    import torch
    import torch.nn as nn


    class Jitter(nn.Module):
        def perturb(self, x):
            return x + torch.randn(x.shape)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.augs = nn.ModuleDict()
            self.augs["rgb"] = Jitter()
            self.augs["depth"] = Jitter()

        def forward(self, x):
            for name, aug in self.augs.items():
                x = aug.perturb(x)
            return x


    Net().cuda()(torch.rand(2, 3).cuda())
"""


def test_module_dict_items_and_values_iterate_its_entries():
    assert _codes(_ITERATED) == [(8, "DEV201")]
    assert _codes(_ITERATED.replace("for name, aug in self.augs.items():", "for aug in self.augs.values():")) == [(8, "DEV201")]


def test_module_dict_iterated_fixed_noise_is_clean():
    assert _codes(_ITERATED.replace("torch.randn(x.shape)", "torch.randn_like(x)")) == []


def test_module_dict_unknown_device_stays_silent():
    src = _ENCODER.replace('enc = enc.to("cuda")', "enc = enc.to(args_device)").replace(
        'batch = {k: v.to("cuda") for k, v in batch.items()}', "batch = {k: v.to(args_device) for k, v in batch.items()}")
    src = src.replace("    enc = Encoder()", "    import sys\n    args_device = sys.argv[1]\n    enc = Encoder()")
    assert _codes(src) == []


def test_module_dict_entry_split_into_files(tmp_path: Path):
    (tmp_path / "augment.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn


        class GaussianNoise(nn.Module):
            def __init__(self, std):
                super().__init__()
                self.std = std

            def apply(self, inputs):
                noise = torch.rand(size=inputs.shape) * self.std
                return inputs + noise
    """))
    (tmp_path / "encoder.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn


        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.names = []
                self.randomizers = nn.ModuleDict()

            def add(self, name, randomizer):
                self.names.append(name)
                self.randomizers[name] = randomizer

            def forward(self, obs):
                return torch.cat([self.randomizers[n].apply(obs[n]) for n in self.names], dim=-1)
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch

        from augment import GaussianNoise
        from encoder import Encoder

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        enc = Encoder()
        enc.add("pos", GaussianNoise(0.1))
        enc.add("vel", GaussianNoise(0.2))
        enc.to(device)
        obs = {"pos": torch.randn(4, 3).to(device), "vel": torch.randn(4, 3).to(device)}
        print(enc(obs).shape)
    """))
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "augment.py")).diagnostics] == [(12, "DEV201")]


# --- isinstance of a project module -------------------------------------------------------------------------

_LOSS = """
    import torch
    import torch.nn as nn


    class Spectrum(nn.Module):
        def positions(self):
            return torch.linspace(0, 1, 8)

        def forward(self, x):
            return x.abs()


    class SpectralLoss(nn.Module):
        def __init__(self, transform="spectrum", device="cpu"):
            super().__init__()
            self.transform = Spectrum() if transform == "spectrum" else nn.Identity()
            self.device = device
            if not isinstance(self.transform, nn.Identity):
                self.register_buffer("pos", self.transform.positions())
            else:
                self.pos = None
            self.to(device)

        def forward(self, x):
            x = x.to(self.device)
            spec = self.transform(x)
            return (spec * self.pos).sum()


    loss_fn = SpectralLoss().to("cuda")
    loss_fn(torch.randn(4, 8, device="cuda"))
"""


def test_isinstance_of_a_project_module_decides_the_buffer_branch():
    assert _codes(_LOSS) == [(27, "DEV202")]


def test_isinstance_fixed_device_taken_from_the_input_is_clean():
    assert _codes(_LOSS.replace("x = x.to(self.device)", "x = x.to(self.pos.device)")) == []


def test_isinstance_of_a_project_class_through_an_intermediate_base():
    src = _LOSS.replace("    class Spectrum(nn.Module):", "    class Base(nn.Module):\n        pass\n\n\n    class Spectrum(Base):").replace(
        "if not isinstance(self.transform, nn.Identity):", "if isinstance(self.transform, (Base, nn.Conv1d)):")
    assert _codes(src) == [(31, "DEV202")]


def test_isinstance_with_a_library_base_stays_undecided_and_silent():
    src = _LOSS.replace("    class Spectrum(nn.Module):", "    from somelib import Transform\n\n\n    class Spectrum(Transform):")
    assert _codes(src) == []


def test_isinstance_unknown_device_stays_silent():
    src = _LOSS.replace('loss_fn = SpectralLoss().to("cuda")', "import sys\n    loss_fn = SpectralLoss().to(sys.argv[1])").replace(
        'loss_fn(torch.randn(4, 8, device="cuda"))', "loss_fn(torch.randn(4, 8, device=sys.argv[1]))")
    assert _codes(src) == []


def test_isinstance_split_into_files_inside_a_trainer(tmp_path: Path):
    (tmp_path / "losses.py").write_text(textwrap.dedent(_LOSS.split("    loss_fn =")[0]))
    (tmp_path / "trainer.py").write_text(textwrap.dedent("""
        import torch

        from losses import SpectralLoss


        class Trainer:
            def __init__(self, device):
                self.device = device
                self.criterion = SpectralLoss().to(device)

            def step(self, batch):
                return self.criterion(batch.to(self.device))


        Trainer(torch.device("cuda")).step(torch.randn(4, 8))
    """))
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "losses.py")).diagnostics] == [(27, "DEV202")]


# --- state pinned to the GPU by a module still on the cpu -------------------------------------------------

_CELL = """
    import torch
    import torch.nn as nn


    class Cell(nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.hidden = hidden
            self.conv = nn.Conv2d(3 + hidden, 4 * hidden, 3, padding=1)

        def init_state(self, batch, size):
            return torch.zeros(batch, self.hidden, *size).cuda()

        def forward(self, x, h=None):
            if h is None:
                h = self.init_state(x.size(0), x.shape[-2:])
            combined = torch.cat([x, h], dim=1)
            return self.conv(combined)


    cell = Cell(8)
    out = cell(torch.rand(2, 3, 16, 16))
"""


def test_pinned_state_is_blamed_where_the_cuda_is_written():
    assert _codes(_CELL) == [(13, "DEV202")]


def test_pinned_state_fixed_on_the_module_device_is_clean():
    assert _codes(_CELL.replace("torch.zeros(batch, self.hidden, *size).cuda()",
                                "torch.zeros(batch, self.hidden, *size, device=self.conv.weight.device)")) == []


def test_pinned_state_with_the_model_and_input_on_the_gpu_is_clean():
    assert _codes(_CELL.replace("cell = Cell(8)", "cell = Cell(8).cuda()").replace(
        "torch.rand(2, 3, 16, 16)", "torch.rand(2, 3, 16, 16).cuda()")) == []


def test_state_pinned_in_init_before_the_move_is_clean():
    src = _CELL.replace("            self.conv = nn.Conv2d(3 + hidden, 4 * hidden, 3, padding=1)",
                        "            self.conv = nn.Conv2d(3 + hidden, 4 * hidden, 3, padding=1)\n            self.h0 = self.init_state(2, (16, 16))").replace(
        "h = self.init_state(x.size(0), x.shape[-2:])", "h = self.h0").replace(
        "cell = Cell(8)", "cell = Cell(8).cuda()").replace("torch.rand(2, 3, 16, 16)", "torch.rand(2, 3, 16, 16).cuda()")
    assert _codes(src) == []


def test_pinned_state_one_helper_deeper_in_a_stacked_model_split_into_files(tmp_path: Path):
    (tmp_path / "cells.py").write_text(textwrap.dedent(_CELL.split("    cell = Cell(8)")[0]))
    (tmp_path / "stack.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        from cells import Cell


        class Stack(nn.Module):
            def __init__(self, layers):
                super().__init__()
                self.cells = nn.ModuleList([Cell(8) for _ in range(layers)])

            def _init_states(self, x):
                return [c.init_state(x.size(0), x.shape[-2:]) for c in self.cells]

            def forward(self, x):
                states = self._init_states(x)
                return self.cells[0](x, states[0])


        model = Stack(2)
        frames = torch.rand(4, 3, 32, 32)
        print(model(frames).shape)
    """))
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "cells.py")).diagnostics] == [(13, "DEV202")]


def test_pinned_state_meeting_the_module_own_output_stays_model_not_moved():
    src = """
        import torch
        import torch.nn as nn


        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                y = self.fc(x)
                bias = torch.ones(4).cuda()
                return y + bias


        Head()(torch.rand(2, 4))
    """
    assert [c for _, c in _codes(src)] == ["DEV106"]


def test_pinned_state_unknown_device_input_stays_silent():
    src = _CELL.replace("out = cell(torch.rand(2, 3, 16, 16))", "import sys\n    out = cell(torch.rand(2, 3, 16, 16).to(sys.argv[1]))")
    assert _codes(src) == []
