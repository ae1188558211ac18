"""Semantics found missing on unseen real cases, batch AJ (tests/fixtures/engine/unseen/aj_*): the code most
users write (course notebooks, study repos, research scripts grown from tutorials).

- Assignments of one attribute in different branches of an `if` are alternatives, not a reassignment: each
  is the attribute's only value on its path. Recurrent cells kept in a plain list chosen by an
  `if GRU / elif LSTM / else RNN` chain (`self.rnn_cell = [nn.GRUCell(...)]` in each branch) are
  unregistered on every path, so `.to(device)` leaves all of them on the cpu (DEV103, l2race#2). Two
  assignments that can run one after the other (`self.layers = nn.ModuleList(self.layers)` after the list)
  still count as a reassignment that may register them; another plain list (re-made in a helper method or
  in `rebuild()`) registers nothing: the first plain list is reported, and one per branch.
- A DataLoader batch is moved where it is used, so every loop (or function) that feeds it unmoved to the
  model is a bug of its own with its own fix: two evaluation loops over the same test loader written after
  training (overall accuracy, then per-class accuracy counted by hand) are two findings, not one per loader
  (DEV202, gyunggyung/PyTorch#6). Within one loop the batch is reported once.
- `config[key] = v` on a value the engine knows nothing of (a yaml / json config) makes it a mapping whose
  entry `key` is `v`, its other entries unknown: the device a config helper stores there
  (`config["device"] = th.device(...)`) is what `options["device"]` reads back in the trainer built from it,
  through returns, calls and files (DEV201 on the GRU hidden state, talipucar/CPC#1), and kept on an instance
  (`self.cfg["device"] = ...`). Only string keys (a tensor or list is not indexed by one), and only a name
  bound in the frame that stores or an attribute of a project object.
- A torch module gets every tensor of a tuple / list argument, also when its elements are known only
  together (built by a comprehension, `tuple(...)`, `list(...)`): all of them are on their joined device.
  The hidden state an RNN tutorial re-packs each batch, `h = tuple([each.data for each in h])`, is still the
  cpu state `init_hidden()` made with torch.zeros, and it meets the GPU LSTM.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- cells in a plain list chosen by an if-chain -------------------------------------------------------

_CELLS = """
    import torch
    import torch.nn as nn


    class Sequence(nn.Module):
        def __init__(self, kind, sizes):
            super().__init__()
            if kind == 'GRU':
                self.cells = [nn.GRUCell(4, sizes[0])]
                for i in range(len(sizes) - 1):
                    self.cells.append(nn.GRUCell(sizes[i], sizes[i + 1]))
            elif kind == 'LSTM':
                self.cells = [nn.LSTMCell(4, sizes[0])]
            else:
                self.cells = [nn.RNNCell(4, sizes[0])]
            self.linear = nn.Linear(sizes[-1], 2)
            self.to(torch.device('cuda'))

        def step(self, x, h):
            return self.linear(self.cells[0](x, h))
"""


def test_cells_in_a_list_chosen_by_an_if_chain_are_each_reported():
    assert _codes(_CELLS) == [(10, "DEV103"), (14, "DEV103"), (16, "DEV103")]


def test_two_branches_one_list_each_renamed():
    src = """
        import torch.nn as nn


        class Heads(nn.Module):
            def __init__(self, wide):
                super().__init__()
                if wide:
                    self.blocks = []
                    self.blocks.append(nn.Linear(8, 8))
                else:
                    self.blocks = [nn.Conv1d(4, 4, 3)]
    """
    assert _codes(src) == [(9, "DEV103"), (12, "DEV103")]


def test_list_then_module_list_in_sequence_stays_silent():
    src = """
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self, kind):
                super().__init__()
                if kind == 'a':
                    self.layers = [nn.Linear(4, 4)]
                else:
                    self.layers = [nn.Linear(4, 8)]
                self.layers = nn.ModuleList(self.layers)
    """
    assert _codes(src) == []


def test_one_branch_module_list_other_plain_list_reports_the_plain_one():
    src = """
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self, kind):
                super().__init__()
                if kind == 'a':
                    self.layers = nn.ModuleList([nn.Linear(4, 4)])
                else:
                    self.layers = [nn.Linear(4, 8)]
    """
    assert _codes(src) == [(11, "DEV103")]


def test_a_list_remade_in_another_method_registers_nothing_one_finding():
    src = """
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = [nn.Linear(4, 4)]

            def rebuild(self):
                self.layers = [nn.Linear(4, 8)]
    """
    assert _codes(src) == [(8, "DEV103")]


def test_cells_moved_one_by_one_in_each_branch_stay_silent():
    src = _CELLS.replace("sizes[0])]", "sizes[0]).cuda()]").replace("sizes[i + 1]))", "sizes[i + 1]).cuda())")
    assert _codes(src) == []


def test_split_into_files_with_star_import(tmp_path: Path):
    (tmp_path / "cells.py").write_text(textwrap.dedent(_CELLS))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        from cells import *

        net = Sequence('LSTM', [8, 8])
    """))
    got = sorted((f, d.span.line, d.code) for f in ("cells.py", "train.py")
                 for d in check_path(str(tmp_path / f)).diagnostics)
    assert got == [("cells.py", 10, "DEV103"), ("cells.py", 14, "DEV103"), ("cells.py", 16, "DEV103")]


