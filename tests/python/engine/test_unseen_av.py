"""Semantics found missing on unseen real cases, batch AV (tests/fixtures/engine/unseen/av_*): the code most
users write (course notebooks, tutorials, training / evaluation scripts over torchtext, seq2seq models).

- A torchtext batch iterator given no device (`Iterator(ds, batch_size=...)`) or `device=None` puts its
  batches' fields on the cpu: the legacy iterators (0.9-0.11) turn None into the cpu, the older ones
  (0.3-0.8, the pinned 0.6 wheel) hand None on to the tensor factories that build each field, which then
  use torch's default device. Token ids from it fed to a model on the GPU fail (DEV202 at the model call;
  slaysd/pytorch-sentiment-analysis-classification#3, gauthierdmn/question_generation#9). A program that
  changes torch's default device, a device given as an unknown value or spread from `**kwargs`, stays silent.
- `getattr(batch, NAME)` with a constant name is `batch.NAME` (pytorch-seq2seq reads its torchtext fields
  through `getattr(batch, seq2seq.src_field_name)`).
- An input a model hands on to a project submodule whose forward never combines it with a tensor (it only
  packs the sequence with it: `pack_padded_sequence(x, lengths)`) meets nothing on the way: the cpu lengths
  of a torchtext batch given to `Seq2Seq.forward` -> `self.enc(x, lengths)` are not a mix. The names in a
  forward resolve in that forward's own file (the model split into its own module).
- `nn.Sequential(OrderedDict([("flatten", ...), ("linear", nn.Linear(...))]))` is a Sequential of those modules,
  each registered under its key (`net.linear`): a model like any other, on the cpu where it was built. The d2l
  book's `evaluate_accuracy(..., device=cuda-if-available)` moves the test batches to the GPU while the 3.7
  softmax-regression net built that way never left the cpu (DEV106, ShusenTang/Dive-into-DL-PyTorch#30).
- An optimizer restored (`load_state_dict`) before the model is moved keeps its state where the parameters
  were (DEV302), unless the code reads `optimizer.state` right after the restore to place the state itself
  (`for state in opt.state.values(): ... state[k] = v.cuda()`), as the fix of cv-lee/BraTs#10 does.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_source
from project_fixtures import findings


def _codes(src: str) -> list[tuple[int, str]]:
    result = check_source(textwrap.dedent(src), "t.py")
    assert result.error is None and not any(d.code.startswith("E") for d in result.diagnostics), result.error
    return [(d.span.line, d.code) for d in result.diagnostics]


# --- torchtext iterators without a device give cpu batches -----------------------------------------------

_TRAIN = """
    import torch
    import torch.nn as nn
    from torchtext.data import Field, TabularDataset, {ITER}

    TEXT = Field(batch_first=True)
    ds = TabularDataset(path="train.tsv", format="tsv", fields=[("text", TEXT)])
    TEXT.build_vocab(ds)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = {ITER}(ds, batch_size=32{DEVICE})


    class Classifier(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.embedding = nn.Embedding(n, 16)
            self.fc = nn.Linear(16, 1)

        def forward(self, x):
            return self.fc(self.embedding(x).mean(1))


    model = Classifier(len(TEXT.vocab)).to(device)
    for batch in loader:
        pred = model(batch.text)
"""


def _train(iterator="Iterator", device=""):
    return _TRAIN.replace("{ITER}", iterator).replace("{DEVICE}", device)


def test_iterator_given_device_none_gives_cpu_batches():
    assert _codes(_train(device=", device=None")) == [(25, "DEV202")]


def test_iterator_given_no_device_gives_cpu_batches():
    assert _codes(_train("BucketIterator")) == [(25, "DEV202")]


def test_legacy_iterator_default_is_the_cpu():
    src = _train().replace("from torchtext.data import", "from torchtext.legacy.data import")
    assert _codes(src) == [(25, "DEV202")]


def test_iterator_given_the_training_device_is_clean():
    assert _codes(_train(device=", device=device")) == []


def test_batch_moved_where_it_is_used_is_clean():
    assert _codes(_train(device=", device=None").replace("model(batch.text)", "model(batch.text.to(device))")) == []


def test_unknown_device_stays_silent():
    src = _train(device=", device=get_device()").replace("import torch\n", "import torch\n    from config import get_device\n", 1)
    assert _codes(src) == []


def test_device_spread_from_kwargs_stays_silent():
    src = _train(device=", **opts").replace("device = torch.device(", "opts = load_opts()\n    device = torch.device(")
    assert _codes(src) == []


def test_default_device_changed_by_the_program_stays_silent():
    src = _train().replace("device = torch.device(", "torch.set_default_device('cuda')\n    device = torch.device(")
    assert _codes(src) == []


def test_field_read_through_getattr_with_a_constant_name():
    src = _train(device=", device=None").replace("model(batch.text)", "model(getattr(batch, FIELD))") \
        .replace("device = torch.device(", "FIELD = 'text'\n    device = torch.device(")
    assert _codes(src) == [(26, "DEV202")]


def test_field_read_through_getattr_of_a_moving_iterator_is_clean():
    src = _train(device=", device=device").replace("model(batch.text)", "model(getattr(batch, FIELD))") \
        .replace("device = torch.device(", "FIELD = 'text'\n    device = torch.device(")
    assert _codes(src) == []


def test_trainer_class_and_files_split(tmp_path: Path):
    (tmp_path / "data.py").write_text(textwrap.dedent("""
        from torchtext.data import Field, TabularDataset, Iterator


        class MyDataset(object):
            def __init__(self, batch_size=64):
                self.TEXT = Field(batch_first=True)
                ds = TabularDataset(path="train.tsv", format="tsv", fields=[("text", self.TEXT)])
                self.TEXT.build_vocab(ds)
                self.loader = Iterator(ds, batch_size=batch_size, device=None, repeat=False)
    """))
    (tmp_path / "trainer.py").write_text(textwrap.dedent("""
        class Trainer:
            def __init__(self, model, loader):
                self.model = model
                self.loader = loader

            def run(self):
                for batch in self.loader:
                    out = self.model(batch.text)
    """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        from data import MyDataset
        from trainer import Trainer

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        data = MyDataset()
        model = nn.Sequential(nn.Embedding(100, 8), nn.Linear(8, 1)).to(device)
        Trainer(model, data.loader).run()
    """))
    # reported at the entry script's call that runs the loop (the trainer file alone runs nothing)
    assert findings(tmp_path) == ["main.py:11 DEV202"]


