"""Semantics found missing on unseen real cases, batch AQ (tests/fixtures/engine/unseen/aq_*): code that
ran on the cpu and broke on the GPU.

- Advanced indexing accepts index tensors on the cpu for a tensor on any device (ATen: "indices should be
  either on cpu or on the same device as the indexed tensor"), when reading (`h[idx]`) and when writing
  (`h[idx] = v`). So a module input that forward() only uses to index other tensors, directly or through a
  basic slice of it bound to a local (`i_obs = obs_idx[start:end]`), is not a cpu input meeting the
  module's device at the call. NJODE keeps its observation indices on the cpu on purpose; the call
  `model(times, time_ptr, X, obs_idx, ...)` is correct and the real mix (a cpu `tau` built from the batch
  size meeting the cuda state in `torch.cat`) is what is reported (NJODE#14)."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_ODE = """
    import torch
    import torch.nn as nn


    class ODE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(2, 3)
            self.f = nn.Linear(4, 3)

        def step(self, h, tau):
            return h + self.f(torch.cat([h, tau], dim=1))

        def forward(self, X, obs_idx, start_X):
            h = self.enc(start_X)
            batch_size = start_X.size()[0]
            tau = {TAU}
            for i in range(3):
                i_obs = obs_idx[i:i + 2]
                h = self.step(h, tau)
                temp = h.clone()
                temp[i_obs] = self.enc(X[i_obs])
                h = temp
            return h


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = ODE().to(device)
    X = torch.randn(8, 2).to(device)
    start_X = torch.randn(4, 2).to(device)
    obs_idx = torch.tensor([0, 1, 2, 3], dtype=torch.long)
    out = model(X, obs_idx, start_X)
"""


def test_cpu_index_input_with_real_mix_inside():
    src = _ODE.replace("{TAU}", "torch.tensor([[0.0]]).repeat(batch_size, 1)")
    # the cpu tau is reported (cause and call), the cpu index input is not
    assert _codes(src) == [(18, "DEV201")]


def test_cpu_index_input_alone_is_silent():
    src = _ODE.replace("{TAU}", "torch.tensor([[0.0]], device=start_X.device).repeat(batch_size, 1)")
    assert _codes(src) == []


def test_index_used_directly_renamed_and_written():
    src = """
        import torch
        import torch.nn as nn


        class Scatter(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)

            def forward(self, feats, rows):
                out = self.lin(feats).clone()
                out[rows, :] = 0.0
                return out[rows]


        dev = "cuda:0"
        net = Scatter().to(dev)
        picked = net(torch.randn(5, 2, device=dev), torch.arange(3))
    """
    assert _codes(src) == []


def test_input_combined_after_slicing_is_still_reported():
    # the slice of the cpu input is added to a cuda tensor: a real mix
    src = """
        import torch
        import torch.nn as nn


        class Add(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)

            def forward(self, feats, bias):
                b = bias[0:5]
                return self.lin(feats) + b


        net = Add().to("cuda:0")
        out = net(torch.randn(5, 2, device="cuda:0"), torch.zeros(5, 2))
    """
    assert [c for _, c in _codes(src)] and all(c.startswith("DEV2") for _, c in _codes(src))


def test_index_input_inside_a_trainer_split_into_files(tmp_path):
    (tmp_path / "models.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn


        class Readout(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 1)

            def forward(self, h, which):
                sel = which[0:2]
                return self.lin(h[sel])
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from models import Readout


        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda:0")
                self.model = Readout().to(self.device)

            def step(self, batch):
                h = batch["h"].to(self.device)
                which = batch["which"]
                return self.model(h, which)


        t = Trainer()
        t.step({"h": torch.randn(4, 3), "which": torch.tensor([0, 2])})
    """))
    assert check_path(str(tmp_path / "train.py")).diagnostics == []
