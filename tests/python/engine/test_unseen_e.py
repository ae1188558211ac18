"""Semantics found missing on unseen real cases, batch E (tests/fixtures/engine/unseen/e_*).

`t[idx] = v` with a tensor (or list) index is `t.index_put_(idx, v)`: the values must be on `t`'s device
(a 0-dim cpu tensor excepted), and a cpu `t` takes no index on a device (e_torchsurv_ipcw_km_cpu:
`ipcw[mask] = 1 / ct[mask]` with the censoring estimate fitted on the cpu). With ints and slices only
it is `t[idx].copy_(v)`, which crosses devices: silent."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def test_masked_store_of_cpu_values_into_a_device_tensor():
    assert _codes("""
        import torch

        x = torch.rand(8, device="cuda")
        out = torch.zeros_like(x)
        vals = torch.ones(8)
        out[x > 0.5] = vals[x.cpu() > 0.5]
        """) == [(6, "DEV201")]


def test_store_through_helpers_renamed_in_a_class():
    # the estimate comes from an object that keeps its own (cpu) device, one call deeper
    assert _codes("""
        import torch

        class Fitter:
            def __init__(self, device=None):
                self.dev = torch.device("cpu") if device is None else torch.device(device)

            def estimate(self, t):
                t = t.to(self.dev)
                return torch.ones_like(t, device=self.dev) / (t + 1)

        def inverse_weights(times):
            est = Fitter().estimate(times)
            keep = est > 0
            weights = torch.zeros_like(times)
            weights[keep] = 1.0 / est[keep]
            return weights

        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

            def step(self, times):
                return inverse_weights(times.to(self.device))

        Trainer().step(torch.rand(16))
        """) == [(13, "DEV202")]


def test_store_in_another_file(tmp_path):
    (tmp_path / "weights.py").write_text(textwrap.dedent("""
        import torch

        def table(n):
            return torch.linspace(0, 1, n)

        def fill(buf, idx):
            buf[idx] = table(len(idx))
            return buf
        """))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        import torch
        from weights import fill

        device = "cuda"
        buf = torch.zeros(10, device=device)
        fill(buf, torch.arange(4, device=device))
        """))
    result = check_path(str(tmp_path / "run.py"))
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(7, "DEV202")]


def test_cpu_tensor_stored_at_device_indices():
    assert _codes("""
        import torch

        beams = torch.zeros(4, 10).long()
        scores = torch.rand(4, device="cuda")
        rows = torch.argsort(scores)[:2]
        beams[rows] = 1
        """) == [(7, "DEV204")]


def test_copies_zero_dim_values_and_unknown_indices_stay_silent():
    assert _codes("""
        import torch

        def store(out, idx, vec):
            out[idx] = vec  # idx may be an int: a copy

        x = torch.zeros(4, 3, device="cuda")
        row = torch.ones(3)
        x[0] = row                      # ints and slices: a copy, across devices
        x[:, 1] = torch.arange(4)
        x[x > 0] = torch.tensor(2.0)    # a 0-dim cpu value: a scalar to CUDA
        x[torch.tensor([0, 1], device="cuda")] = row.to("cuda")
        store(x, 2, row)
        """) == []
