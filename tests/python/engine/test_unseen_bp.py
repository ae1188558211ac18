"""Semantics found missing on unseen real cases, batch BP (tests/fixtures/engine/unseen/bp_*): the training
machinery (DataParallel, collectives, resume).

- `Module.__call__` looks `forward` up on the instance first, and DataParallel's `replicate()` gives each replica
  a copy of the module's instance `__dict__` (`_replicate_for_data_parallel`). A forward overridden on the
  instance (`model.forward = model.forward`, `self.forward = self.fast_forward`: a method bound to the original
  module) is copied as it is, so over several GPUs every replica runs the original module, whose parameters sit
  on device_ids[0], on the input chunk scattered to its own GPU: DEV106 at the DataParallel call (NNCF PR 3310).
  One GPU (`device_ids=[0]`), no override, a forward not bound to the module, or a module of unknown device
  stay silent."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- an instance-level forward under DataParallel --------------------------------------------------------------

_REPRO = """
    import torch
    from torch import nn

    x = torch.ones([10, 1, 3, 3]).cuda()
    model = nn.Conv2d(1, 1, 1).cuda()
    model.forward = model.forward
    parallel_model = torch.nn.DataParallel(model)
    out = parallel_model(x)
"""


def test_instance_forward_of_a_library_module_under_data_parallel():
    assert _codes(_REPRO) == [(9, "DEV106")]


def test_no_override_is_silent():
    assert _codes(_REPRO.replace("    model.forward = model.forward\n", "")) == []


def test_one_gpu_is_silent():
    assert _codes(_REPRO.replace("DataParallel(model)", "DataParallel(model, device_ids=[0])")) == []


def test_forward_not_bound_to_the_module_is_silent():
    assert _codes(_REPRO.replace("model.forward = model.forward", "model.forward = lambda t: t")) == []


_CLASS = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 8, 3)
            self.forward = self.fast_forward

        def fast_forward(self, x):
            return self.conv(x)

        def forward(self, x):
            return self.conv(x).relu()


    def main():
        device = torch.device("cuda")
        net = Net().to(device)
        net = nn.DataParallel(net)
        for _ in range(3):
            y = net(torch.randn(8, 1, 16, 16).to(device))
"""


def test_forward_assigned_in_init_of_a_project_class():
    assert _codes(_CLASS) == [(24, "DEV106")]


def test_project_class_without_the_override_is_silent():
    assert _codes(_CLASS.replace("            self.forward = self.fast_forward\n", "")) == []


_TRAINER = """
    import torch
    from torch import nn


    def patch_forward(module):
        module.forward = module.forward
        return module


    class Trainer:
        def __init__(self, model):
            self.device = torch.device("cuda")
            model = patch_forward(model.to(self.device))
            self.model = nn.DataParallel(model)

        def train_step(self, batch):
            return self.model(batch.to(self.device)).mean()


    trainer = Trainer(nn.Linear(16, 4))
    loss = trainer.train_step(torch.randn(32, 16))
"""


def test_override_in_a_helper_inside_a_trainer_class():
    assert _codes(_TRAINER) == [(18, "DEV106")]


def test_module_of_unknown_device_is_silent():
    src = _TRAINER.replace("model.to(self.device)", "model").replace(
        "trainer = Trainer(nn.Linear(16, 4))", "def build(m):\n        return Trainer(m)")
    src = src.replace("    loss = trainer.train_step(torch.randn(32, 16))\n", "")
    assert _codes(src) == []


def test_split_into_files(tmp_path: Path):
    (tmp_path / "models.py").write_text(textwrap.dedent("""
        from torch import nn


        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 4)
                self.forward = self.infer

            def infer(self, x):
                return self.fc(x)
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn
        from models import Head

        if __name__ == "__main__":
            model = nn.DataParallel(Head().cuda())
            out = model(torch.randn(8, 16).cuda())
    """))
    res = check_path(str(tmp_path / "train.py"))
    assert [(d.span.line, d.code) for d in res.diagnostics] == [(8, "DEV106")]
