"""Semantics found missing by the unseen batch M (tests/fixtures/engine/unseen/m_*: generation and
sampling code), each tested on the variations a user writes (renamed, split into files, one helper
deeper, inside a trainer class) and on the neighbours that must stay silent:
- torch.nn's alternative constructors (`nn.Embedding.from_pretrained(table)`, read from torch's sources
  into the knowledge tables) build a module of their class whose state is the tensors they are given: a
  cpu table makes a cpu module that `.to()` moves, not a tensor stored on the parent module;
- `caches = caches or [None] * n` is the container it was given when that holds something (an empty one
  has no element to follow), so the caches of a generation loop reach the blocks that extend them;
- a tensor knows the dimensions a view / reshape / unsqueeze gave it (through casts, moves and returns):
  `ids[i]` of an `ids.view(-1, 1)` is 1-D, not a 0-dim cpu scalar that would mix with any device, so the
  cpu token indices a seq2seq loop feeds to a cuda encoder one step at a time are found;
- `{...} if cond else {}` of two written dicts is a dict: the keys both write with their joined values, a
  key only one writes with an unknown value (it may not be passed), so `DataLoader(..., **kwargs)` with
  loader options chosen by a flag is still a known loader, and a maybe-passed device= stays unknown."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


# --- nn.Embedding.from_pretrained --------------------------------------------------------------------

SINUSOID = """
import numpy as np
import torch


