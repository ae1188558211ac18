"""Draws whose `generator=` defaults to one of torch's own generators (generated: frameworks.json
`generators.default_generator_draws`, read from the signatures of torch.utils.data: `random_split(dataset, lengths,
generator=default_generator)`). Without a generator given, `random_split` draws `randperm(n)` with torch's cpu
default generator on the default device; where the program made that an accelerator (`set_default_tensor_type(
torch.cuda.FloatTensor)`, `set_default_device("cuda")`, a `with torch.device("cuda"):` block, here or in a file it
imports) torch raises "Expected a 'cuda' device type for generator but found 'cpu'" (DEV601, where the split is)."""

from __future__ import annotations

import textwrap

from devflow.api import check_source
from project_fixtures import codes as _codes, write_project as _project


def _found(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics)


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


_SPLIT = """
    import torch
    from torch.utils.data import TensorDataset, random_split

    SETUP

    data = TensorDataset(torch.arange(100).float())
    train, test = random_split(data, [80, 20]GEN)
"""


def _split(setup: str, gen: str = "") -> str:
    return _SPLIT.replace("SETUP", setup).replace("GEN", gen)


def test_random_split_after_a_cuda_default_tensor_type():
    for setup in ("torch.set_default_tensor_type(torch.cuda.FloatTensor)", 'torch.set_default_device("cuda")',
                  "if torch.cuda.is_available():\n        torch.set_default_tensor_type('torch.cuda.FloatTensor')"):
        src = _split(setup)
        assert _found(src) == [(_line(src, "random_split(data"), "DEV601")], setup


def test_random_split_inside_a_default_device_block():
    src = """
        import torch
        import torch.utils.data as tud


        def split(n):
            with torch.device("cuda"):
                data = tud.TensorDataset(torch.arange(n).float())
                return tud.random_split(data, [n - 10, 10])


        if __name__ == "__main__":
            split(100)
    """
    assert _found(src) == [(_line(src, "tud.random_split("), "DEV601")]


def test_a_generator_given_or_a_cpu_default_stays_silent():
    assert _found(_split("torch.set_default_tensor_type(torch.cuda.FloatTensor)", ", generator=torch.Generator(device='cuda')")) == []
    assert _found(_split("torch.set_default_tensor_type(torch.cuda.FloatTensor)", ", torch.Generator(device='cuda')")) == []
    assert _found(_split("torch.set_default_tensor_type(torch.FloatTensor)")) == []
    assert _found(_split('torch.set_default_device("cpu")')) == []
    assert _found(_split("")) == []


def test_the_default_set_in_an_imported_module_one_helper_deeper(tmp_path):
    _project(tmp_path, {"models/utils.py": """
        import torch

        if torch.cuda.is_available():
            torch.set_default_tensor_type(torch.cuda.FloatTensor)


        def collate_fn(batch):
            return torch.stack(batch)
    """, "models/__init__.py": "", "data.py": """
        from torch.utils.data import random_split


        def train_test(dataset, ratio=0.9):
            n = int(len(dataset) * ratio)
            return random_split(dataset, [n, len(dataset) - n])
    """, "train.py": """
        import torch
        from torch.utils.data import TensorDataset

        from models.utils import collate_fn
        from data import train_test


        class Trainer:
            def __init__(self, dataset):
                self.train_set, self.test_set = train_test(dataset)


        if __name__ == "__main__":
            Trainer(TensorDataset(torch.arange(100).float()))
    """})
    assert _codes(tmp_path, "data.py") == [(6, "DEV601")]
    assert _codes(tmp_path, "train.py") == [(10, "DEV601")]
