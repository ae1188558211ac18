"""Metric objects and the sync of their states (generated from the torchmetrics releases 1.9 and 0.6: the metric
classes by every re-export, the methods registering a metric's states, `add_state(name, default)`, and the methods
gathering them over the default process group when one is initialised, `compute()` / `sync()`).

A metric is built on the cpu and moved only by `.to()` or with the module that holds it. Its `compute()` all-gathers
its states; on an NCCL-only default group (`init_process_group("nccl")`, or a Lightning Trainer's DDP strategy while
it runs the module's hooks) cpu states fail: "No backend type associated with device type cpu" (DEV208 at the
compute call). A project metric (`class MyMetric(Metric)`) is where the tensor states it registers are.

Variations: the library metric and a project subclass, Lightning Fabric (`launch()`, `launch(fn)`), a Trainer on
several devices without a strategy, a Lightning 1.x `validation_epoch_end(outputs)`, the compute in a helper one call deeper and in a trainer
class, split into files, a Lightning module that recreates its metric in `on_validation_start` (after the Trainer
moved the module). Silent neighbours: the metric moved, a gloo / per-device backend, no process group, list
states, the metric created in the module's `__init__` (moved with it), one device without a strategy."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

from devflow.analysis import framework_api as FW

SCRIPT = """
    import torch
    import torch.distributed as dist
    import torchmetrics

    def main():
        dist.init_process_group({backend})
        rank = dist.get_rank()
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
        model = torch.nn.Linear(4, 3).to(device)
        metric = torchmetrics.Accuracy(task="multiclass", num_classes=3){move}
        for x, y in [(torch.randn(8, 4), torch.randint(0, 3, (8,)))]:
            preds = model(x.to(device)).argmax(-1).cpu()
            metric.update(preds, y)
        print(metric.compute())
"""


def _script(backend='"nccl"', move=""):
    return SCRIPT.format(backend=backend, move=move)


def test_the_generated_tables():
    assert "torchmetrics.Accuracy" in FW.METRIC_CLASSES and "torchmetrics.Metric" in FW.METRIC_CLASSES
    assert "torchmetrics.classification.F1" in FW.METRIC_CLASSES  # 0.6's name
    assert {"compute", "sync"} <= FW.METRIC_SYNCING_METHODS and "forward" not in FW.METRIC_SYNCING_METHODS
    assert FW.METRIC_STATE_REGISTRARS["add_state"]["value_kw"] == "default"


def test_a_cpu_metric_computed_on_an_nccl_group(tmp_path):
    _project(tmp_path, {"train.py": _script()})
    assert _codes(tmp_path, "train.py") == [(15, "DEV208")]


def test_no_backend_given_is_nccl_on_a_cuda_machine(tmp_path):
    _project(tmp_path, {"train.py": _script(backend="")})
    assert _codes(tmp_path, "train.py") == [(15, "DEV208")]


def test_the_metric_moved_is_silent(tmp_path):
    _project(tmp_path, {"train.py": _script(move=".to(device)").replace("argmax(-1).cpu()", "argmax(-1)")
                        .replace("metric.update(preds, y)", "metric.update(preds, y.to(device))")})
    assert _codes(tmp_path, "train.py") == []


def test_gloo_or_a_cpu_backend_is_silent(tmp_path):
    _project(tmp_path, {"train.py": _script(backend='"gloo"')})
    assert _codes(tmp_path, "train.py") == []
    _project(tmp_path, {"train.py": _script(backend='"cpu:gloo,cuda:nccl"')})
    assert _codes(tmp_path, "train.py") == []


def test_no_process_group_is_silent(tmp_path):
    _project(tmp_path, {"train.py": _script().replace("dist.init_process_group(\"nccl\")", "pass")
                        .replace("rank = dist.get_rank()", "rank = 0")})
    assert _codes(tmp_path, "train.py") == []


PROJECT_METRIC = """
    import torch
    from torchmetrics import Metric

    class RunningMean(Metric):
        def __init__(self):
            super().__init__()
            self.add_state("total", default=torch.tensor(0.0), dist_reduce_fx="sum")
            self.add_state("count", default=torch.tensor(0), dist_reduce_fx="sum")

        def update(self, value):
            self.total += value.sum().to(self.device)
            self.count += value.numel()

        def compute(self):
            return self.total / self.count
