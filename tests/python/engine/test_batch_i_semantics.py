"""Semantics found missing by the unseen batch I (tests/fixtures/engine/unseen/i_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- a torchvision dataset built with a tensor-making `transform=` gives `(image, target)` items whose image
  is a cpu tensor (the dataset loads it from disk and transforms it on the host): `ds[i][0]` fed to a model
  on the GPU is an input left on the cpu."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path


def _project(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))


def _codes(root: Path, name: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_path(str(root / name)).diagnostics]


DATA = """
from torchvision import datasets, transforms

to_tensor = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
test_set = datasets.MNIST(root="data", train=False, download=True, transform=to_tensor)
"""


# ---- a torchvision dataset's items: the transformed image is a cpu tensor
def test_dataset_sample_split_into_files_through_a_helper(tmp_path):
    _project(tmp_path, {"data.py": DATA, "infer.py": """
        import torch
        from data import test_set


        def predict_one(net, dataset, index, dev):
            image, label = dataset[index]
            with torch.no_grad():
                return net(image.unsqueeze(0)).argmax(1).item() == label


        dev = torch.device("cuda")
        net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)).to(dev)
        print(predict_one(net, test_set, 0, dev))
        """})
    assert _codes(tmp_path, "infer.py") == [(8, "DEV202")]


def test_dataset_sample_inside_an_evaluator_class(tmp_path):
    _project(tmp_path, {"data.py": DATA, "evaluate.py": """
        import torch
        import data


        class Evaluator:
            def __init__(self, model, device):
                self.device = device
                self.model = model.to(device)

            def show(self, i):
                sample = data.test_set[i][0]
                self.model.eval()
                return self.model(sample)


        Evaluator(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)), "cuda").show(3)
        """})
    found = _codes(tmp_path, "evaluate.py")
    assert found and all(code == "DEV202" for _, code in found)


def test_dataset_sample_moved_or_model_on_cpu_is_silent(tmp_path):
    _project(tmp_path, {"data.py": DATA, "moved.py": """
        import torch
        from data import test_set

        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)).to(device)
        x, y = test_set[0]
        pred = model(x.to(device))
        """, "cpu_only.py": """
        import torch
        from data import test_set

        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))
        x, y = test_set[0]
        pred = model(x)
        """})
    assert _codes(tmp_path, "moved.py") == []
    assert _codes(tmp_path, "cpu_only.py") == []


def test_dataset_without_a_tensor_transform_is_unknown(tmp_path):
    # no transform: the item is a PIL image (the model call fails for another reason); a user transform of
    # unknown kind: unknown; both silent
    _project(tmp_path, {"a.py": """
        import torch
        from torchvision import datasets
        from my_transforms import build

        ds = datasets.CIFAR10("data", train=False)
        ds2 = datasets.CIFAR10("data", train=False, transform=build())
        model = torch.nn.Linear(3, 3).cuda()
        img, _ = ds2[0]
        out = model(img)
        """})
    assert _codes(tmp_path, "a.py") == []
