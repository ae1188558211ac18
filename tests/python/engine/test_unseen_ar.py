"""Semantics found missing on unseen real cases, batch AR (tests/fixtures/engine/unseen/ar_*): LLM / NLP
fine-tuning and inference code (seq2seq decoders, Lightning modules, generation loops).

- A name a loop body rebinds is read again at the top of the next iteration. A decoding loop that starts
  from a state made on the model's device (`last_action = torch.full(..., device=self.device)`) and ends
  each step by rebinding it to a cpu tensor (`torch.IntTensor(next_action)` returned by a helper) feeds the
  cpu value to the model on every step after the first (yoyodyne#9: `torch.where` with the cuda counts and
  the cuda action embedding); so is an attribute the body stores (`self.last = ...`). The body runs a second
  time from the state its first pass left, only when that pass changed a tensor name's (or stored
  attribute's) device; the state after the loop stays that of one pass. A body that ends in
  `break` / `return`, or a `for` over at most one element (`range(1)`, a one-item list), never reaches a
  second iteration; a rebinding to the same device, or to a device not known, changes nothing.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- values carried from one iteration of a loop to the next -------------------------------------------

_DECODER = """
    import torch
    import torch.nn as nn


    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(16, 8)
            self.out = nn.Linear(8, 16)

        def choose(self, logits):
            picks = [int(row.argmax()) for row in logits]
            return torch.IntTensor(picks)

        def decode(self, batch_size, steps):
            last = torch.full((batch_size,), 0, device=self.embed.weight.device)
            for _ in range(steps):
                logits = self.out(self.embed(last))
                last = self.choose(logits)
            return last


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Decoder().to(device)
    model.decode(4, 10)
"""


def test_state_rebound_to_cpu_at_the_end_of_a_loop_meets_the_model_next_step():
    assert _codes(_DECODER) == [(20, "DEV202")]


def test_fixed_decoder_keeps_the_state_on_the_device():
    fixed = _DECODER.replace("return torch.IntTensor(picks)",
                             "return torch.tensor(picks, device=logits.device)")
    assert _codes(fixed) == []


def test_renamed_in_a_while_loop_with_a_conditional_break():
    assert _codes("""
        import torch
        import torch.nn as nn

        table = nn.Embedding(10, 4).cuda()
        token = torch.zeros(2, dtype=torch.long, device="cuda")
        while True:
            hidden = table(token)
            if hidden.sum() > 100:
                break
            token = torch.LongTensor([1, 2])
    """) == [(11, "DEV201")]


def test_made_in_the_loop_one_helper_deeper_inside_a_trainer_class():
    assert _codes("""
        import torch
        import torch.nn as nn


        def to_ids(words):
            return torch.tensor([len(w) for w in words])


        def next_ids(words):
            return to_ids(words)


        class Trainer:
            def __init__(self, model, device):
                self.model = model.to(device)
                self.device = device

            def rollout(self, words, steps):
                ids = torch.zeros(len(words), dtype=torch.long, device=self.device)
                for step in range(steps):
                    logits = self.model(ids)
                    words = [w + "a" for w in words]
                    ids = next_ids(words)
                return logits


        trainer = Trainer(nn.Embedding(32, 8), torch.device("cuda"))
        trainer.rollout(["a", "b"], 5)
    """) == [(24, "DEV202")]


def test_split_into_files(tmp_path: Path):
    (tmp_path / "decoder.py").write_text(textwrap.dedent(_DECODER.split("device = ")[0]))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        import torch
        from decoder import Decoder

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Decoder().to(device)
        model.decode(4, 10)
    """))
    got = sorted((f, d.span.line, d.code) for f in ("decoder.py", "run.py")
                 for d in check_path(str(tmp_path / f)).diagnostics)
    assert got == [("decoder.py", 20, "DEV202"), ("run.py", 7, "DEV202")]


def test_silent_when_the_body_always_leaves_after_one_pass():
    assert _codes("""
        import torch
        import torch.nn as nn

        table = nn.Embedding(10, 4).cuda()
        token = torch.zeros(2, dtype=torch.long, device="cuda")
        for _ in range(3):
            hidden = table(token)
            token = torch.LongTensor([1, 2])
            break
    """) == []


def test_silent_when_the_rebound_state_keeps_its_device():
    assert _codes("""
        import torch
        import torch.nn as nn

        table = nn.Embedding(10, 4).cuda()
        token = torch.zeros(2, dtype=torch.long, device="cuda")
        for _ in range(3):
            hidden = table(token)
            token = hidden.argmax(-1)
    """) == []


def test_silent_when_the_rebound_device_is_not_known():
    assert _codes("""
        import torch
        import torch.nn as nn


        def step(table, token, source):
            hidden = table(token)
            return source.next_tokens(hidden)


        def run(source):
            table = nn.Embedding(10, 4).cuda()
            token = torch.zeros(2, dtype=torch.long, device="cuda")
            for _ in range(3):
                token = step(table, token, source)
    """) == []


def test_silent_when_the_loop_state_is_moved_before_its_use():
    assert _codes("""
        import torch
        import torch.nn as nn

        table = nn.Embedding(10, 4).cuda()
        token = torch.zeros(2, dtype=torch.long, device="cuda")
        for _ in range(3):
            hidden = table(token.cuda())
            token = torch.LongTensor([1, 2])
    """) == []


def test_state_kept_on_the_instance():
    assert _codes("""
        import torch
        import torch.nn as nn


        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(16, 8)
                self.out = nn.Linear(8, 16)

            def decode(self, batch_size, steps):
                self.last = torch.full((batch_size,), 0, device=self.embed.weight.device)
                for _ in range(steps):
                    logits = self.out(self.embed(self.last))
                    self.last = torch.IntTensor([int(r.argmax()) for r in logits])
                return self.last


        model = Decoder().to("cuda")
        model.decode(4, 10)
    """) == [(16, "DEV201")]


def test_silent_when_the_instance_state_stays_on_the_device():
    assert _codes("""
        import torch
        import torch.nn as nn


        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(16, 8)
                self.out = nn.Linear(8, 16)

            def decode(self, batch_size, steps):
                self.last = torch.full((batch_size,), 0, device=self.embed.weight.device)
                for _ in range(steps):
                    logits = self.out(self.embed(self.last))
                    self.last = torch.tensor([int(r.argmax()) for r in logits], device=logits.device)
                return self.last


        model = Decoder().to("cuda")
        model.decode(4, 10)
    """) == []


def test_silent_when_the_loop_runs_over_at_most_one_element():
    assert _codes("""
        import torch
        import torch.nn as nn

        table = nn.Embedding(10, 4).cuda()
        token = torch.zeros(2, dtype=torch.long, device="cuda")
        for _ in range(1):
            hidden = table(token)
            token = torch.LongTensor([1, 2])
        for split in ["test"]:
            hidden = table(token.cuda())
            token = torch.LongTensor([3, 4])
    """) == []