# --- lengths handed on to a submodule that only packs with them -----------------------------------------

_ENCODER = """
    import torch
    import torch.nn as nn
    from torch.nn.utils.rnn import pack_padded_sequence


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(100, 8)
            self.rnn = nn.LSTM(8, 8, batch_first=True)

        def forward(self, x, lengths):
            x = self.embedding(x)
            x = pack_padded_sequence(x, lengths, batch_first=True)
            return self.rnn(x)
"""

_SEQ2SEQ = """
    import torch
    import torch.nn as nn
    from {ENC} import Encoder


    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = Encoder()

        def forward(self, sentence, sentence_len):
            return self.enc(sentence, sentence_len)


    device = torch.device("cuda")
    model = Seq2Seq().to(device)
    tokens = torch.zeros(2, 5, dtype=torch.long)
    lengths = torch.tensor([5, 3])
    out = model({TOKENS}, lengths)
"""


def _split(tmp_path: Path, tokens: str) -> list[str]:
    (tmp_path / "layers.py").write_text(textwrap.dedent(_ENCODER))
    (tmp_path / "main.py").write_text(textwrap.dedent(_SEQ2SEQ.replace("{ENC}", "layers").replace("{TOKENS}", tokens)))
    return findings(tmp_path)


def test_cpu_lengths_handed_to_a_packing_submodule_in_another_file_are_clean(tmp_path: Path):
    assert _split(tmp_path, "tokens.to(device)") == []


def test_cpu_tokens_beside_them_are_still_reported(tmp_path: Path):
    # the token ids are made by a factory without device=: reported where they are made (DEV201)
    assert [g.split()[1] for g in _split(tmp_path, "tokens")] == ["DEV201"]


