"""Semantics found missing on unseen real cases, batch BA (tests/fixtures/engine/unseen/ba_*): the training
loop's machinery (trainers, resume, checkpoints, metrics).

- A boolean attribute an `if` sets on one path only holds either value after the `if`: `self.cpu = cpu` then
  `if cuda and not self.cpu: ... else: self.device = cpu; self.cpu = True` leaves `self.cpu` unknown, not the
  constant True, so `torch.device("cpu") if self.cpu else self.device` is not read as the cpu (fairchem's
  BaseTrainer, whose fixed resume moves the rebuilt element references `.to(map_location)`).
- `.to()` of a torch_geometric Batch / Data (or a transformers BatchEncoding) moves the object in place
  wherever the call is written: after `out = self.model(batch.to(self.device))` the name `batch` holds the
  moved batch, as after the statement `batch.to(device)`.
- A function that moves such a batch it was given moves its caller's batch: after `out = self._forward(batch)`
  (which runs `self.model(batch.to(self.device))`) the caller's `batch` is the moved batch, also when the call
  is answered from the memo (fairchem's OCPTrainer computes the loss from `batch` next)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- a flag set on one branch ------------------------------------------------------------------------------

_TRAINER = """
    import argparse
    import torch
    from torch import nn


    class Trainer:
        def __init__(self, cpu: bool = False):
            self.cpu = cpu
            if torch.cuda.is_available() and not self.cpu:
                self.device = torch.device("cuda:0")
            else:
                self.device = torch.device("cpu")
                self.cpu = True
            self.model = nn.Linear(4, 4).to(self.device)

        def load(self):
            map_location = torch.device("cpu") if self.cpu else self.device
            self.refs = {"e": nn.Linear(4, 4).to(map_location)}

        def step(self, x):
            x = x.to(self.device)
            return self.refs["e"](self.model(x))


    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    t = Trainer(cpu=args.cpu)
    t.load()
    t.step(torch.randn(2, 4))
"""


def test_flag_set_on_one_branch_is_not_a_constant():
    assert _codes(_TRAINER) == []


def test_flag_set_on_one_branch_renamed_and_negated():
    src = _TRAINER.replace("self.cpu", "self.force_cpu").replace("if self.force_cpu else self.device",
                                                                  "if self.force_cpu else self.device")
    src = src.replace("torch.device(\"cpu\") if self.force_cpu else self.device",
                      "self.device if not self.force_cpu else torch.device(\"cpu\")")
    assert _codes(src) == []


def test_flag_set_on_one_branch_tested_in_a_helper_of_a_subclass():
    src = _TRAINER.replace("""        def load(self):
            map_location = torch.device("cpu") if self.cpu else self.device
""", """        def _map_location(self):
            return torch.device("cpu") if self.cpu else self.device

        def load(self):
            map_location = self._map_location()
""").replace("t = Trainer(cpu=args.cpu)", "class OCPTrainer(Trainer):\n        pass\n\n\n    t = OCPTrainer(cpu=args.cpu)")
    assert _codes(src) == []


def test_flag_set_on_both_branches_to_the_same_value_stays_known():
    # both paths leave the flag True: the cpu side is taken, and the cpu module meets the GPU output
    src = _TRAINER.replace("""                self.device = torch.device("cuda:0")
            else:""", """                self.device = torch.device("cuda:0")
                self.cpu = True
            else:""")
    assert _codes(src) == [(24, "DEV106")]


def test_flag_set_unconditionally_stays_known():
    src = _TRAINER.replace("            self.cpu = cpu\n", "            self.cpu = True\n")
    src = src.replace("""            if torch.cuda.is_available() and not self.cpu:
                self.device = torch.device("cuda:0")
            else:
                self.device = torch.device("cpu")
                self.cpu = True
""", """            self.device = torch.device("cuda:0")
""")
    assert _codes(src) == [(19, "DEV106")]


# --- a batch object moved in place inside an expression ------------------------------------------------------

_GRAPH = """
    import torch
    import torch.nn.functional as F
    from torch_geometric.datasets import Planetoid
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GCNConv


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = GCNConv(16, 1)

        def forward(self, data):
            return self.conv(data.x, data.edge_index)


    device = torch.device("cuda")
    model = Net().to(device)
    loader = DataLoader(Planetoid("/tmp/Cora", "Cora"), batch_size=4)
    for data in loader:
        out = model(data.to(device))
        loss = F.mse_loss(out.squeeze(-1), data.y.float())
"""


def test_graph_batch_moved_inside_a_call_argument():
    assert _codes(_GRAPH) == []


def test_graph_batch_moved_inside_a_call_argument_in_a_trainer_method():
    src = _GRAPH.replace("""    for data in loader:
        out = model(data.to(device))
        loss = F.mse_loss(out.squeeze(-1), data.y.float())