"""

TRAINER = """
    import torch
    import torch.distributed as dist

    from metrics import RunningMean


    class Trainer:
        def __init__(self, model, device):
            self.model = model.to(device)
            self.device = device
            self.loss_meter = RunningMean()

        def evaluate(self, loader):
            for x in loader:
                self.loss_meter.update(self.model(x.to(self.device)).detach())
            return self.summarise()

        def summarise(self):
            return self.loss_meter.compute()


    def main(loader):
        dist.init_process_group(backend="nccl")
        device = torch.device(f"cuda:{dist.get_rank()}")
        Trainer(torch.nn.Linear(4, 1), device).evaluate(loader)
"""


def test_a_project_metric_in_a_trainer_class_one_helper_deeper(tmp_path):
    _project(tmp_path, {"metrics.py": PROJECT_METRIC, "train.py": TRAINER})
    assert _codes(tmp_path, "train.py") == [(19, "DEV208")]
    assert _codes(tmp_path, "metrics.py") == []


def test_a_project_metric_moved_is_silent(tmp_path):
    _project(tmp_path, {"metrics.py": PROJECT_METRIC,
                        "train.py": TRAINER.replace("RunningMean()", "RunningMean().to(device)")})
    assert _codes(tmp_path, "train.py") == []


def test_a_project_metric_of_list_states_is_silent(tmp_path):
    listed = PROJECT_METRIC.replace('default=torch.tensor(0.0)', "default=[]").replace(
        'default=torch.tensor(0)', "default=[]").replace(
        "self.total += value.sum().to(self.device)\n            self.count += value.numel()",
        "self.total.append(value)\n            self.count.append(value.numel())").replace(
        "return self.total / self.count", "return torch.cat(self.total).mean()")
    _project(tmp_path, {"metrics.py": listed, "train.py": TRAINER})
    assert _codes(tmp_path, "train.py") == []


LIT = """
    import lightning as L
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torchmetrics.classification import MulticlassAccuracy


    class LitClassifier(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(28 * 28, 10)
            self.val_acc = MulticlassAccuracy(num_classes=10)

        def forward(self, x):
            return self.net(x.view(x.size(0), -1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self(x), y)

        def on_validation_start(self):
            {start}

        def validation_step(self, batch, batch_idx):
            x, y = batch
            {update}

        def on_validation_epoch_end(self):
            self.log("val_acc", self.val_acc.compute().item())
            self.val_acc.reset()

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)


    def main(train_loader, val_loader):
        trainer = L.Trainer({trainer})
        trainer.fit(LitClassifier(), train_loader, val_loader)
"""


ON_CPU = "self.val_acc.update(self(x).argmax(dim=-1).cpu(), y.cpu())"


def _lit(start="self.val_acc = MulticlassAccuracy(num_classes=10)", trainer='accelerator="gpu", devices=2, strategy="ddp"',
         update=ON_CPU):
    return LIT.format(start=start, trainer=trainer, update=update)


def test_a_metric_recreated_after_the_trainer_moved_the_module(tmp_path):
    """`on_validation_start` runs after the move, before the validation batches: the new metric stays on the
    cpu (DEV102 where the Trainer runs it; the step feeds it cpu tensors) and its compute() at the epoch end syncs
    cpu states."""
    _project(tmp_path, {"lit.py": _lit()})
    assert _codes(tmp_path, "lit.py") == [(29, "DEV208"), (38, "DEV102")]


def test_the_metric_made_in_init_moves_with_the_module(tmp_path):
    _project(tmp_path, {"lit.py": _lit(start="self.val_acc.reset()", update="self.val_acc.update(self(x).argmax(dim=-1), y)")})
    assert _codes(tmp_path, "lit.py") == []


def test_one_device_without_a_strategy_has_no_group(tmp_path):
    _project(tmp_path, {"lit.py": _lit(trainer='accelerator="gpu", devices=1')})
    assert (29, "DEV208") not in _codes(tmp_path, "lit.py")


FABRIC = """
    import lightning as L
    import torch
    import torchmetrics
    from torch import nn


    def run(fabric, loader):
        model = fabric.setup(nn.Linear(2, 3))
        metric = torchmetrics.Accuracy(task="multiclass", num_classes=3){move}
        for x, y in loader:
            metric.update(model(x).argmax(-1).cpu(), y.cpu())
        return metric.compute()


    def main(loader):
        fabric = L.Fabric({fabric})
        {launch}
"""


def _fabric(fabric='accelerator="cuda", devices=2', launch="fabric.launch()\n        run(fabric, loader)", move=""):
    return FABRIC.format(fabric=fabric, launch=launch, move=move)


def test_fabric_on_several_gpus_launches_an_nccl_group(tmp_path):
    """Fabric picks its several-devices strategy (generated: the connector's choice, "ddp") when none is named;
    `launch()` sets up its process group (generated: the Fabric methods reaching `setup_environment`)."""
    _project(tmp_path, {"train.py": _fabric()})
    assert _codes(tmp_path, "train.py") == [(12, "DEV208")]


def test_fabric_launching_a_function_runs_it_with_the_group(tmp_path):
    _project(tmp_path, {"train.py": _fabric(fabric='accelerator="gpu", devices=[0, 1], strategy="ddp"',
                                            launch="fabric.launch(run, loader)")})
    assert _codes(tmp_path, "train.py") == [(12, "DEV208")]


def test_fabric_on_one_device_or_on_cpus_or_not_launched_is_silent(tmp_path):
    for fabric, launch in (('accelerator="cuda", devices=1', "fabric.launch()\n        run(fabric, loader)"),
                           ('accelerator="cpu", devices=2', "fabric.launch()\n        run(fabric, loader)"),
                           ('accelerator="cuda", devices="auto"', "fabric.launch()\n        run(fabric, loader)"),
                           ('accelerator="cuda", devices=2', "run(fabric, loader)")):
        _project(tmp_path, {"train.py": _fabric(fabric=fabric, launch=launch)})
        assert _codes(tmp_path, "train.py") == [], (fabric, launch)


def test_several_devices_without_a_strategy_is_ddp_for_the_trainer(tmp_path):
    _project(tmp_path, {"lit.py": _lit(trainer='accelerator="gpu", devices=2')})
    assert _codes(tmp_path, "lit.py") == [(29, "DEV208"), (38, "DEV102")]
    _project(tmp_path, {"lit.py": _lit(trainer='accelerator="gpu", devices=-1')})
    assert (29, "DEV208") not in _codes(tmp_path, "lit.py")


LIT1 = """
    import pytorch_lightning as pl
    import torch
    from torchmetrics import MeanMetric


    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(8, 1)
            self.val_metrics = {container}

        def validation_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x), y)
            self.val_metrics["loss"].update({value})
            return loss

        def validation_epoch_end(self, outputs):
            for name, metric in self.val_metrics.items():
                self.log(f"val/{{name}}", metric.compute())
                metric.reset()


    def main(train_loader, val_loader):
        trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp")
        trainer.fit(Regressor(), train_loader, val_loader)
"""


def test_a_lightning_1x_epoch_end_hook_runs_after_the_move(tmp_path):
    """`validation_epoch_end(outputs)` (Lightning 1.x: generated from the pytorch_lightning 1.9 loops, which call it
    after the move): metrics kept in a plain dict are not moved (DEV103) and their compute() syncs cpu states."""
    assert "validation_epoch_end" in FW.LIGHTNING_LOOP_HOOKS
    _project(tmp_path, {"lit.py": LIT1.format(container='{"loss": MeanMetric()}', value="loss.cpu()")})
    assert _codes(tmp_path, "lit.py") == [(10, "DEV103"), (20, "DEV208")]


def test_metrics_in_a_module_dict_move_with_the_module(tmp_path):
    _project(tmp_path, {"lit.py": LIT1.format(container='torch.nn.ModuleDict({"loss": MeanMetric()})', value="loss")})
    assert _codes(tmp_path, "lit.py") == []
