"""A DataLoader batch read by index: `batch[0]`, `batch[1]` of the collated `(inputs, targets)` structure are
parts of it, tensors with their batch dimension on the cpu (never the 0-dim tensor an int index of a plain
tensor may give, which mixes with any device). Fed to a model on the GPU unmoved, they fail like an unpacked
`for x, y in loader`.

Silent neighbours: the part moved before use, the whole batch moved first, and a 0-dim element of a tensor
that is not a batch."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def test_batch_part_by_index_fed_to_a_gpu_model(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda")
        model = nn.Linear(4, 2).to(device)
        loader = DataLoader(TensorDataset(torch.randn(10, 4), torch.randint(0, 2, (10,))), batch_size=2)
        for batch in loader:
            x = batch[0]
            out = model(x)
    """})
    assert _codes(tmp_path, "train.py") == [(10, "DEV202")]


def test_batch_part_moved_is_silent(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda")
        model = nn.Linear(4, 2).to(device)
        criterion = nn.CrossEntropyLoss()
        loader = DataLoader(TensorDataset(torch.randn(10, 4), torch.randint(0, 2, (10,))), batch_size=2)
        for batch in loader:
            x, y = batch[0].to(device), batch[1].to(device)
            loss = criterion(model(x), y)
    """})
    assert _codes(tmp_path, "train.py") == []


def test_batch_targets_by_index_in_a_trainer_class_split_into_files_one_helper_deeper(tmp_path):
    _project(tmp_path, {"data.py": """
        import torch
        from torch.utils.data import DataLoader, TensorDataset


        def make_loader(n=64):
            return DataLoader(TensorDataset(torch.randn(n, 8), torch.randint(0, 3, (n,))), batch_size=16, shuffle=True)
    """, "trainer.py": """
        import torch
        import torch.nn as nn
        from data import make_loader


        def inputs_of(sample, device):
            return sample[0].to(device)


        class Trainer:
            def __init__(self, device):
                self.device = device
                self.net = nn.Linear(8, 3).to(device)
                self.loss_fn = nn.CrossEntropyLoss()

            def fit(self):
                for sample in make_loader():
                    logits = self.net(inputs_of(sample, self.device))
                    loss = self.loss_fn(logits, sample[1])
                    loss.backward()


        if __name__ == "__main__":
            Trainer(torch.device("cuda")).fit()
    """})
    assert _codes(tmp_path, "trainer.py") == [(19, "DEV202")]


def test_whole_batch_moved_first_is_silent(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda")
        model = nn.Linear(4, 2).to(device)
        loader = DataLoader(TensorDataset(torch.randn(10, 4), torch.randint(0, 2, (10,))), batch_size=2)
        for batch in loader:
            batch = [t.to(device) for t in batch]
            out = model(batch[0])
    """})
    assert _codes(tmp_path, "train.py") == []


def test_int_element_of_a_plain_cpu_tensor_is_silent(tmp_path):
    _project(tmp_path, {"scale.py": """
        import torch

        weights = torch.tensor([0.5, 2.0])
        x = torch.randn(3, device="cuda")
        y = x * weights[0]
    """})
    assert _codes(tmp_path, "scale.py") == []
