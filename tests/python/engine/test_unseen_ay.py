"""Semantics found missing on unseen real cases, batch AY (tests/fixtures/engine/unseen/ay_*): distributed and
performance code (DDP / Lightning collectives, DataParallel, prefetching loaders, per-process devices).

- A class whose base is a library nn.Module named through a project module is an nn.Module too:
  `from mlagents.torch_utils import nn` where the package re-exports `nn = torch.nn` (a name bound to a
  library module keeps naming that module's members: `pkg.nn.Module` is `torch.nn.Module`). `.to()` on it
  moves its submodules; without this ML-Agents' actor (`class SimpleActor(nn.Module)`, moved with
  `self.actor.to(default_device())`) looked never moved and its fixed twin got six false alarms.
- The process-wide default device (`torch.set_default_tensor_type`, `torch.set_default_device`) is branched
  like a name across an `if` whose test is not known: each branch starts from the default before the `if`;
  after it the default is the one both branches leave, or the accelerator one when a branch leaves it (what
  runs when that branch is taken), else unknown; not the default of the branch run last. ML-Agents'
  `set_torch_config` picks the cuda tensor type or the cpu one from a device given on the command line: the
  cpu branch ran last and device-less tensors looked cpu next to a model on the chosen device.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def _project_codes(root: Path, names: tuple[str, ...]) -> list[tuple[str, int, str]]:
    return sorted((Path(d.span.file).name if getattr(d.span, "file", None) else n, d.span.line, d.code)
                  for n in names for d in check_path(str(root / n)).diagnostics)


# --- an nn.Module base named through a project re-export --------------------------------------------------

_TORCH_UTILS = {
    "pkg/__init__.py": """
        from pkg.tu import torch as torch  # noqa
        from pkg.tu import nn  # noqa
        from pkg.tu import default_device  # noqa
    """,
    "pkg/tu.py": """
        import torch

        _device = torch.device("cpu")


        def set_config(name):
            global _device
            _device = torch.device(name)


        set_config("cuda" if torch.cuda.is_available() else "cpu")

        nn = torch.nn


        def default_device():
            return _device
    """,
}

_ACTOR = """
    from typing import List

    from pkg import torch, nn


    class SimpleActor(nn.Module):
        def __init__(self, obs_size, action_size):
            super().__init__()
            layers = []
            for _ in range(2):
                layers += [nn.Linear(obs_size, obs_size), nn.SiLU()]
            self.network_body = nn.Sequential(*layers)
            self.action_head = nn.Linear(obs_size, action_size)

        def get_action(self, inputs: List[torch.Tensor]):
            return self.action_head(self.network_body(torch.cat(inputs, dim=1)))
"""

_POLICY = """
    import numpy as np

    from pkg import torch, default_device
    from pkg.net import SimpleActor


    class Policy:
        def __init__(self):
            self.actor = SimpleActor(4, 2)
            {MOVE}

        def evaluate(self, obs):
            device = default_device()
            tensors = [torch.as_tensor(x, device=device) for x in obs]
            return self.actor.get_action(tensors)


    policy = Policy()
    policy.evaluate([np.zeros((2, 4), dtype=np.float32)])
