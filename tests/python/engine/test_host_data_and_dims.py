"""Semantics found missing on unseen real cases, batch C (tests/fixtures/engine/unseen/c_*):
numpy computes on the host, so `torch.tensor(arr)` of an array numpy built is a cpu tensor (c_cbloss_weights_cpu);
a `dim=k` other than 0 / -1 proves the receiver has dimensions, so a maybe-0-dim cpu tensor
(`torch.tensor(data)`) used as `t.argmax(dim=1)` is not a scalar that mixes with any device
(c_opendataval_metric_registry). Both keep the 0-dim rule: a value that may be 0-dim stays silent."""

from __future__ import annotations

import textwrap

from devflow.api import check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def test_tensor_of_numpy_arithmetic_is_on_the_cpu():
    assert _codes("""
        import numpy as np
        import torch
        import torch.nn.functional as F

        def weighted(labels, counts, n, beta):
            eff = 1.0 - np.power(beta, counts)
            w = (1.0 - beta) / np.array(eff)
            w = w / np.sum(w) * n
            w = torch.tensor(w).float().unsqueeze(0)
            return w * F.one_hot(labels, n).float()

        labels = torch.zeros(4, dtype=torch.long, device="cuda")
        weighted(labels, [3, 1, 2], 3, 0.99)
        """) == [(10, "DEV201")]


def test_numpy_methods_subscripts_and_generators_stay_host_data():
    assert _codes("""
        import numpy as np
        import torch

        rng = np.random.default_rng(0)
        idx = torch.tensor(rng.choice(10, 4)).unsqueeze(1)
        table = np.load("t.npy")
        rows = torch.tensor(table[:4].astype(np.float32)).view(4, -1)
        x = torch.ones(4, 1, device="cuda")
        print(x + idx, x + rows)
        """) == [(6, "DEV201"), (8, "DEV201")]


def test_maybe_0dim_numpy_tensors_stay_silent():
    # one number from numpy: a 0-dim cpu tensor, which CUDA mixes with any device
    assert _codes("""
        import numpy as np
        import torch

        w = np.array([1.0, 2.0])
        scale = torch.tensor(np.sum(w))
        whole = torch.tensor(w)
        x = torch.ones(2, device="cuda")
        print(x * scale, x * torch.tensor(w.mean()))
        """) == []


def test_numpy_of_a_tensor_or_of_unknown_values_is_not_host_data_by_itself():
    # an unknown `v` in `v * arr` may be a cuda tensor (then so is the product); `len(...)` is not modelled
    assert _codes("""
        import numpy as np
        import torch
        from helpers import load_scale

        def f(v, counts):
            a = v * np.ones(3)
            b = np.ones(3) * len(counts)
            a, b = torch.tensor(a).unsqueeze(0), torch.tensor(b).unsqueeze(0)
            x = torch.ones(1, 3, device="cuda")
            return x + a, x + b

        f(load_scale(), [1, 2, 3])
        """) == []


def test_inner_dim_proves_dimensions():
    assert _codes("""
        import numpy as np
        import torch

        def load(path):
            d = np.load(path)
            return torch.tensor(d["x"]), torch.tensor(d["y"])

        def accuracy(a, b):
            return (a.argmax(dim=1) == b.argmax(dim=1)).float().mean()

        def top(a, b):
            return a.softmax(dim=-2) - b.softmax(dim=-2)

        x, y = load("test.npz")
        pred = torch.randn(8, 3, device="cuda")
        accuracy(pred, y)
        top(pred, y)
        """) == [(15, "DEV202")]


def test_dim_0_or_minus_1_proves_nothing():
    # `t.sum(dim=0)` / `t.softmax(dim=-1)` are valid on a 0-dim tensor: it may still be a scalar
    assert _codes("""
        import numpy as np
        import torch

        d = np.load("t.npz")
        y = torch.tensor(d["y"])
        pred = torch.randn(8, 3, device="cuda")
        print(pred.sum(dim=0) - y.sum(dim=0), pred - y.softmax(dim=-1))
        """) == []
