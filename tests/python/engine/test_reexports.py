"""A package's `__init__` re-exports (`from .net import Net`, `from .net import *`, `as` renames, two
packages deep): a class imported through the package is the project's class, with its methods and
their findings; a library name re-exported stays unknown (silent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devflow.api import check_path

NET = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)

    def reset_head(self, n):
        self.head = nn.Linear(8, n)

    def forward(self, x):
        return self.head(self.body(x))
'''

TRAIN = '''import torch
{imp}

device = torch.device("cuda")
model = {make}.to(device)
model.reset_head(10)
x = torch.randn(4, 8, device=device)
print(model(x))
'''

FIXED = '''import torch
{imp}

device = torch.device("cuda")
model = {make}
model.reset_head(10)
model.to(device)
x = torch.randn(4, 8, device=device)
print(model(x))
'''


def _project(root: Path, layout: dict[str, str]) -> None:
    for rel, text in layout.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


LAYOUTS = {
    "from_init": ({"models/__init__.py": "from .net import Net\n", "models/net.py": NET},
                  "from models import Net", "Net()"),
    "star": ({"models/__init__.py": "from .net import *\n", "models/net.py": NET},
             "from models import Net", "Net()"),
    "renamed": ({"models/__init__.py": "import torch\nfrom .net import Net as Model\n", "models/net.py": NET},
                "from models import Model", "Model()"),
    "module_attribute": ({"models/__init__.py": "from .net import Net\n", "models/net.py": NET},
                         "import models", "models.Net()"),
    "two_packages_deep": ({"pkg/__init__.py": "from .models import Net\n",
                           "pkg/models/__init__.py": "from .net import Net\n", "pkg/models/net.py": NET},
                          "from pkg import Net", "Net()"),
    "absolute_in_init": ({"models/__init__.py": "from models.net import Net\n", "models/net.py": NET},
                         "from models import Net", "Net()"),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_class_through_a_reexport_is_followed(tmp_path, name):
    files, imp, make = LAYOUTS[name]
    _project(tmp_path, {**files, "train.py": TRAIN.format(imp=imp, make=make)})
    found = [(d.code, d.span.line) for d in check_path(str(tmp_path / "train.py")).diagnostics]
    assert found == [("DEV102", 6)], found


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_fixed_twin_is_clean(tmp_path, name):
    files, imp, make = LAYOUTS[name]
    _project(tmp_path, {**files, "train.py": FIXED.format(imp=imp, make=make)})
    assert check_path(str(tmp_path / "train.py")).diagnostics == []


def test_a_library_class_reexported_by_a_project_package_is_that_class(tmp_path):
    _project(tmp_path, {"layers/__init__.py": "from torch.nn import Linear as Head\nfrom .cycle import *\n",
                        "layers/cycle.py": "from layers import *\n",
                        "train.py": "import torch\nfrom torch import nn\nimport layers\n"
                                    "model = nn.Sequential(nn.Linear(8, 8)).to('cuda')\n"
                                    "model.head = layers.Head(8, 2)\nmodel.other = layers.Missing(8, 2)\n"})
    found = [(d.code, d.span.line) for d in check_path(str(tmp_path / "train.py")).diagnostics]
    # the re-exported nn.Linear is a new module on cpu after the move; an unknown name stays silent,
    # and the star-import cycle does not loop
    assert found == [("DEV101", 5)], found
