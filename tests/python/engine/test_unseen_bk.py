"""Semantics found missing on unseen real cases, batch BK (tests/fixtures/engine/unseen/bk_*): vision, 3D,
point clouds, diffusion and the rest of what users train.

- Which side of a mix is out of place: a factory given a written-in GPU (`torch.arange(n, device="cuda:1")`,
  or a device variable bound to one) cannot follow the device the program chose at run time
  (`torch.device("cuda" if available else "cpu")`, flowing in with its model's input). When the two meet, the
  factory is the cause and the finding is anchored where it is created, not at the tensor that came in with
  the input (CrossPoint's DGCNN builds the k-NN batch offsets on a hard-coded cuda:1 while the model, its
  input and the k-NN indices are on the chosen "cuda"). The device the program chose stays the reference;
  a value on a named GPU of its own (`.to("cuda:1")`) is still compared as before.
- Lightning's `trainer.fit` runs epochs (until max_epochs, 1000 by default): the module's epoch-end hooks
  (`on_train_epoch_end`, `on_validation_epoch_end`, ...) run after an epoch's steps and before the next
  epoch's, so what they leave on the module is what the next `training_step` sees. A buffer re-registered
  there from a new cpu tensor (`register_buffer` keeps the tensor where it is, even on a module the Trainer
  already moved) meets the moved buffers in the next step (scyan ends its warm-up in `on_train_epoch_end`
  through a property setter that re-registers the prior covariance, then `MultivariateNormal(loc, cov)`).
  `validate` / `test` / `predict`, `max_epochs=1` and the once-only `on_train_end` / `on_fit_end` hooks
  do not feed another step.
- Re-registering a buffer with a tensor placed elsewhere is a change of the module's state: calls answered
  from the memo before it (the same step hook with the same arguments) run again."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics)


# --- a factory on a written-in GPU meets the program's chosen device -----------------------------------------

_DGCNN = """
    import argparse
    import torch
    from torch import nn


    def knn(x, k):
        inner = -2 * torch.matmul(x.transpose(2, 1), x)
        xx = torch.sum(x ** 2, dim=1, keepdim=True)
        return (-xx - inner - xx.transpose(2, 1)).topk(k=k, dim=-1)[1]


    def get_graph_feature(x, k=20):
        batch_size, num_points = x.size(0), x.size(2)
        idx = knn(x, k=k)
        DEVICE_LINE
        idx_base = torch.arange(0, batch_size, device=device).view(-1, 1, 1) * num_points
        idx = idx + idx_base
        return x.view(batch_size * num_points, -1)[idx.view(-1), :]


    class DGCNN(nn.Module):
        def __init__(self, k=20):
            super().__init__()
            self.k = k
            self.conv = nn.Conv1d(3, 64, 1)

        def forward(self, x):
            return get_graph_feature(self.conv(x), k=self.k)


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--no_cuda", action="store_true")
        args = parser.parse_args()
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        device = torch.device("cuda" if args.cuda else "cpu")
        model = DGCNN().to(device)
        data = torch.randn(8, 3, 1024).to(device)
        model(data)
"""


def _dgcnn(device_line: str) -> str:
    return _DGCNN.replace("DEVICE_LINE", device_line)


def test_hard_coded_gpu_factory_is_blamed_where_it_is_created():
    # line 17: the arange on cuda:1 (not line 15, the knn() indices that came in with the input)
    assert _codes(_dgcnn("device = torch.device('cuda:1')")) == [(17, "DEV202")]


def test_renamed_and_literal_device_kwarg():
    src = _dgcnn("pass").replace("device=device", 'device="cuda:1"').replace("idx_base", "offsets")
    assert _codes(src) == [(17, "DEV202")]


def test_helper_in_another_file_one_call_deeper(tmp_path: Path):
    (tmp_path / "graph_ops.py").write_text(textwrap.dedent("""
        import torch


        def batch_offsets(batch_size, num_points):
            return torch.arange(0, batch_size, device=torch.device("cuda:1")).view(-1, 1, 1) * num_points


        def gather_neighbours(x, idx):
            batch_size, num_points = x.size(0), x.size(2)
            idx = idx + batch_offsets(batch_size, num_points)
            return x.reshape(batch_size * num_points, -1)[idx.view(-1), :]
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        from graph_ops import gather_neighbours


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(3, 8, 1)

            def forward(self, x):
                h = self.conv(x)
                idx = h.topk(4, dim=-1)[1]
                return gather_neighbours(h, idx)


        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.model = Net().to(self.device)

            def step(self, batch):
                return self.model(batch.to(self.device))


        if __name__ == "__main__":
            Trainer().step(torch.randn(2, 3, 16))
    """))
    ops = [(d.span.line, d.code) for d in check_path(str(tmp_path / "graph_ops.py")).diagnostics]
    assert ops == [(6, "DEV202")]  # the factory on cuda:1, not the incoming indices (line 11)


def test_fixed_twin_follows_the_chosen_device_and_is_silent():
    assert _codes(_dgcnn("device = torch.device('cuda')")) == []
    assert _codes(_dgcnn("device = x.device")) == []


def test_unknown_device_stays_silent():
    # the program's device comes from the command line: cuda:1 may be that very device
    src = _dgcnn("device = torch.device('cuda:1')").replace(
        'torch.device("cuda" if args.cuda else "cpu")', "torch.device(args.device)").replace(
        'parser.add_argument("--no_cuda", action="store_true")', 'parser.add_argument("--device", default="cuda:1")')
    assert _codes(src) == []


def test_named_gpu_program_still_blames_the_bare_cuda_value():
    # the program itself runs on cuda:1: the tensor sent to the *current* GPU by `.cuda()` is out of place
    src = """
        import torch
        from torch import nn

        model = nn.Linear(4, 4).to("cuda:1")
        x = torch.randn(2, 4, device="cuda:1")
        y = torch.randn(2, 4).cuda()
        z = x + y
    """
    assert _codes(src) == [(7, "DEV202")]


# --- Lightning: an epoch-end hook's state reaches the next epoch's steps -----------------------------------

_PL = """
    import pytorch_lightning as pl
    import torch
    from torch import distributions


    class Flow(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)
            self.register_buffer("loc", torch.zeros(3))
            self.register_buffer("cov", torch.eye(3))

        def training_step(self, batch, batch_idx):
            u = self.lin(batch)
            return -distributions.MultivariateNormal(self.loc, self.cov).log_prob(u).mean()

        def HOOK(self):
            NEW_COV

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)


    loader = torch.utils.data.DataLoader(torch.randn(64, 3), batch_size=8)
    trainer = pl.Trainer(accelerator="gpu"TRAINER_ARGS)
    trainer.RUN(Flow(), loader)
