"""A value that is None on some paths and a tensor (or module) on the others (`w = torch.tensor(ws) if
args.weighted else None`, `w = None; if flag: w = compute()`): wherever it is used as a tensor it is that
tensor, a path the program takes; `w is None` is not known, and `if w is [not] None:` narrows it (None
on one branch, the tensor on the other). A loss built with that weight on one path and without one on the
other is the weighted one where devices can meet (the other holds no tensor)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def test_class_weights_chosen_by_a_flag_meet_a_cuda_prediction(tmp_path):
    _project(tmp_path, {"train.py": """
        import argparse
        import torch
        import torch.nn as nn

        p = argparse.ArgumentParser()
        p.add_argument("--balanced", action="store_true")
        args = p.parse_args()
        device = torch.device("cuda")
        model = nn.Linear(4, 3).to(device)
        class_weights = torch.tensor([1.0, 2.0, 3.0]) if args.balanced else None
        criterion = nn.CrossEntropyLoss(weight=class_weights)
        x, y = torch.randn(8, 4).to(device), torch.randint(0, 3, (8,)).to(device)
        loss = criterion(model(x), y)
    """})
    assert [c for _, c in _codes(tmp_path, "train.py")] == ["DEV203"]


def test_weights_from_a_helper_in_another_file_through_a_loss_factory_in_a_trainer(tmp_path):
    _project(tmp_path, {"data.py": """
        import torch


        def class_weights(counts, enabled):
            w = None
            if enabled:
                total = sum(counts)
                w = torch.FloatTensor([total / c for c in counts])
            return w
    """, "losses.py": """
        import torch.nn as nn


        def get_loss(weight=None):
            if weight is not None:
                return nn.CrossEntropyLoss(weight=weight)
            return nn.CrossEntropyLoss()
    """, "trainer.py": """
        import torch
        import torch.nn as nn
        from data import class_weights
        from losses import get_loss


        class Trainer:
            def __init__(self, cfg):
                self.device = torch.device("cuda")
                self.net = nn.Linear(4, 2).to(self.device)
                self.criterion = get_loss(weight=class_weights([3, 1], cfg.weighted))

            def step(self, x, y):
                x, y = x.to(self.device), y.to(self.device)
                return self.criterion(self.net(x), y)
    """, "run.py": """
        import argparse
        import torch
        from trainer import Trainer

        parser = argparse.ArgumentParser()
        parser.add_argument("--weighted", action="store_true")
        trainer = Trainer(parser.parse_args())
        for _ in range(3):
            trainer.step(torch.randn(8, 4), torch.randint(0, 2, (8,)))
    """})
    assert [c for _, c in _codes(tmp_path, "trainer.py")] == ["DEV203"]
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV203"]


def test_moved_when_present_correlated_or_never_set_stays_silent(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch
        import torch.nn.functional as F


        def moved_when_present(flag, device):
            w = torch.tensor([1.0, 2.0]) if flag else None
            if w is not None:
                w = w.to(device)
            pred = torch.randn(4, 2, device=device)
            y = torch.zeros(4, dtype=torch.long, device=device)
            return F.nll_loss(pred, y, weight=w)


        def correlated(flag):
            w = None
            if flag:
                w = torch.tensor([1.0, 2.0])
            if flag:
                w = w.cuda()
            pred = torch.randn(4, 2, device="cuda")
            return F.nll_loss(pred, torch.zeros(4, dtype=torch.long, device="cuda"), weight=w)


        def never_set(device):
            w = None
            pred = torch.randn(4, 2, device=device)
            if w is not None:
                pred = pred * w
            return pred


        moved_when_present(True, "cuda")
        correlated(True)
        never_set("cuda")
    """})
    assert _codes(tmp_path, "ok.py") == []


def test_replaced_only_when_missing_keeps_the_cpu_weights_on_the_other_path(tmp_path):
    # `if w is None: w = <cuda>`: where w was given (a cpu tensor) it stays on the cpu
    _project(tmp_path, {"b.py": """
        import torch
        import torch.nn.functional as F


        def weights(flag):
            w = None
            if flag:
                w = torch.FloatTensor([1.0, 2.0])
            return w


        def main(flag):
            w = weights(flag)
            if w is None:
                w = torch.ones(2, device="cuda")
            pred = torch.randn(4, 2, device="cuda")
            return F.nll_loss(pred, torch.zeros(4, dtype=torch.long, device="cuda"), weight=w)


        main(True)
    """})
    assert [c for _, c in _codes(tmp_path, "b.py")] == ["DEV202"]


def test_a_branch_that_says_the_tensor_is_not_on_the_gpu_is_not_a_mix(tmp_path):
    # features placed on the accelerator by a flag (or None), then a helper with a cpu path for cpu inputs
    _project(tmp_path, {"pca.py": """
        import argparse
        import numpy as np
        import torch


        class PCA:
            def __init__(self):
                self.dvt = np.eye(4, dtype=np.float32)

            def apply(self, x):
                if x.is_cuda:
                    return torch.mm(torch.cuda.FloatTensor(self.dvt), x.t()).t()
                return torch.mm(torch.FloatTensor(self.dvt), x.t()).t()


        parser = argparse.ArgumentParser()
        parser.add_argument("--use_cuda", action="store_true")
        args = parser.parse_args()
        features = None
        for step in range(3):
            if features is None:
                features = torch.zeros(10, 4)
                if args.use_cuda:
                    features = features.cuda(non_blocking=True)
        print(PCA().apply(features))
    """})
    assert _codes(tmp_path, "pca.py") == []


def test_the_cpu_branch_of_each_device_test_spelling_is_not_a_mix(tmp_path):
    for i, test in enumerate(("not x.is_cuda", 'x.device.type == "cpu"', 'x.device.type != "cuda"',
                              'not x.device.type == "cuda"')):
        _project(tmp_path / str(i), {"m.py": f"""
            import argparse
            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--use_cuda", action="store_true")
            args = parser.parse_args()


            def project(x, basis):
                if {test}:
                    return torch.mm(torch.FloatTensor(basis), x.t())
                return torch.mm(torch.cuda.FloatTensor(basis), x.t())


            feats = torch.zeros(10, 4)
            if args.use_cuda:
                feats = feats.cuda()
            print(project(feats, [[1.0] * 4] * 4))
        """})
        assert _codes(tmp_path / str(i), "m.py") == [], test
