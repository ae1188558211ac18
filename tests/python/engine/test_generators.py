"""Generator functions and project iterables: iterating them gives what they yield (a batch iterator
written by hand, a synthetic data generator), and `isinstance` on a known constant is decided."""

from __future__ import annotations

from devflow.engine import analyze


def codes(src):
    return [(d.code, d.span.line) for d in analyze(src).diagnostics]


GEN = """import torch


def batches(n):
    for _ in range(n):
        yield torch.randn(8, 4){move}


def train(device):
    w = torch.randn(4, 2, device=device)
    for x in batches(3):
        y = x @ w


train(torch.device("cuda"))
"""


def test_a_generator_yields_cpu_batches():
    assert codes(GEN.format(move="")) == [("DEV201", 6)]


def test_a_generator_yielding_moved_batches_is_clean():
    assert codes(GEN.replace("def batches(n):", "def batches(n, device):").replace("batches(3)", "batches(3, device)")
                 .format(move=".to(device)")) == []


ITER = """import torch


class Loader:
    def __init__(self, device=None):
        if isinstance(device, int):
            device = None  # an int gpu id is ignored: batches stay on the cpu
        self.device = device

    def __iter__(self):
        for _ in range(2):
            yield {"x": torch.zeros(4, 3, device=self.device)}


def run(loader):
    w = torch.ones(3, 3, device="cuda")
    for batch in loader:
        print(batch["x"] @ w)


run(Loader(device=DEV))
"""


def test_a_project_iterable_yields_what_its_iter_yields():
    assert codes(ITER.replace("DEV", "0")) == [("DEV201", 12)]


def test_a_project_iterable_on_the_device_is_clean():
    assert codes(ITER.replace("DEV", "'cuda'")) == []


def test_yield_from_and_send_stay_quiet():
    src = ("import torch\ndef inner():\n    yield torch.zeros(2, device='cuda')\n"
           "def outer():\n    got = yield from inner()\n    x = got + torch.zeros(2)\n"
           "for t in outer():\n    print(t + torch.ones(2, device='cuda'))\n")
    assert codes(src) == []