"""


def _pl(new_cov='self.register_buffer("cov", torch.eye(3) * 0.5)', hook="on_train_epoch_end", run="fit",
        trainer_args="") -> list[tuple[int, str]]:
    return _codes(_PL.replace("NEW_COV", new_cov).replace("HOOK", hook).replace("RUN", run)
                  .replace("TRAINER_ARGS", trainer_args))


def test_buffer_re_registered_on_cpu_at_epoch_end_meets_the_next_step():
    assert _pl() == [(19, "DEV201")]


def test_plain_attribute_rebuilt_at_validation_epoch_end():
    assert _pl("self.cov = torch.eye(3) * 0.5", hook="on_validation_epoch_end") == [(19, "DEV201")]


def test_property_setter_of_a_submodule_in_another_file(tmp_path: Path):
    (tmp_path / "prior.py").write_text(textwrap.dedent("""
        import pytorch_lightning as pl
        import torch
        from torch import distributions


        class Prior(pl.LightningModule):
            def __init__(self, n, std):
                super().__init__()
                self.n = n
                self.register_buffer("loc", torch.zeros(n))
                self.std = std

            @property
            def std(self):
                return self._std

            @std.setter
            def std(self, value):
                self._std = value
                self.register_buffer("cov", torch.eye(self.n) * value ** 2)

            def log_prob(self, u):
                return distributions.MultivariateNormal(self.loc, self.cov).log_prob(u)
    """))
    (tmp_path / "model.py").write_text(textwrap.dedent("""
        import pytorch_lightning as pl
        import torch

        from prior import Prior


        class Annotator(pl.LightningModule):
            def __init__(self, warm_up=4):
                super().__init__()
                self.warm_up = warm_up
                self.flow = torch.nn.Linear(5, 5)
                self.prior = Prior(5, 0.35)

            def training_step(self, batch, _):
                return -self.prior.log_prob(self.flow(batch)).mean()

            def on_train_epoch_end(self):
                if self.current_epoch == self.warm_up - 1:
                    self.prior.std = 0.3

            def configure_optimizers(self):
                return torch.optim.Adam(self.parameters())

            def fit(self, loader, **trainer_args):
                pl.Trainer(max_epochs=100, **trainer_args).fit(self, loader)
                return self


        if __name__ == "__main__":
            Annotator().fit(torch.utils.data.DataLoader(torch.randn(32, 5)), accelerator="gpu")
    """))
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "prior.py")).diagnostics] == [(21, "DEV201")]
    fixed = (tmp_path / "prior.py").read_text().replace("torch.eye(self.n)", "torch.eye(self.n, device=self.device)")
    (tmp_path / "prior.py").write_text(fixed)
    assert check_path(str(tmp_path / "prior.py")).diagnostics == []


def test_re_registered_on_the_module_device_is_silent():
    assert _pl('self.register_buffer("cov", torch.eye(3, device=self.device) * 0.5)') == []
    assert _pl('self.register_buffer("cov", (torch.eye(3) * 0.5).to(self.device))') == []


def test_one_epoch_or_one_pass_or_after_the_last_epoch_is_silent():
    assert _pl(trainer_args=", max_epochs=1") == []
    assert _pl(run="validate") == []
    assert _pl(hook="on_train_end") == []
    assert _pl(hook="on_fit_end") == []
