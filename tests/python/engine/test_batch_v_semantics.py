"""Semantics found missing by the unseen batch V (tests/fixtures/engine/unseen/v_*: training loops, early
stopping, EMA, metrics, eval helpers), each tested on the variations a user writes (renamed, split into
files, one helper deeper, inside a trainer class) and on the neighbours that must stay silent:
- `t.max(1)` / `torch.max(t, dim=1)` / `t.topk(k)` return a (values, indices) pair: `[1]` picks a tensor, not
  an element, and a reduction along dim >= 1 leaves at least one dimension (not a 0-dim cpu scalar);
- `a.type_as(b)` is on `b`'s device type (it was read as a non-tensor and lost);
- `x += y` writes into `x`: the cpu-scalar exemption covers an operand read, never the tensor written;
- iterating a tensor known to have two or more dimensions yields rows with one less (not 0-dim);
- `torch.equal` / `allclose` return a bool, yet compare two tensors element-wise: one device;
- `m = Model() if flag else None` (statement form): wherever `m` is used as a module it is that module;
- `torch.cuda.current_device()` names the current GPU (`.to(torch.cuda.current_device())`);
- DEV103 stays silent on a plain dict of modules the class moves itself (`for m in self.d.values(): m.to(...)`)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


METRICS = """
def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    return correct.sum() / len(labels)
"""


# ---- early stopping: a one-element cpu "best" against a 0-dim GPU metric from a helper
def test_best_metric_one_element_cpu_vs_accuracy_helper_split_into_files(tmp_path):
    _project(tmp_path, {"metrics.py": METRICS, "train.py": """
        import torch
        from metrics import accuracy

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 3).to(device)


        def validate(x, y):
            best = torch.zeros((1))
            acc = accuracy(model(x.to(device)), y.to(device))
            if best < acc:
                best = acc
            return best
        """})
    assert _codes(tmp_path, "train.py") == [(9, "DEV201")]


def test_best_metric_in_trainer_class_with_torch_max_dim(tmp_path):
    _project(tmp_path, {"trainer.py": """
        import torch


        class Trainer:
            def __init__(self, model, device):
                self.model = model.to(device)
                self.device = device
                self.best_acc = torch.zeros(1)

            def evaluate(self, x, y):
                out = self.model(x.to(self.device))
                _, pred = torch.max(out, dim=1)
                acc = (pred == y.to(self.device)).float().mean()
                if acc > self.best_acc:
                    self.best_acc = acc


        Trainer(torch.nn.Linear(4, 3), torch.device("cuda")).evaluate(torch.randn(2, 4), torch.zeros(2))
        """})
    assert _codes(tmp_path, "trainer.py") == [(8, "DEV201")]


def test_best_metric_silent_when_zero_dim_cpu_or_item(tmp_path):
    _project(tmp_path, {"metrics.py": METRICS, "train.py": """
        import torch
        from metrics import accuracy

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 3).to(device)


        def validate(x, y):
            best = torch.tensor(0.0)
            best_item = torch.zeros((1))
            out = model(x.to(device))
            acc = accuracy(out, y.to(device))
            if best < acc:
                best = acc
            if best_item < acc.item():
                best_item = acc.item()
            values, idx = out.max(0, keepdim=False)
            first = torch.zeros(1)
            return best, first + out.max(-1)[0][0].cpu()
        """})
    assert _codes(tmp_path, "train.py") == []


def test_max_pair_values_and_indices_attributes(tmp_path):
    _project(tmp_path, {"a.py": """
        import torch

        x = torch.randn(8, 5, device="cuda")
        top = x.topk(2)
        keep = torch.zeros(8)
        scores = keep + x.max(dim=1).values
        """})
    assert _codes(tmp_path, "a.py") == [(5, "DEV201")]


# ---- in place into a cpu element
def test_inplace_add_into_cpu_element_from_gpu_value_helper_one_deeper(tmp_path):
    _project(tmp_path, {"masks.py": """
        import numpy as np
        import torch


        def make_mask(probs, idx, batch, threshold):
            mask = torch.zeros(batch)
            for i in range(3):
                rows = np.where(idx.cpu() == i)[0]
                m = probs[rows].ge(threshold).float()
                for k in range(len(rows)):
                    mask[rows[k]] += m[k]
            return mask.cuda()
        """, "train.py": """
        import torch
        from masks import make_mask

        model = torch.nn.Linear(4, 3).cuda()


        def step(x):
            p = torch.softmax(model(x.cuda()), dim=1)
            probs, idx = p.max(dim=1)
            return make_mask(probs, idx, x.size(0), 0.9)


        step(torch.randn(2, 4))
        """})
    assert _codes(tmp_path, "masks.py") == [(6, "DEV201")]


def test_inplace_running_total_zero_dim_cpu_plus_gpu_loss(tmp_path):
    _project(tmp_path, {"a.py": """
        import torch

        model = torch.nn.Linear(4, 1).cuda()
        total = torch.tensor(0.0)
        for x in torch.randn(3, 2, 4):
            loss = model(x.cuda()).mean()
            total += loss
        """})
    assert _codes(tmp_path, "a.py") == [(4, "DEV201")]


def test_inplace_silent_when_written_tensor_is_on_the_device_or_value_is_cpu(tmp_path):
    _project(tmp_path, {"a.py": """
        import torch

        model = torch.nn.Linear(4, 1).cuda()
        total = torch.zeros(1, device="cuda")
        count = torch.zeros(3)
        bonus = torch.tensor(1.0)
        for x in torch.randn(3, 2, 4):
            loss = model(x.cuda()).mean()
            total += loss
            total += bonus
            count[0] += loss.item()
            count[1] += bonus
        """})
    assert _codes(tmp_path, "a.py") == []


# ---- rows of a tensor, torch.equal
def test_equal_rows_of_cpu_labels_and_gpu_outputs_in_eval_helper(tmp_path):
    _project(tmp_path, {"evaluate.py": """
        import torch


        def exact_match(output, target):
            output = output.argmax(dim=2).view(-1, 4)
            target = target.view(-1, 4)
            hits = 0
            for t, o in zip(target, output):
                if torch.equal(t, o):
                    hits += 1
            return hits / output.size(0)
        """, "train.py": """
        import torch
        from evaluate import exact_match

        device = torch.device("cuda")
        net = torch.nn.Linear(8, 10).to(device)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 4, 8), torch.zeros(16, 4)))
        for inputs, labels in loader:
            print(exact_match(net(inputs.to(device)), labels))
        """})
    assert _codes(tmp_path, "evaluate.py") == [(9, "DEV202")]


def test_equal_and_allclose_silent_on_one_device(tmp_path):
    _project(tmp_path, {"a.py": """
        import torch

        a = torch.randn(4, 3, device="cuda")
        b = torch.randn(4, 3).cuda()
        for r, s in zip(a, b):
            assert torch.equal(r, s)
        assert a.allclose(b)
        assert torch.allclose(a.cpu(), b.cpu())
        """})
    assert _codes(tmp_path, "a.py") == []


# ---- EMA: an optional EMA model, the current GPU, averaged on the cpu
STRATEGY = """
import torch


