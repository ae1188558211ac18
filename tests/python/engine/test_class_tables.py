"""A registry held by a class (`METRICS = {"accuracy": accuracy}` in the class body, read as `self.METRICS[name]`)
is the display the class body evaluates, in the file that defines the class (found missing on a variation of
the batch C case c_opendataval_metric_registry: the metric table moved into an evaluator class)."""

from __future__ import annotations

import textwrap

from devflow.api import check_source

_PRELUDE = """
    import numpy as np
    import torch
    import torch.nn as nn

    def accuracy(a, b):
        return (a.argmax(dim=1) == b.argmax(dim=1)).float().mean()

    def load(path):
        d = np.load(path)
        return torch.tensor(d["x"]), torch.tensor(d["y"])
    """


def _codes(src: str) -> list[tuple[int, str]]:
    text = textwrap.dedent(_PRELUDE) + textwrap.dedent(src)
    return [(d.span.line, d.code) for d in check_source(text, "t.py").diagnostics]


def test_registry_in_the_class_body():
    assert _codes("""
        class Evaluator:
            METRICS = {"accuracy": accuracy}

            def __init__(self, metric="accuracy"):
                self.metric = self.METRICS[metric]

            def __call__(self, pred, y):
                return self.metric(pred, y)

        class Sub(Evaluator):
            pass

        x, y = load("t.npz")
        pred = torch.randn(8, 3, device="cuda")
        Evaluator()(pred, y)
        Sub()(pred, y)
        """) == [(25, "DEV202")]


def test_unknown_key_and_non_display_class_values_stay_silent():
    assert _codes("""
        class Evaluator:
            METRICS = {"accuracy": accuracy, "count": len}
            DEVICE = torch.device("cpu")

            def __init__(self, metric):
                self.metric = self.METRICS[metric]

            def __call__(self, pred, y):
                return self.metric(pred, y)

            def place(self, t):
                return t.to(self.DEVICE)

        x, y = load("t.npz")
        pred = torch.randn(8, 3, device="cuda")
        ev = Evaluator(input())
        ev(pred, y)
        pred + ev.place(torch.ones(8, 3))
        """) == []
