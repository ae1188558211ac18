"""A project model loaded through a classmethod its library base provides (`MyNet.from_pretrained(...)` with
`class MyNet(nn.Module, PyTorchModelHubMixin)` or `class MyNet(PreTrainedModel)`): the library builds a `MyNet`
(its own `__init__` runs) and loads the weights where construction left them, the cpu, unless the call
places it (device / device_map / map_location). Which library classmethods build `cls` is generated
knowledge (libraries.json `instance_constructors`, from the released wheels), not a list of names; a
classmethod the project defines itself is run as written."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

HUB_MODEL = """
    import torch
    from huggingface_hub import PyTorchModelHubMixin
    from torch import nn


    class Head(nn.Module):
        def __init__(self, d=8, n=2):
            super().__init__()
            self.fc = nn.Linear(d, n)

        def forward(self, x):
            return self.fc(x)


    class Backbone(nn.Module, PyTorchModelHubMixin):
        def __init__(self, config=None, **kwargs):
            super().__init__()
            self.enc = nn.Linear(8, 8)
            self.head = Head()
            self.task = kwargs.get("task", "reconstruction")

        def init(self):
            if self.task != "reconstruction":
                self.head = Head(8, 3)

        def forward(self, x):
            return self.head(self.enc(x))
"""


def test_hub_mixin_model_gets_a_new_head_after_it_is_moved(tmp_path):
    _project(tmp_path, {"models.py": HUB_MODEL, "run.py": """
        import torch
        from models import Backbone

        model = Backbone.from_pretrained("org/name", task="classification").to("cuda")
        model.init()
        x = torch.randn(2, 8).to("cuda")
        print(model(x))
    """})
    assert (5, "DEV102") in _codes(tmp_path, "run.py")


def test_hub_mixin_model_left_on_the_cpu_in_a_trainer_class_one_helper_deeper(tmp_path):
    _project(tmp_path, {"pkg/__init__.py": "from .models import Backbone\n", "pkg/models.py": HUB_MODEL,
                        "train.py": """
        import torch
        from pkg import Backbone


        def load(name):
            return Backbone.from_pretrained(name)


        class Trainer:
            def __init__(self, name):
                self.device = torch.device("cuda")
                self.net = load(name)

            def step(self, batch):
                return self.net(batch.to(self.device))


        Trainer("org/name").step(torch.randn(4, 8))
    """})
    assert [c for _, c in _codes(tmp_path, "train.py")] == ["DEV106"]


def test_transformers_subclass_loaded_on_the_cpu_meets_a_cuda_input(tmp_path):
    _project(tmp_path, {"net.py": """
        import torch
        from torch import nn
        from transformers import PreTrainedModel


        class Classifier(PreTrainedModel):
            def __init__(self, config):
                super().__init__(config)
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x)


        clf = Classifier.from_pretrained("out/checkpoint")
        x = torch.randn(2, 4).to("cuda")
        print(clf(x))
    """})
    assert [c for _, c in _codes(tmp_path, "net.py")] == ["DEV106"]


def test_placed_moved_or_self_defined_loaders_stay_silent(tmp_path):
    _project(tmp_path, {"models.py": HUB_MODEL, "placed.py": """
        import torch
        from models import Backbone

        a = Backbone.from_pretrained("org/name", map_location="cuda")
        print(a(torch.randn(2, 8).to("cuda")))
        b = Backbone.from_pretrained("org/name", **{"device_map": "auto"})
        print(b(torch.randn(2, 8).to("cuda")))
        c = Backbone.from_pretrained("org/name").to("cuda")
        c.init()
        c.to("cuda")
        print(c(torch.randn(2, 8).to("cuda")))
    """, "own.py": """
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            @classmethod
            def from_pretrained(cls, path):
                return cls().to("cuda")

            def forward(self, x):
                return self.fc(x)


        net = Net.from_pretrained("x")
        print(net(torch.randn(2, 4).to("cuda")))
    """, "unknown_base.py": """
        import torch
        from torch import nn
        from somelib import Loadable


        class Net(nn.Module, Loadable):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x)


        net = Net.from_pretrained("x")
        print(net(torch.randn(2, 4).to("cuda")))
    """})
    for name in ("placed.py", "own.py", "unknown_base.py"):
        assert _codes(tmp_path, name) == [], name