class Strategy:
    def prepare(self, model):
        return model.to(torch.cuda.current_device())

    def moving_average(self, model, model_ema, beta=0.99, device="cpu"):
        with torch.no_grad():
            for param, param_ema in zip(model.parameters(), model_ema.parameters()):
                data = param.data.to(device)
                param_ema.data.copy_((1 - beta) * data + beta * param_ema.data)
"""


def test_ema_averaged_on_cpu_while_prepared_on_gpu_in_trainer_class(tmp_path):
    _project(tmp_path, {"strategy.py": STRATEGY, "train.py": """
        from copy import deepcopy

        import torch
        from strategy import Strategy


        class Trainer:
            def __init__(self, strategy, actor, ema_model=None):
                self.strategy, self.actor, self.ema_model = strategy, actor, ema_model

            def step(self):
                if self.ema_model:
                    self.strategy.moving_average(self.actor, self.ema_model, 0.99, "cpu")


        def main(enable_ema):
            strategy = Strategy()
            actor = torch.nn.Linear(4, 4)
            if enable_ema:
                ema = deepcopy(actor)
            else:
                ema = None
            actor = strategy.prepare(actor)
            if ema:
                ema = strategy.prepare(ema)
            Trainer(strategy, actor, ema).step()


        main(True)
        """})
    assert (13, "DEV202") in _codes(tmp_path, "train.py")


def test_ema_silent_when_averaged_where_the_ema_lives(tmp_path):
    _project(tmp_path, {"strategy.py": STRATEGY, "train.py": """
        from copy import deepcopy

        import torch
        from strategy import Strategy

        strategy = Strategy()
        actor = torch.nn.Linear(4, 4)
        ema = deepcopy(actor) if torch.cuda.device_count() else None
        offloaded = deepcopy(actor)
        actor = strategy.prepare(actor)
        if ema is not None:
            ema = strategy.prepare(ema)
            strategy.moving_average(actor, ema, 0.99, "cuda")
        strategy.moving_average(actor, offloaded, 0.99, "cpu")
        """})
    assert _codes(tmp_path, "train.py") == []


# ---- DEV103 and a dict of modules the class moves itself
def test_metrics_dict_moved_by_the_module_is_silent_and_unmoved_one_reported(tmp_path):
    _project(tmp_path, {"model.py": """
        import torch.nn as nn
        from torchmetrics import Accuracy


        class Moved(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 3)
                self.metrics = {"acc": Accuracy(task="multiclass", num_classes=3)}

            def setup_metrics(self, device):
                for name, metric in self.metrics.items():
                    metric.to(device)


        class NotMoved(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 3)
                self.metrics = {"acc": Accuracy(task="multiclass", num_classes=3)}

            def report(self):
                for name, metric in self.metrics.items():
                    print(name, metric.compute())
        """})
    assert _codes(tmp_path, "model.py") == [(20, "DEV103")]
