"""Where a tensor made without `device=` in a helper is blamed (interp/library.py `_tensor_parameter_device`,
statements.py `_reanchor`). A helper that returns a new cpu tensor is normally blamed at its caller's assignment
(`mask = make_mask(n)`: the caller moves it, or passes a device). But a helper given a tensor on the accelerator had
that device in scope when it made the tensor (`torch.arange(logits.shape[0])` in a sampler given the logits): it is
blamed at the factory (DEV201), with the fix `device=<that parameter>.device` there."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _diags(src: str):
    return check_source(textwrap.dedent(src), "t.py").diagnostics


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


_SRC = """
    import torch
    from torch import nn


    def HELPER
        return torch.ones(SHAPE)


    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            mask = make_mask(ARG)
            return self.fc(x) * mask


    if __name__ == "__main__":
        Gate().cuda()(torch.randn(8, 4).cuda())
"""


def _src(helper="make_mask(x):", shape="x.shape[0], 4", arg="x") -> str:
    return _SRC.replace("HELPER", helper).replace("SHAPE", shape).replace("ARG", arg)


def test_a_helper_given_the_input_is_blamed_at_its_factory_with_the_inputs_device():
    src = _src()
    (d,) = _diags(src)
    assert (d.span.line, d.code) == (_line(src, "return torch.ones("), "DEV201")
    assert d.fix is not None and d.fix.edits[0].new_text == "torch.ones(x.shape[0], 4, device=x.device)"


def test_a_helper_given_only_sizes_is_blamed_at_the_call():
    src = _src(helper="make_mask(n):", shape="n, 4", arg="x.shape[0]")
    (d,) = _diags(src)
    assert (d.span.line, d.code) == (_line(src, "mask = make_mask("), "DEV202")


def test_a_helper_given_a_cpu_tensor_is_blamed_at_the_call():
    src = _src(arg="x.cpu()")
    assert [(d.span.line, d.code) for d in _diags(src)] == [(_line(src, "mask = make_mask("), "DEV202")]


def test_the_helper_fixed_with_the_inputs_device_is_clean():
    assert _diags(_src(shape="x.shape[0], 4, device=x.device")) == []


def test_renamed_one_helper_deeper_in_another_file_inside_a_trainer(tmp_path: Path):
    (tmp_path / "masks.py").write_text(textwrap.dedent("""\
        import torch


        def padding_mask(tokens, pad):
            return _fill(tokens, pad)


        def _fill(tokens, pad):
            keep = torch.ones(tokens.shape, dtype=torch.bool)
            keep[tokens == pad] = False
            return keep
        """))
    train = textwrap.dedent("""\
        import torch

        from masks import padding_mask


        class Trainer:
            def __init__(self, device):
                self.device = device
                self.emb = torch.nn.Embedding(100, 8).to(device)

            def step(self, tokens):
                tokens = tokens.to(self.device)
                keep = padding_mask(tokens, 0)
                return (self.emb(tokens) * keep.unsqueeze(-1)).sum()


        if __name__ == "__main__":
            Trainer(torch.device("cuda")).step(torch.randint(0, 100, (2, 5)))
        """)
    (tmp_path / "train.py").write_text(train)
    found = {(d.span.line, d.code) for d in check_path(tmp_path / "masks.py").diagnostics}
    assert (9, "DEV201") in found