"""


def test_module_base_through_reexported_nn_is_moved_by_to(tmp_path):
    _write(tmp_path, {**_TORCH_UTILS, "pkg/net.py": _ACTOR,
                      "main.py": _POLICY.replace("{MOVE}", "self.actor.to(default_device())")})
    assert _project_codes(tmp_path, ("main.py",)) == []


def test_module_base_through_reexported_nn_never_moved_is_reported(tmp_path):
    # the same actor left on the cpu: a module indeed, and the device inputs meet its cpu layers
    _write(tmp_path, {**_TORCH_UTILS, "pkg/net.py": _ACTOR, "main.py": _POLICY.replace("{MOVE}", "pass")})
    assert any(code == "DEV106" for _, _, code in _project_codes(tmp_path, ("main.py",)))


def test_module_base_through_package_attribute(tmp_path):
    # `import pkg.tu as tu; class A(tu.nn.Module)`, moved in a trainer class one helper deeper
    files = {**_TORCH_UTILS, "main.py": """
        import torch
        import pkg.tu as tu


        class Actor(tu.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = tu.nn.Linear(4, 2)

            def forward(self, x):
                return self.body(x)


        def place(model):
            return model.to(tu.default_device())


        class Trainer:
            def __init__(self):
                self.model = place(Actor())

            def step(self):
                x = torch.zeros(2, 4, device=tu.default_device())
                return self.model(x)


        Trainer().step()
    """}
    _write(tmp_path, files)
    assert _project_codes(tmp_path, ("main.py",)) == []


def test_module_base_renamed_reexport_split_files(tmp_path):
    # the library module re-exported under another name, the model moved with a plain device
    files = {
        "lib/__init__.py": """
            import torch.nn as layers  # noqa
        """,
        "lib/model.py": """
            from lib import layers


            class Net(layers.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = layers.Linear(3, 1)

                def forward(self, x):
                    return self.fc(x)
        """,
        "train.py": """
            import torch
            from lib.model import Net

            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            net = Net()
            net.to(device)
            print(net(torch.zeros(2, 3).to(device)))
        """,
    }
    _write(tmp_path, files)
    assert _project_codes(tmp_path, ("train.py",)) == []


# --- the default device across an `if` ---------------------------------------------------------------------

_SET_CONFIG = """
    import sys

    import torch
    import torch.nn as nn


    def set_config(device):
        if device.type == "cuda":
            torch.set_default_tensor_type(torch.cuda.FloatTensor)
        else:
            torch.set_default_tensor_type(torch.FloatTensor)


    device = torch.device(sys.argv[1])
    set_config(device)
    model = nn.Linear(4, 2).to(device)
    {USE}
"""


def test_default_tensor_type_chosen_with_the_model_device_silent():
    # ML-Agents: the cpu branch ran last, but device-less tensors follow the device the model was put on
    assert _codes(_SET_CONFIG.replace("{USE}", "print(model(torch.zeros(3, 4)))")) == []


def test_default_tensor_type_chosen_on_branches_meets_a_cpu_tensor():
    # when the cuda branch runs, the device-less tensor is on cuda and meets an explicit cpu one
    src = _SET_CONFIG.replace("{USE}", 'print(torch.zeros(3) + torch.ones(3, device="cpu"))')
    assert [c for _, c in _codes(src)] == ["DEV202"]


def test_default_tensor_type_chosen_in_a_trainer_class_silent():
    src = """
        import argparse

        import torch


        class Config:
            def __init__(self, name):
                self.device = torch.device(name)
                if self.device.type == "cuda":
                    torch.set_default_tensor_type("torch.cuda.FloatTensor")
                else:
                    torch.set_default_tensor_type("torch.FloatTensor")


        class Trainer:
            def __init__(self, cfg):
                self.cfg = cfg
                self.net = torch.nn.Linear(4, 4).to(cfg.device)

            def step(self):
                mask = torch.ones(2, 4)
                return self.net(mask)


        parser = argparse.ArgumentParser()
        parser.add_argument("--torch-device", default="cpu")
        Trainer(Config(parser.parse_args().torch_device)).step()
    """
    assert _codes(src) == []


def test_default_tensor_type_set_before_a_branch_that_keeps_it_is_reported():
    # both paths leave the cuda tensor type: the device-less factory is on cuda and meets a cpu tensor
    src = """
        import torch


        def configure(fast):
            torch.set_default_tensor_type(torch.cuda.FloatTensor)
            if fast:
                torch.backends.cudnn.benchmark = True


        configure(True)
        x = torch.zeros(3)
        y = torch.ones(3, device="cpu")
        print(x + y)
    """
    assert _codes(src) == [(13, "DEV202")]


def test_default_tensor_type_on_the_branch_that_goes_on():
    # the cpu branch returns: after the `if` the cuda tensor type is set
    src = """
        import sys

        import torch


        def configure(name):
            if name == "cpu":
                torch.set_default_tensor_type(torch.FloatTensor)
                return
            torch.set_default_tensor_type(torch.cuda.FloatTensor)
            x = torch.zeros(3)
            print(x + torch.ones(3, device="cpu"))


        configure(sys.argv[1])
    """
    assert [c for _, c in _codes(src)] == ["DEV202"]


# --- DataParallel over a module left on the cpu, where CUDA is known to be there ----------------------------

_TEACHER = """
    import torch
    from torch import nn


    class Teacher(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 8)
            self.head = nn.Linear(8, 3)

        def forward(self, input_ids):
            return self.head(self.emb(input_ids).mean(1))


    def get_teacher_predictions(no_cuda, batches):
        model = Teacher()
        if {GUARD}:
            model = nn.DataParallel({WRAPPED})
        logits = []
        for ids in batches:
            with torch.no_grad():
                logits.append(model(ids).cpu())
        return torch.cat(logits)


    get_teacher_predictions(False, [torch.randint(0, 100, (4, 7))])
"""


def _teacher(guard="not no_cuda and torch.cuda.is_available()", wrapped="model"):
    return _TEACHER.replace("{GUARD}", guard).replace("{WRAPPED}", wrapped)


def test_dataparallel_of_cpu_module_under_cuda_guard_is_reported():
    assert [c for _, c in _codes(_teacher())] == ["DEV106"]


def test_dataparallel_of_cpu_module_device_count_guard_is_reported():
    assert [c for _, c in _codes(_teacher(guard="torch.cuda.device_count() > 1"))] == ["DEV106"]


def test_dataparallel_of_moved_module_under_cuda_guard_silent():
    # PR #10284: the teacher is moved before it is wrapped
    assert _codes(_teacher(wrapped="model.cuda()")) == []


def test_dataparallel_of_cpu_module_without_guard_silent():
    # on a machine without CUDA DataParallel just calls the cpu module: whether a GPU is there is not known
    assert _codes(_teacher(guard="not no_cuda")) == []


def test_dataparallel_of_cpu_module_on_the_else_branch_silent():
    src = _teacher().replace("            model = nn.DataParallel(model)",
                             "            pass\n        else:\n            model = nn.DataParallel(model)")
    assert _codes(src) == []


def test_dataparallel_of_cpu_module_split_files_in_trainer(tmp_path):
    files = {
        "models/teacher.py": """
            from torch import nn


            class Teacher(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.head = nn.Linear(8, 3)

                def forward(self, x):
                    return self.head(x)
        """,
        "distill.py": """
            import torch
            import torch.nn as tnn

            from models.teacher import Teacher


            def wrap(model):
                if torch.cuda.is_available():
                    return tnn.DataParallel(model)
                return model


            class Distiller:
                def __init__(self):
                    self.teacher = wrap(Teacher())

                def soft_labels(self, x):
                    return self.teacher(x).softmax(-1)


            Distiller().soft_labels(torch.randn(4, 8))
        """,
    }
    _write(tmp_path, files)
    assert [c for _, _, c in _project_codes(tmp_path, ("distill.py",))] == ["DEV106"]
