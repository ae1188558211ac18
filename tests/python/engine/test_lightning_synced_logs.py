"""`self.log(name, value, sync_dist=True)` / `self.log_dict(d, sync_dist=True)` under a Lightning Trainer whose
strategy sets up a process group on its device's backend (generated from the lightning release: the strategies
whose `_get_process_group_backend` follows the device, by registered name `strategy="ddp"` or class
`DDPStrategy()`; the logging methods taking `sync_dist` and where their value is): on GPUs that group is NCCL,
and Lightning all-reduces the logged tensor there. A cpu tensor fails ("No backend type associated with device
type cpu"): DEV208 at the log call. A Python number is made a tensor on the module's device first: fine.

Variations: log_dict, the metric computed by a helper in another file, the strategy object, a trainer built
in a function. Silent neighbours: sync_dist off, a cpu accelerator, a gloo backend, no strategy (one device),
the value moved to `self.device`, a Python number (`.item()`)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


MODULE = """
    import lightning as L
    import torch
    import torch.nn.functional as F
    from torch import nn
    {imports}

    class LitClassifier(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(28 * 28, 10)

        def forward(self, x):
            return self.net(x.view(x.size(0), -1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self(x), y)
            self.log("train_loss", loss, sync_dist=True)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            preds = self(x).argmax(dim=-1)
            {metric}
            {log}

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)


    def main(train_loader, val_loader):
        model = LitClassifier()
        trainer = L.Trainer({trainer})
        trainer.fit(model, train_loader, val_loader)
"""

CPU_ACC = "acc = (preds.cpu() == y.cpu()).float().mean()"
LOG = 'self.log("val_acc", acc, sync_dist=True)'
DDP = 'accelerator="gpu", devices=2, strategy="ddp"'


def _module(**kw) -> str:
    values = {"imports": "", "metric": CPU_ACC, "log": LOG, "trainer": DDP, **kw}
    return MODULE.format(**values)


def test_a_cpu_metric_logged_with_sync_dist_under_ddp(tmp_path):
    _project(tmp_path, {"lit.py": _module()})
    assert _codes(tmp_path, "lit.py") == [(25, "DEV208")]


def test_log_dict_of_a_cpu_metric(tmp_path):
    _project(tmp_path, {"lit.py": _module(log='self.log_dict({"val_acc": acc}, sync_dist=True)')})
    assert _codes(tmp_path, "lit.py") == [(25, "DEV208")]


def test_the_metric_from_a_helper_in_another_file_and_the_strategy_object(tmp_path):
    _project(tmp_path, {
        "metrics.py": """
            def accuracy(preds, target):
                return (preds.detach().cpu() == target.detach().cpu()).float().mean()
        """,
        "lit.py": _module(imports="from lightning.pytorch.strategies import DDPStrategy\n    from metrics import accuracy",
                          metric="acc = accuracy(preds, y)",
                          trainer='accelerator="cuda", devices=[0, 1], strategy=DDPStrategy(find_unused_parameters=True)'),
    })
    assert _codes(tmp_path, "lit.py") == [(26, "DEV208")]


def test_sync_dist_off_is_silent(tmp_path):
    _project(tmp_path, {"lit.py": _module(log='self.log("val_acc", acc)')})
    assert _codes(tmp_path, "lit.py") == []


def test_a_cpu_accelerator_is_silent(tmp_path):
    _project(tmp_path, {"lit.py": _module(trainer='accelerator="cpu", devices=2, strategy="ddp"')})
    assert _codes(tmp_path, "lit.py") == []


def test_a_gloo_process_group_is_silent(tmp_path):
    _project(tmp_path, {"lit.py": _module(imports="from lightning.pytorch.strategies import DDPStrategy",
                                          trainer='accelerator="gpu", devices=2, strategy=DDPStrategy(process_group_backend="gloo")')})
    assert _codes(tmp_path, "lit.py") == []


def test_one_device_without_a_strategy_is_silent(tmp_path):
    _project(tmp_path, {"lit.py": _module(trainer='accelerator="gpu", devices=1')})
    assert _codes(tmp_path, "lit.py") == []


def test_the_metric_moved_or_a_python_number_is_silent(tmp_path):
    _project(tmp_path, {"lit.py": _module(log='self.log("val_acc", acc.to(self.device), sync_dist=True)')})
    assert _codes(tmp_path, "lit.py") == []
    _project(tmp_path, {"lit.py": _module(log='self.log("val_acc", acc.item(), sync_dist=True)')})
    assert _codes(tmp_path, "lit.py") == []


def test_an_epoch_end_hook_of_the_module_runs_with_the_group(tmp_path):
    """The module's own hooks the Trainer calls after the move (`on_validation_epoch_end`, named like the
    Callback hooks in the generated table) run too: an epoch metric made a cpu tensor and synced fails."""
    src = _module(imports="import numpy as np", log="self.scores.append(acc.item())").replace(
        "    def configure_optimizers(self):",
        "    def on_validation_epoch_end(self):\n"
        "            epoch_acc = torch.tensor(np.mean(self.scores))\n"
        "            self.log(\"val_epoch_acc\", epoch_acc, sync_dist=True)\n\n"
        "        def configure_optimizers(self):")
    _project(tmp_path, {"lit.py": src})
    codes = _codes(tmp_path, "lit.py")
    assert (29, "DEV208") in codes


def test_an_epoch_metric_moved_to_the_module_device_is_silent(tmp_path):
    src = _module(imports="import numpy as np", log="self.scores.append(acc.item())").replace(
        "    def configure_optimizers(self):",
        "    def on_validation_epoch_end(self):\n"
        "            epoch_acc = torch.tensor(np.mean(self.scores), device=self.device)\n"
        "            self.log(\"val_epoch_acc\", epoch_acc, sync_dist=True)\n\n"
        "        def configure_optimizers(self):")
    _project(tmp_path, {"lit.py": src.replace(CPU_ACC, "acc = (preds == y).float().mean()")})
    assert _codes(tmp_path, "lit.py") == []