""", """    class Trainer:
        def __init__(self, model, device):
            self.model, self.device = model, device

        def train_step(self, batch):
            out = self.model(batch.to(self.device))
            return F.mse_loss(out.squeeze(-1), batch.y.float())


    trainer = Trainer(model, device)
    for data in loader:
        trainer.train_step(data)
""")
    assert _codes(src) == []


def test_graph_batch_never_moved_is_still_reported():
    src = _GRAPH.replace("out = model(data.to(device))", "out = model(data)")
    assert _codes(src) != []


def test_graph_batch_moved_in_place_split_into_files(tmp_path: Path):
    (tmp_path / "net.py").write_text(textwrap.dedent("""
        import torch
        from torch_geometric.nn import GCNConv


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = GCNConv(16, 1)

            def forward(self, data):
                return self.conv(data.x, data.edge_index)
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn.functional as F
        from torch_geometric.datasets import Planetoid
        from torch_geometric.loader import DataLoader

        from net import Net

        device = torch.device("cuda")
        model = Net().to(device)
        for data in DataLoader(Planetoid("/tmp/Cora", "Cora"), batch_size=4):
            pred = model(data.to(device)).squeeze(-1)
            print(F.l1_loss(pred, data.y.float()).item())
    """))
    assert [d.code for d in check_path(tmp_path).diagnostics] == []


# --- a batch moved in place by the function it is passed to ---------------------------------------------------

_OCP = """
    import torch
    import torch.nn.functional as F
    from torch_geometric.datasets import Planetoid
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GCNConv


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = GCNConv(16, 1)

        def forward(self, data):
            return self.conv(data.x, data.edge_index)


    class OCPTrainer:
        def __init__(self):
            self.device = torch.device("cuda")
            self.model = Net().to(self.device)
            self.loader = DataLoader(Planetoid("/tmp/Cora", "Cora"), batch_size=4)

        def _forward(self, batch):
            return self.model(batch.to(self.device))

        def _compute_loss(self, out, batch):
            return F.mse_loss(out.squeeze(-1), batch.y.float())

        def train(self):
            for batch in self.loader:
                out = self._forward(batch)
                loss = self._compute_loss(out, batch)
                loss.backward()


    OCPTrainer().train()
"""


def test_batch_moved_in_place_by_a_method_is_moved_for_the_caller():
    assert _codes(_OCP) == []


def test_batch_moved_in_place_by_a_function_passed_by_keyword():
    src = _OCP.replace("""        def _forward(self, batch):
            return self.model(batch.to(self.device))
""", """        def _forward(self, batch):
            return forward_on(self.model, data=batch, device=self.device)
""").replace("    class OCPTrainer:", """    def forward_on(model, data, device):
        data.to(device)
        return model(data)


    class OCPTrainer:""")
    assert _codes(src) == []


def test_batch_rebound_in_the_callee_is_not_the_callers():
    # the callee moves a new batch it made, not the one it was given: the caller's stays on the cpu
    src = _OCP.replace("""        def _forward(self, batch):
            return self.model(batch.to(self.device))
""", """        def _forward(self, batch):
            batch = batch.clone()
            return self.model(batch.to(self.device))
""")
    assert _codes(src) != []


def test_batch_moved_in_place_by_a_method_split_into_files(tmp_path: Path):
    head, trainer = _OCP.split("    class OCPTrainer:")
    (tmp_path / "net.py").write_text(textwrap.dedent(head))
    (tmp_path / "trainer.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn.functional as F
        from torch_geometric.datasets import Planetoid
        from torch_geometric.loader import DataLoader

        from net import Net


        class OCPTrainer:""" + textwrap.dedent("    " + trainer).split("\n", 1)[1]))
    assert [d.code for d in check_path(tmp_path).diagnostics] == []


def test_batch_moved_on_one_branch_of_the_callee_is_not_known_moved_for_the_caller():
    # moved only where `self.on_gpu` holds: after the call the caller's batch may be on either device, and the
    # cpu tensor it meets is not reported as meeting a GPU batch
    src = _OCP.replace("""        def _forward(self, batch):
            return self.model(batch.to(self.device))
""", """        def _forward(self, batch):
            if self.on_gpu:
                batch.to(self.device)
            return self.model(batch)
""").replace("""            self.device = torch.device("cuda")
""", """            self.device = torch.device("cuda")
            self.on_gpu = torch.cuda.device_count() > 0
""").replace("""            return F.mse_loss(out.squeeze(-1), batch.y.float())""", """            return F.mse_loss(batch.y.float(), torch.zeros(batch.y.shape[0]))""")
    assert _codes(src) == []
