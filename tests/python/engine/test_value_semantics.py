"""Python semantics the engine models for any code (found missing on unseen real cases, batch B):
`x if x is None else x.cuda()` is the moved tensor (the None branch holds no tensor); `obj.train()` is an
attribute call, never a call of a module-level function `train` (so that function stays an entry point
whose calls are followed); a tokenizer's `encode()` without return_tensors gives Python ints; a dataclass runs `__post_init__`."""

from __future__ import annotations

import textwrap

from devflow.api import check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def test_none_guarded_move_is_the_moved_tensor():
    assert _codes("""
        import torch
        from torch.nn.utils.rnn import pack_padded_sequence

        def run(feats, masks):
            masks = masks if masks is None else masks.cuda()
            return pack_padded_sequence(feats, masks.sum(1), batch_first=True)

        def run_list(data):
            tmp = [data["f"], data["m"]]
            tmp = [t if t is None else t.cuda() for t in tmp]
            feats, masks = tmp
            return pack_padded_sequence(feats, masks.sum(1), batch_first=True)

        def run_not_none(feats, masks):
            lengths = masks.cuda() if masks is not None else None
            return pack_padded_sequence(feats, lengths, batch_first=True)
        """) == [(7, "DEV206"), (13, "DEV206"), (17, "DEV206")]


def test_other_conditionals_stay_a_join():
    # the other branch is a tensor of unknown device, not None: nothing is proven
    assert _codes("""
        import torch
        from torch.nn.utils.rnn import pack_padded_sequence

        def run(feats, masks, other):
            masks = other if masks is None else masks.cuda()
            return pack_padded_sequence(feats, masks.sum(1), batch_first=True)

        def run2(feats, masks, other):
            masks = masks if other is None else masks.cuda()
            return pack_padded_sequence(feats, masks.sum(1), batch_first=True)
        """) == []


def test_attribute_call_of_the_same_name_keeps_a_function_an_entry_point():
    assert _codes("""
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x)

        def train(loader):
            model = Net().cuda()
            model.train()
            x = torch.randn(3, 4)
            return model(x)
        """) == [(16, "DEV201")]


def test_tokenizer_encode_gives_python_ints():
    # PreTrainedTokenizerBase.encode returns List[int] unless return_tensors is given: torch.tensor() of it
    # is a cpu tensor
    assert _codes("""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        model = AutoModelForCausalLM.from_pretrained("gpt2").to("cuda")

        def ids_of(text):
            encoded = tokenizer.encode(text)
            return torch.tensor(encoded).unsqueeze(0)

        out = model(ids_of("hello"))
        ok = model(ids_of("hello").to("cuda"))
        also_ok = model(tokenizer.encode("hi", return_tensors="pt").to("cuda"))
        """) == [(10, "DEV201")]


def test_dataclass_post_init_runs_after_the_fields():
    # the generated __init__ binds the fields, then calls __post_init__ (a config choosing its device there)
    assert _codes("""
        import torch
        import torch.nn as nn
        from dataclasses import dataclass
        from typing import Optional

        @dataclass
        class Cfg:
            width: int
            device: Optional[str] = None

            def __post_init__(self):
                if self.device is None:
                    self.device = "cuda" if torch.cuda.is_available() else "cpu"

        class Net(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.fc = nn.Linear(cfg.width, 2)
                self.to(cfg.device)

            def forward(self, x):
                return self.fc(x)

        def run():
            cfg = Cfg(4)
            net = Net(cfg)
            return net(torch.randn(3, 4)), net(torch.randn(3, 4, device=cfg.device))
        """) == [(28, "DEV201")]