def sinusoid_table(n_position, d_model):
    pos = np.arange(n_position)[:, None] / np.power(10000, 2 * (np.arange(d_model)[None, :] // 2) / d_model)
    pos[:, 0::2] = np.sin(pos[:, 0::2])
    pos[:, 1::2] = np.cos(pos[:, 1::2])
    return torch.FloatTensor(pos)
"""

ENCODER = """
import torch
from torch import nn

from tables import sinusoid_table


class PositionalEncoder(nn.Module):
    def __init__(self, vocab, d_model, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding.from_pretrained(sinusoid_table(max_len + 1, d_model), freeze=True)

    def forward(self, tokens):
        positions = torch.arange(1, tokens.size(1) + 1).unsqueeze(0)
        return self.tok(tokens) + self.pos(positions)
"""

TRAIN = """
import torch

from encoder import PositionalEncoder


class Trainer:
    def __init__(self, device):
        self.device = device
        self.model = PositionalEncoder(100, 16, 32).to(device)

    def step(self, batch):
        return self.model(batch.to(self.device)).sum()


def main():
    trainer = Trainer(torch.device("cuda"))
    trainer.step(torch.zeros(2, 8, dtype=torch.long))
"""


def test_from_pretrained_table_is_a_module_moved_with_the_model_split_into_files(tmp_path):
    _project(tmp_path, {"tables.py": SINUSOID, "encoder.py": ENCODER, "train.py": TRAIN})
    # the positions built on the cpu meet the cuda Embedding built from the table: reported in the
    # trainer's file, at the statement that runs the model
    assert _codes(tmp_path, "train.py") == [(12, "DEV201")]
    # no finding on the table itself: the Embedding owns it as its weight, moved with the model
    assert _codes(tmp_path, "encoder.py") == []


def test_from_pretrained_positions_on_the_input_device_stay_silent(tmp_path):
    fixed = ENCODER.replace("torch.arange(1, tokens.size(1) + 1)", "torch.arange(1, tokens.size(1) + 1, device=tokens.device)")
    _project(tmp_path, {"tables.py": SINUSOID, "encoder.py": fixed, "train.py": TRAIN})
    assert _codes(tmp_path, "train.py") == []
    assert _codes(tmp_path, "encoder.py") == []


def test_from_pretrained_renamed_one_helper_deeper(tmp_path):
    _project(tmp_path, {"m.py": """
        import torch
        import torch.nn as tnn


        def frozen_lookup(weights):
            return tnn.EmbeddingBag.from_pretrained(weights, freeze=True, mode="sum")


        class Bag(tnn.Module):
            def __init__(self, table):
                super().__init__()
                self.lookup = frozen_lookup(table)

            def forward(self, ids, offsets):
                return self.lookup(ids, offsets)


        def run():
            dev = "cuda"
            net = Bag(torch.randn(10, 4)).to(dev)
            ids = torch.tensor([1, 2, 3])
            return net(ids, torch.tensor([0], device=dev))
        """})
    codes = _codes(tmp_path, "m.py")
    assert (21, "DEV201") in codes, codes  # the cpu ids, made at line 21, meet the cuda EmbeddingBag
    assert all(code != "DEV105" for _, code in codes), codes  # never a tensor stored on the module


def test_from_pretrained_of_a_table_of_unknown_device_is_silent(tmp_path):
    _project(tmp_path, {"m.py": """
        import torch
        from torch import nn


        class Lookup(nn.Module):
            def __init__(self, table):
                super().__init__()
                self.emb = nn.Embedding.from_pretrained(table)

            def forward(self, ids):
                return self.emb(ids)


        def run(table, ids):
            model = Lookup(table)
            return model(ids.cuda())


        def run_on_table_device(table):
            model = Lookup(table.cuda())
            return model(torch.zeros(3, dtype=torch.long, device="cuda"))
        """})
    assert _codes(tmp_path, "m.py") == []


# --- `caches or [None] * n` ----------------------------------------------------------------------

CACHE = """
import torch


class KVCache:
    def __init__(self, n_ctx, dim, device=None):
        self.k = torch.zeros((1, n_ctx, dim), device=device)
        self.offset = torch.zeros((1,), dtype=torch.long, device=device)

    def extend(self, k):
        idx = torch.arange(0, k.shape[1], device=k.device, dtype=torch.long) + self.offset
        self.k.index_copy_(1, idx, k)
        self.offset.add_(k.shape[1])
        return self.k
"""

MODEL = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, device=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim, device=device)

    def forward(self, x, cache=None):
        k = self.proj(x)
        if cache is not None:
            k = cache.extend(k)
        return x + k[:, -x.shape[1]:]


class Decoder(nn.Module):
    def __init__(self, dim=8, n_layers=2, device=None):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, device) for _ in range(n_layers)])

    def forward(self, x, caches=None):
        caches = caches or [None] * len(self.blocks)
        for block, cache in zip(self.blocks, caches):
            x = block(x, cache=cache)
        return x
"""

SERVE = """
import torch

from cache import KVCache
from model import Decoder


class Server:
    def __init__(self, rank):
        self.device = torch.device(f"cuda:{rank}")
        self.model = Decoder(device=self.device)

    def warm_up(self):
        caches = [KVCache(64, 8) for _ in range(len(self.model.blocks))]
        self.model(torch.zeros(1, 4, 8, device=self.device), caches)
        return caches


def main():
    Server(0).warm_up()
"""


def test_caches_or_default_list_reach_the_blocks_in_a_server_class(tmp_path):
    _project(tmp_path, {"cache.py": CACHE, "model.py": MODEL, "serve.py": SERVE})
    codes = _codes(tmp_path, "serve.py")
    # the cpu offset meets the cuda:0 positions in KVCache.extend, and the cpu keys it returns meet x:
    # both reported at the statement of serve.py that runs the model
    assert codes == [(14, "DEV201"), (14, "DEV202")], codes


def test_caches_on_the_model_device_or_no_caches_stay_silent(tmp_path):
    serve = SERVE.replace("KVCache(64, 8)", "KVCache(64, 8, device=self.device)") + """

def no_caches(server):
    return server.model(torch.zeros(1, 4, 8, device=server.device))


def empty_caches():
    server = Server(1)
    return server.model(torch.zeros(1, 4, 8, device=server.device), [])
"""
    _project(tmp_path, {"cache.py": CACHE, "model.py": MODEL, "serve.py": serve})
    assert _codes(tmp_path, "serve.py") == []


def test_or_keeps_a_written_empty_default_out_and_an_unknown_first_value_unknown(tmp_path):
    _project(tmp_path, {"m.py": """
        import torch


        def pick(items=None):
            items = items or []
            return [t + torch.zeros(2) for t in items]


        def run(unknown):
            a = pick([torch.ones(2, device="cuda")])
            b = pick(unknown)
            return a, b
        """})
    # the list given (cuda) is the value of `items or []`: its element meets a cpu tensor made at line 6;
    # the unknown list given by `run` stays unknown
    assert [c for _, c in _codes(tmp_path, "m.py")] == ["DEV201"]


# --- dimensions given by view / reshape ------------------------------------------------------------

DATA = """
import torch

EOS = 1


def sentence_ids(vocab, sentence):
    ids = [vocab[w] for w in sentence.split(" ")] + [EOS]
    return torch.LongTensor(ids).view(-1, 1)


def pair_ids(vocab_in, vocab_out, pair):
    return sentence_ids(vocab_in, pair[0]), sentence_ids(vocab_out, pair[1])
"""

SEQ2SEQ = """
import torch
from torch import nn

from data import pair_ids


class Encoder(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden)

    def forward(self, token, hidden):
        return self.gru(self.emb(token).view(1, 1, -1), hidden)


class Seq2SeqTrainer:
    def __init__(self, encoder, device):
        self.encoder = encoder.to(device)
        self.device = device

    def encode(self, src):
        hidden = torch.zeros(1, 1, 8, device=self.device)
        for t in range(src.size(0)):
            _, hidden = self.encoder(src[t], hidden)
        return hidden

    def fit(self, vocab_in, vocab_out, pairs):
        for pair in pairs:
            src, tgt = pair_ids(vocab_in, vocab_out, pair)
            self.encode(src)


def main(vocab_in, vocab_out, pairs):
    trainer = Seq2SeqTrainer(Encoder(len(vocab_in), 8), torch.device("cuda"))
    trainer.fit(vocab_in, vocab_out, pairs)
"""


def test_token_of_a_column_of_ids_is_not_a_scalar_in_a_trainer_split_into_files(tmp_path):
    _project(tmp_path, {"data.py": DATA, "seq2seq.py": SEQ2SEQ})
    assert _codes(tmp_path, "seq2seq.py") == [(30, "DEV202")]


def test_ids_moved_to_the_device_stay_silent(tmp_path):
    moved = SEQ2SEQ.replace("self.encode(src)", "self.encode(src.to(self.device))")
    _project(tmp_path, {"data.py": DATA, "seq2seq.py": moved})
    assert _codes(tmp_path, "seq2seq.py") == []


def test_dims_renamed_through_casts_and_unsqueeze(tmp_path):
    _project(tmp_path, {"m.py": """
        import torch
        from torch import nn


        def step(emb, column):
            return emb(column[0])


        def run():
            emb = nn.Embedding(10, 4).cuda()
            a = torch.tensor([1, 2, 3]).unsqueeze(1).long()
            return step(emb, a)


        def run_reshaped():
            emb = nn.Embedding(10, 4).cuda()
            b = torch.LongTensor([1, 2, 3]).reshape((3, 1)).detach()
            return emb(b[1])
        """})
    assert _codes(tmp_path, "m.py") == [(11, "DEV201"), (17, "DEV201")]


def test_elements_that_may_be_0_dim_still_mix(tmp_path):
    _project(tmp_path, {"m.py": """
        import torch


        def run(shape):
            w = torch.ones(4, device="cuda")
            flat = torch.arange(6).view(-1)
            a = w * flat[0]                       # 1-D view: its element is 0-dim, a cpu scalar
            b = w * torch.arange(6).reshape(shape)[0, 0]  # a shape in a name may be anything
            c = w * torch.arange(6).view(2, 3)[0, 1]      # two ints of a 2-D view: 0-dim
            return a, b, c
        """})
    assert _codes(tmp_path, "m.py") == []


# --- `**({...} if cond else {})` -----------------------------------------------------------------------

LOADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader(use_cuda, extra):
    kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
    return DataLoader(TensorDataset(torch.zeros(8, 4)), batch_size=2, **kwargs, **extra)


class Runner:
    def __init__(self, use_cuda):
        self.model = torch.nn.Linear(4, 2)
        if use_cuda:
            self.model.cuda()
        self.loader = make_loader(use_cuda, {})

    def run(self):
        for (x,) in self.loader:
            self.model(x)


def main(flag):
    Runner(flag).run()
"""


def test_loader_options_chosen_by_a_flag_keep_the_loader_known(tmp_path):
    _project(tmp_path, {"m.py": LOADER})
    assert _codes(tmp_path, "m.py") == [(19, "DEV202")]


def test_a_maybe_passed_collate_fn_or_device_stays_unknown(tmp_path):
    _project(tmp_path, {"m.py": LOADER.replace(
        '{"num_workers": 1, "pin_memory": True} if use_cuda else {}',
        '{"collate_fn": lambda b: [t.cuda() for t in torch.utils.data.default_collate(b)]} if use_cuda else {}'),
        "f.py": """
        import torch


        def noise(shape, on_gpu):
            opts = {"device": "cuda"} if on_gpu else {}
            return torch.randn(*shape, **opts)


        def run(on_gpu):
            w = torch.ones(3, device="cuda")
            return w + noise((3,), on_gpu)
        """})
    assert _codes(tmp_path, "m.py") == []
    assert _codes(tmp_path, "f.py") == []
