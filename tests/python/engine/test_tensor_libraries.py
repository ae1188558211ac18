"""Libraries between the user's tensors (issue 10, capability 6), modelled from the generated knowledge
(frameworks.json: einops probed on meta, tiktoken and torchtext read from their wheels): einops keeps
its operand's device, tiktoken ids are Python ints, a torchtext iterator built with device= yields
batches whose fields are on it. Each case is written the way users vary it; unknown stays silent."""

from __future__ import annotations

import textwrap

import pytest

from devflow.engine import analyze


def _codes(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.start_line + 1 if hasattr(d.span, "start_line") else d.line, d.code)
                  for d in analyze(textwrap.dedent(src)).diagnostics)


def _rules(src: str) -> list[str]:
    return sorted(d.code for d in analyze(textwrap.dedent(src)).diagnostics)


EINOPS_BUG = """
import torch
{imp}

def kl(logits):
    logits = {call}
    g = torch.log(torch.tensor([0.5]))
    return logits - g

x = torch.randn(2, 3, 4, 5).cuda()
kl(x)
"""


@pytest.mark.parametrize("imp,call", [
    ("from einops import rearrange", 'rearrange(logits, "b n h w -> b (h w) n")'),
    ("import einops", 'einops.rearrange(logits, "b n h w -> b (h w) n")'),
    ("import einops as E", 'E.repeat(logits, "b n h w -> b n h w r", r=2)'),
    ("from einops import rearrange as re_", 're_(logits, pattern="b n h w -> b (h w) n")'),
    ("from einops import einsum", 'einsum(logits, logits, "b n h w, b n h w -> b n h w")'),
])
def test_einops_result_is_on_its_operand_device(imp, call):
    assert _rules(EINOPS_BUG.format(imp=imp, call=call)) == ["DEV201"]


@pytest.mark.parametrize("imp,call", [
    ("from einops import rearrange", 'rearrange(logits.cpu(), "b n h w -> b (h w) n")'),  # moved: same device
    ("from einops import rearrange", 'rearrange([logits, logits], "s b n h w -> b s n h w")'),  # a list: not followed
    ("from einops import pack", 'pack([logits], "b *")[0]'),  # a tuple: not followed
    ("from mylib import rearrange", 'rearrange(logits, "b n h w -> b (h w) n")'),  # not einops: unknown
])
def test_einops_unknown_or_same_device_stays_silent(imp, call):
    assert _rules(EINOPS_BUG.format(imp=imp, call=call)) == []


TIKTOKEN = """
import tiktoken
import torch

def encode(tok, text, device):
    ids = torch.tensor(tok.{method}(text)).unsqueeze(0)
    return model(ids{move})

model = torch.nn.Linear(4, 4).to("cuda")
tokenizer = tiktoken.{ctor}
encode(tokenizer, "hello", "cuda")
"""


@pytest.mark.parametrize("ctor", ['get_encoding("gpt2")', 'encoding_for_model("gpt-4")'])
@pytest.mark.parametrize("method", ["encode", "encode_ordinary"])
def test_tiktoken_ids_are_cpu_ints(ctor, method):
    assert _rules(TIKTOKEN.format(ctor=ctor, method=method, move="")) == ["DEV201"]
    assert _rules(TIKTOKEN.format(ctor=ctor, method=method, move=".to(device)")) == []


def test_einops_reduction_of_a_cpu_tensor_may_be_0_dim():
    src = """
    import torch
    from einops import reduce
    w = torch.randn(3, 4)
    x = torch.randn(3, 4).cuda()
    y = x * reduce(w, "a b -> ", "sum")
    z = x * reduce(w, "a b -> a", "sum")
    """
    assert _rules(src) == ["DEV201"]  # only the 1-D reduction


TORCHTEXT = """
import torch
import torch.nn as nn
from {pkg} import BucketIterator

device = torch.device("cuda")
{make}
enc = nn.LSTM(8, 8).to(device)
for batch in {it}:
    src, src_len = batch.src
    n = batch.batch_size
    packed = nn.utils.rnn.pack_padded_sequence(src, src_len{fix})
"""


@pytest.mark.parametrize("pkg", ["torchtext.legacy.data", "torchtext.data"])
@pytest.mark.parametrize("make,it", [
    ("train_it, valid_it = BucketIterator.splits((train, valid), batch_size=8, device=device)", "train_it"),
    ("train_it = BucketIterator(train, 8, device=device)", "train_it"),
    ("train_it = BucketIterator(train, 8, None, device)", "train_it"),
])
def test_torchtext_batches_are_on_the_iterator_device(pkg, make, it):
    src = TORCHTEXT.format(pkg=pkg, make=make, it=it, fix="")
    assert _rules(src) == ["DEV206"]
    assert _rules(TORCHTEXT.format(pkg=pkg, make=make, it=it, fix=".cpu()")) == []


@pytest.mark.parametrize("make", [
    "train_it = BucketIterator(train, 8)",  # default device (cpu in 0.11, None in 0.6): lengths fine
    "train_it = BucketIterator(train, 8, device=torch.device('cpu'))",
    "train_it = BucketIterator(train, 8, device=args.device)",  # unknown
    "train_it = BucketIterator(train, 8, **opts)",
])
def test_torchtext_unknown_or_cpu_device_stays_silent(make):
    assert _rules(TORCHTEXT.format(pkg="torchtext.legacy.data", make=make, it="train_it", fix="")) == []


def test_int_indexed_schedule_entries_may_be_0_dim():
    src = """
    import torch
    sigmas = torch.linspace(1, 0, 11)
    x = torch.randn(4, device="cuda")

    def step(x, sigmas, i):
        return x - (sigmas[i] - sigmas[i + 1]) * x

    for i, t in enumerate(range(10)):
        x = step(x, sigmas, i)
    y = x + sigmas[2:4]
    """
    assert _rules(src) == ["DEV201"]  # the slice is 1-D; the int-indexed entries are 0-dim and mix
