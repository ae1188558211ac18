"""Semantics found missing by the unseen batch J (tests/fixtures/engine/unseen/j_*), tested on the
variations a user writes and on the neighbours that must stay silent:
- a torch container built empty and filled later (`nn.Sequential()` + `add_module(name, m)`,
  `nn.ModuleList()` + `append(m)`) runs those children and is placed where they are, as if they had been
  given to its constructor; a model holding it, never moved, is on the cpu."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


_NET = '''
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self, widths):
            super().__init__()
            self.body = nn.Sequential()
            for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
                self.body.add_module(name="L%i" % i, module=nn.Linear(a, b))
                self.body.add_module("A%i" % i, nn.ReLU())

        def forward(self, x):
            return self.body(x)
'''


def test_sequential_filled_by_add_module_in_another_file_inside_a_trainer(tmp_path):
    _project(tmp_path, {"net.py": _NET, "train.py": '''
        import torch
        from net import Net

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


        class Trainer:
            def __init__(self, model):
                self.model = model

            def step(self, x):
                x = x.to(DEVICE)
                return self.model(x)


        Trainer(Net([4, 8, 2])).step(torch.rand(3, 4))
    '''})
    assert _codes(tmp_path, "train.py") == [(13, "DEV106")]


def test_module_list_filled_by_append_renamed(tmp_path):
    _project(tmp_path, {"m.py": '''
        import torch
        from torch import nn

        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")


        class Stack(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList()
                for _ in range(2):
                    self.blocks.append(nn.Linear(4, 4))

            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                return x


        net = Stack()
        net(torch.rand(2, 4).to(dev))
    '''})
    assert _codes(tmp_path, "m.py") == [(21, "DEV106")]


def test_silent_when_the_filled_model_is_moved_or_the_child_is_unknown(tmp_path):
    _project(tmp_path, {"net.py": _NET, "ok.py": '''
        import torch
        from net import Net

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        model = Net([4, 8, 2]).to(DEVICE)
        model(torch.rand(3, 4).to(DEVICE))
    ''', "unknown.py": '''
        import torch
        from torch import nn
        from somewhere import make_block

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        seq = nn.Sequential()
        seq.add_module("block", make_block())
        seq(torch.rand(3, 4).to(DEVICE))
    ''', "moved_first.py": '''
        import torch
        from torch import nn

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        seq = nn.Sequential().to(DEVICE)
        seq.add_module("lin", nn.Linear(4, 4).to(DEVICE))
        seq(torch.rand(3, 4).to(DEVICE))
    '''})
    assert _codes(tmp_path, "ok.py") == []
    assert _codes(tmp_path, "unknown.py") == []
    assert _codes(tmp_path, "moved_first.py") == []


def test_silent_when_a_name_is_added_again(tmp_path):
    # the second add_module("body", ...) replaces the first child: which one runs is not tracked
    _project(tmp_path, {"r.py": '''
        import torch
        from torch import nn

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        seq = nn.Sequential()
        seq.add_module("body", nn.Linear(4, 4))
        seq.add_module("body", nn.Linear(4, 4, device=DEVICE))
        seq(torch.rand(3, 4).to(DEVICE))
    '''})
    assert _codes(tmp_path, "r.py") == []