# --- one report per loop that uses a loader's batch unmoved ----------------------------------------------

_LOOPS = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    testloader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
    net = nn.Linear(4, 2).cuda()

    correct = 0
    for images, labels in testloader:
        outputs = net(images)
        correct += (outputs.argmax(1) == labels).sum()

    class_correct = [0. for i in range(2)]
    for images, labels in testloader:
        outputs = net(images)
        c = (outputs.argmax(1) == labels).squeeze()
"""


def test_two_loops_over_one_loader_are_two_findings():
    assert _codes(_LOOPS) == [(11, "DEV202"), (16, "DEV202")]


def test_one_loop_two_unmoved_uses_is_one_finding():
    src = _LOOPS.replace("        c = (outputs.argmax(1) == labels).squeeze()\n",
                         "        c = (outputs.argmax(1) == labels).squeeze()\n        more = net(images * 2)\n")
    assert _codes(src) == [(11, "DEV202"), (16, "DEV202")]


def test_two_loops_moved_stay_silent():
    src = _LOOPS.replace("    for images, labels in testloader:\n",
                         "    for images, labels in testloader:\n        images, labels = images.cuda(), labels.cuda()\n")
    assert _codes(src) == []


def test_evaluate_helpers_in_a_trainer_class():
    src = """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader


        class Trainer:
            def __init__(self, dataset):
                self.device = torch.device("cuda")
                self.model = nn.Linear(4, 2).to(self.device)
                self.loader = DataLoader(dataset, batch_size=4)

            def accuracy(self):
                hits = 0
                for x, y in self.loader:
                    hits += (self.model(x).argmax(1) == y.to(self.device)).sum()
                return hits

            def per_class(self):
                counts = [0, 0]
                for x, y in self.loader:
                    pred = self.model(x).argmax(1)
                    counts[0] += (pred == 0).sum()
                return counts


        t = Trainer(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))))
        t.accuracy()
        t.per_class()
    """
    assert [c for c in _codes(src) if c[1] == "DEV202"] == [(16, "DEV202"), (22, "DEV202")]


# --- an item stored into a config of unknown origin ---------------------------------------------------

_CFG = """
    import yaml
    import torch as th
    from torch import nn


    class CPC(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(input_size=8, hidden_size=8, num_layers=2, batch_first=True)

        def forward(self, x, hidden):
            output, hidden = self.gru(x, hidden)
            return output


    class Model:
        def __init__(self, options):
            self.device = options["device"]
            self.cpc = CPC()
            self.cpc.to(self.device)

        def fit(self, loader):
            for xb in loader:
                xb = xb.to(self.device)
                hidden = th.zeros(2, 4, 8)
                self.cpc(xb, hidden)


    def get_config():
        with open("runtime.yaml") as f:
            config = yaml.safe_load(f)
        config["device"] = th.device('cuda' if th.cuda.is_available() else 'cpu')
        return config


    Model(get_config()).fit([th.randn(4, 3, 8)])
"""


def test_device_stored_in_a_yaml_config_reaches_the_trainer():
    assert _codes(_CFG) == [(26, "DEV201")]


def test_json_config_and_other_key_names():
    src = _CFG.replace("import yaml", "import json").replace("yaml.safe_load(f)", "json.load(f)") \
        .replace('"device"', '"run_on"')
    assert _codes(src) == [(26, "DEV201")]


def test_hidden_made_on_the_config_device_stays_silent():
    assert _codes(_CFG.replace("th.zeros(2, 4, 8)", "th.zeros((2, 4, 8), device=self.device)")) == []


def test_other_entries_of_the_config_stay_unknown():
    src = _CFG.replace('self.device = options["device"]', 'self.device = options["gpu"]')
    assert _codes(src) == []


def test_integer_key_on_an_unknown_value_is_not_a_mapping():
    src = """
        import torch
        import torch.nn as nn

        def load():
            return torch.load("x.pt", map_location="cpu")

        net = nn.Linear(4, 4).cuda()
        t = load()
        t[0] = torch.device("cuda")
        out = net(t[0])
    """
    assert _codes(src) == []


def test_config_built_in_another_file(tmp_path: Path):
    model_part = textwrap.dedent(_CFG).split("def get_config():")[0].replace("import yaml\n", "")
    (tmp_path / "arguments.py").write_text(textwrap.dedent("""
        import yaml
        import torch as th


        def get_config():
            with open("runtime.yaml") as f:
                config = yaml.safe_load(f)
            config["device"] = th.device('cuda' if th.cuda.is_available() else 'cpu')
            return config
    """))
    (tmp_path / "train.py").write_text(model_part + textwrap.dedent("""
        from arguments import get_config

        if __name__ == "__main__":
            config = get_config()
            Model(config).fit([th.randn(4, 3, 8)])
    """))
    got = [(d.span.line, d.code) for d in check_path(str(tmp_path / "train.py")).diagnostics]
    assert got == [(25, "DEV201")]


def test_config_kept_on_a_trainer_instance():
    src = """
        import yaml
        import torch
        import torch.nn as nn


        class Trainer:
            def __init__(self, path):
                with open(path) as f:
                    self.cfg = yaml.safe_load(f)
                self.cfg["device"] = torch.device("cuda")
                self.model = nn.GRU(8, 8).to(self.cfg["device"])

            def step(self, x):
                x = x.to(self.cfg["device"])
                h0 = torch.zeros(1, 4, 8)
                return self.model(x, h0)


        Trainer("c.yaml").step(torch.randn(3, 4, 8))
    """
    assert _codes(src) == [(16, "DEV201")]
    assert _codes(src.replace("torch.zeros(1, 4, 8)", "torch.zeros(1, 4, 8, device=x.device)")) == []


def test_each_branch_calls_its_own_helper_method():
    src = """
        import torch.nn as nn


        class Sequence(nn.Module):
            def __init__(self, kind):
                super().__init__()
                if kind == 'GRU':
                    self._gru()
                else:
                    self._lstm()
                self.linear = nn.Linear(8, 2)

            def _gru(self):
                self.cells = [nn.GRUCell(4, 8)]

            def _lstm(self):
                self.cells = [nn.LSTMCell(4, 8)]
    """
    assert _codes(src) == [(15, "DEV103")]


# --- a hidden state re-packed by a comprehension ---------------------------------------------------------

_RNN = """
    import torch
    import torch.nn as nn


    class SentimentRNN(nn.Module):
        def __init__(self, vocab, hidden_dim, n_layers):
            super().__init__()
            self.n_layers = n_layers
            self.hidden_dim = hidden_dim
            self.embedding = nn.Embedding(vocab, 64)
            self.lstm = nn.LSTM(64, hidden_dim, n_layers, batch_first=True)
            self.fc = nn.Linear(hidden_dim, 1)

        def forward(self, x, hidden):
            lstm_out, hidden = self.lstm(self.embedding(x), hidden)
            return self.fc(lstm_out[:, -1]), hidden

        def init_hidden(self, batch_size):
            h0 = torch.zeros(self.n_layers, batch_size, self.hidden_dim)
            c0 = torch.zeros(self.n_layers, batch_size, self.hidden_dim)
            return (h0, c0)


    train_on_gpu = torch.cuda.is_available()
    net = SentimentRNN(1000, 256, 2)
    if train_on_gpu:
        net.cuda()
    data = torch.utils.data.TensorDataset(torch.randint(0, 1000, (64, 20)), torch.rand(64))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    for epoch in range(2):
        h = net.init_hidden(8)
        for inputs, labels in loader:
            if train_on_gpu:
                inputs, labels = inputs.cuda(), labels.cuda()
            h = tuple([each.data for each in h])
            output, h = net(inputs, h)
"""


def test_hidden_state_repacked_by_a_comprehension_meets_the_gpu_lstm():
    assert _codes(_RNN) == [(32, "DEV202")]


def test_repacked_by_a_generator_or_list():
    for repack in ("tuple(each.detach() for each in h)", "list(h)", "[e for e in h]"):
        assert _codes(_RNN.replace("tuple([each.data for each in h])", repack)) == [(32, "DEV202")], repack


def test_hidden_made_on_the_weights_device_stays_silent():
    src = _RNN.replace("""            h0 = torch.zeros(self.n_layers, batch_size, self.hidden_dim)
            c0 = torch.zeros(self.n_layers, batch_size, self.hidden_dim)""",
                       """            weight = next(self.parameters()).data
            h0 = weight.new(self.n_layers, batch_size, self.hidden_dim).zero_()
            c0 = weight.new(self.n_layers, batch_size, self.hidden_dim).zero_()""")
    assert _codes(src) == []


def test_hidden_moved_while_repacked_stays_silent():
    src = _RNN.replace("tuple([each.data for each in h])", "tuple(each.data.cuda() for each in h)")
    assert _codes(src) == []


def test_direct_lstm_call_with_a_list_of_states():
    src = """
        import torch
        import torch.nn as nn

        lstm = nn.LSTM(8, 16).to("cuda")
        x = torch.randn(5, 4, 8, device="cuda")
        states = [torch.zeros(1, 4, 16) for _ in range(2)]
        out = lstm(x, tuple(states))
    """
    assert _codes(src) == [(7, "DEV201")]