def test_cpu_lengths_to_a_packing_submodule_in_one_file_are_clean():
    enc = textwrap.dedent(_ENCODER)
    main = textwrap.dedent(_SEQ2SEQ.replace("from {ENC} import Encoder\n", "").replace("{TOKENS}", "tokens.to(device)"))
    assert [(d.span.line, d.code) for d in check_source(enc + main, "t.py").diagnostics] == []


def test_lengths_the_submodule_combines_with_a_tensor_are_reported():
    enc = textwrap.dedent(_ENCODER).replace("return self.rnn(x)", "return self.rnn(x)[0] * lengths")
    main = textwrap.dedent(_SEQ2SEQ.replace("from {ENC} import Encoder\n", "").replace("{TOKENS}", "tokens.to(device)"))
    # the lengths are made here by a factory without device=: reported where they are made (DEV201)
    assert [d.code for d in check_source(enc + main, "t.py").diagnostics] == ["DEV201"]


# --- nn.Sequential built from an OrderedDict of named modules --------------------------------------------

_NAMED = """
    import torch
    from torch import nn
    from collections import OrderedDict


    class FlattenLayer(nn.Module):
        def forward(self, x):
            return x.view(x.shape[0], -1)


    def evaluate_accuracy(data_iter, net, device=torch.device("cuda" if torch.cuda.is_available() else "cpu")):
        acc = 0.0
        for X, y in data_iter:
            acc += (net(X.to(device)).argmax(dim=1) == y.to(device)).float().sum().item()
        return acc


    net = nn.Sequential(OrderedDict([("flatten", FlattenLayer()), ("linear", nn.Linear(784, 10))]))
    nn.init.normal_(net.linear.weight, mean=0, std=0.01)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 784), torch.zeros(8)), batch_size=2)
    print(evaluate_accuracy(loader, net))
"""


def test_sequential_of_named_modules_is_a_model_on_the_cpu():
    assert _codes(_NAMED) == [(15, "DEV106")]


def test_sequential_of_named_modules_moved_is_clean():
    assert _codes(_NAMED.replace("print(evaluate_accuracy(loader, net))", "print(evaluate_accuracy(loader, net.to('cuda')))")) == []


def test_device_taken_from_the_net_is_clean():
    src = _NAMED.replace('device=torch.device("cuda" if torch.cuda.is_available() else "cpu")):',
                         "device=None):\n        device = list(net.parameters())[0].device")
    assert _codes(src) == []


# --- restored optimizer state placed by the code before the model moves --------------------------------

_RESUME = """
    import torch
    import torch.nn as nn
    from torch.optim import SGD


    class Checkpoint:
        def __init__(self, model, optimizer=None):
            self.model = model
            self.optimizer = optimizer

        def load(self, path):
            checkpoint = torch.load(path)
            self.model.load_state_dict(checkpoint["model_state"])
            if self.optimizer:
                self.optimizer.load_state_dict(checkpoint["optimizer_state"])
    {PLACE}

    def load_model(path):
        net = nn.Linear(4, 2)
        optimizer = SGD(net.parameters(), lr=0.1, momentum=0.9)
        Checkpoint(net, optimizer).load(path)
        if torch.cuda.is_available():
            net.cuda()
        return net, optimizer


    net, optimizer = load_model("ckpt.tar")
    for x in [torch.randn(2, 4)]:
        optimizer.zero_grad()
        net(x.cuda()).sum().backward()
        optimizer.step()
"""

_PLACE = """            for state in self.optimizer.state.values():
                    for k, v in state.items():
                        if torch.is_tensor(v):
                            state[k] = v.cuda()
"""


def test_optimizer_restored_before_the_move_is_reported():
    assert [c for _, c in _codes(_RESUME.replace("    {PLACE}\n", ""))] == ["DEV302"]


def test_restored_state_placed_by_the_code_is_clean():
    assert _codes(_RESUME.replace("    {PLACE}\n", _PLACE)) == []


def test_state_placed_one_helper_deeper_is_clean():
    src = _RESUME.replace("    {PLACE}\n", "            optimizer_to(self.optimizer)\n").replace(
        "    class Checkpoint:", "    def optimizer_to(opt):\n        for state in opt.state.values():\n"
        "            for k, v in state.items():\n                if torch.is_tensor(v):\n"
        "                    state[k] = v.cuda()\n\n\n    class Checkpoint:")
    assert _codes(src) == []
