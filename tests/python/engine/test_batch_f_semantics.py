"""Semantics found missing by the unseen batch F (tests/fixtures/engine/unseen/f_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- a DataLoader yields what its collate_fn returns, entry by entry (a dict / tuple of tensors, each where
  collate_fn put it), a new container each iteration;
- `from src.config import cfg` in `src/train.py` with no `__init__.py`: the script is a module of the
  package it names, run from the folder above (`python -m src.train`);
- `cfg.device` reads the class attribute `device = "cuda"` through the instance when nothing stores
  `<x>.device`; an imported module's `cfg = Config()` of a class that runs no code is a known instance."""

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


COLLATE = """
import torch


def collate_fn(samples):
    images = torch.stack([s["image"] for s in samples])
    weights = torch.tensor([s.get("weight", 1.0) for s in samples])
    return {"image": images, "weight": weights, "names": [s["name"] for s in samples]}
"""


# ---- a DataLoader yields what its collate_fn returns
def test_collate_dict_entry_on_cpu_meets_device_tensor_split_into_files(tmp_path):
    _project(tmp_path, {"data/collate.py": COLLATE, "train.py": """
        import torch
        from torch.utils.data import DataLoader
        from data.collate import collate_fn

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 1).to(device)
        loader = DataLoader(list(range(8)), batch_size=2, collate_fn=collate_fn)
        for batch in loader:
            out = model(batch["image"].to(device)).squeeze(-1)
            loss = (out * batch["weight"]).mean()
        """})
    assert _codes(tmp_path, "train.py") == [(10, "DEV201")]


def test_collate_tuple_unpacked_in_the_loop_inside_a_trainer_class(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        from torch.utils.data import DataLoader


        def pad_batch(samples):
            xs = torch.stack([s[0] for s in samples])
            mask = torch.ones(len(samples), 4)
            return xs, mask


        class Trainer:
            def __init__(self, dataset, device):
                self.device = device
                self.model = torch.nn.Linear(4, 4).to(device)
                self.loader = DataLoader(dataset, batch_size=2, collate_fn=pad_batch)

            def epoch(self):
                for xs, mask in self.loader:
                    out = self.model(xs.to(self.device))
                    self.step(out, mask)

            def step(self, out, mask):
                return (out * mask).sum()


        Trainer(list(range(8)), torch.device("cuda:0")).epoch()
        """})
    assert [c for _, c in _codes(tmp_path, "train.py")] == ["DEV201"]


def test_collate_batch_moved_entry_by_entry_is_silent(tmp_path):
    _project(tmp_path, {"data/collate.py": COLLATE, "train.py": """
        import torch
        from torch.utils.data import DataLoader
        from data.collate import collate_fn

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 1).to(device)
        loader = DataLoader(list(range(8)), batch_size=2, collate_fn=collate_fn)
        for batch in loader:
            batch = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
            out = model(batch["image"]).squeeze(-1)
            loss = (out * batch["weight"]).mean()
        """})
    assert _codes(tmp_path, "train.py") == []


def test_collate_entry_stored_back_moved_is_silent_every_iteration(tmp_path):
    _project(tmp_path, {"data/collate.py": COLLATE, "train.py": """
        import torch
        from torch.utils.data import DataLoader
        from data.collate import collate_fn

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 1).to(device)
        for epoch in range(2):
            for batch in DataLoader(list(range(8)), batch_size=2, collate_fn=collate_fn):
                batch["weight"] = batch["weight"].to(device)
                out = model(batch["image"].to(device)).squeeze(-1)
                loss = (out * batch["weight"]).mean()
        """})
    assert _codes(tmp_path, "train.py") == []


def test_collate_entry_passed_through_from_the_dataset_stays_unknown(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        from torch.utils.data import DataLoader


        def collate(samples):
            return {"x": torch.stack([s["x"] for s in samples]), "w": samples[0]["w"]}


        device = torch.device("cuda")
        model = torch.nn.Linear(4, 1).to(device)
        for batch in DataLoader(list(range(8)), batch_size=2, collate_fn=collate):
            out = model(batch["x"].to(device))
            loss = (out * batch["w"]).mean()
        """})
    assert _codes(tmp_path, "train.py") == []


# ---- a script inside the package it imports (`python -m src.train`)
SCHEDULE = """
import torch


class Schedule:
    def __init__(self, n=1000):
        self.alphas = torch.cumprod(1 - torch.linspace(1e-4, 2e-2, n), dim=0)

    def at(self, t):
        return self.alphas[t]
"""


def test_script_imports_its_own_namespace_package(tmp_path):
    _project(tmp_path, {"src/diffusion/schedule.py": SCHEDULE, "src/train.py": """
        import torch
        from src.diffusion.schedule import Schedule

        sched = Schedule()
        t = torch.randint(0, 1000, (8,), device="cuda")
        a = sched.at(t)
        """})
    assert _codes(tmp_path, "src/train.py") == [(6, "DEV204")]


def test_module_one_folder_deeper_imports_a_sibling_by_the_package_name(tmp_path):
    _project(tmp_path, {"src/diffusion/schedule.py": SCHEDULE, "src/loops/fit.py": """
        import torch
        from src.diffusion.schedule import Schedule


        def fit(device="cuda"):
            sched = Schedule()
            t = torch.randint(0, 1000, (8,), device=device)
            return sched.at(t)


        fit()
        """})
    assert _codes(tmp_path, "src/loops/fit.py") == [(8, "DEV204")]


def test_a_package_name_that_is_not_an_ancestor_does_not_resolve(tmp_path):
    _project(tmp_path, {"src/diffusion/schedule.py": SCHEDULE, "tools/train.py": """
        import torch
        from src.diffusion.schedule import Schedule

        sched = Schedule()
        t = torch.randint(0, 1000, (8,), device="cuda")
        a = sched.at(t)
        """})
    assert _codes(tmp_path, "tools/train.py") == []


# ---- class attributes read through an instance
def test_config_instance_in_another_module_with_a_class_level_device(tmp_path):
    _project(tmp_path, {"configs/train.py": """
        class TrainConfig:
            device = "cuda"
            batch_size = 8


        config = TrainConfig()
        """, "train.py": """
        import torch
        from configs.train import config

        model = torch.nn.Linear(4, 4).to(config.device)
        x = torch.randn(config.batch_size, 4)
        y = model(x)
        """})
    assert _codes(tmp_path, "train.py") == [(5, "DEV201")]


def test_dataclass_config_with_an_annotated_default_inside_a_trainer(tmp_path):
    _project(tmp_path, {"configs/train.py": """
        from dataclasses import dataclass


        @dataclass
        class TrainConfig:
            device: str = "cuda"
            steps: int = 10


        config = TrainConfig()
        """, "trainer.py": """
        import torch
        from configs.train import config


        class Trainer:
            def __init__(self, cfg):
                self.cfg = cfg
                self.model = torch.nn.Linear(4, 4).to(cfg.device)

            def fit(self):
                for _ in range(self.cfg.steps):
                    noise = torch.randn(2, 4)
                    self.model(noise)


        Trainer(config).fit()
        """})
    assert _codes(tmp_path, "trainer.py") == [(12, "DEV201")]


def test_a_device_stored_on_the_config_at_run_time_stays_unknown(tmp_path):
    _project(tmp_path, {"configs/train.py": """
        class TrainConfig:
            device = "cuda"


        config = TrainConfig()
        """, "train.py": """
        import torch
        from hwpick import pick
        from configs.train import config

        config.device = pick()
        model = torch.nn.Linear(4, 4).to(config.device)
        y = model(torch.randn(2, 4))
        """})
    assert _codes(tmp_path, "train.py") == []


def test_a_config_with_a_library_base_or_its_own_init_stays_unknown(tmp_path):
    _project(tmp_path, {"configs/train.py": """
        import argparse


        class FromCli(argparse.Namespace):
            device = "cuda"


        class WithInit:
            device = "cuda"

            def __init__(self):
                self.device = load_device()


        cli, own = FromCli(), WithInit()
        """, "train.py": """
        import torch
        from configs.train import cli, own

        a = torch.nn.Linear(4, 4).to(cli.device)
        b = torch.nn.Linear(4, 4).to(own.device)
        y = a(torch.randn(2, 4)) + b(torch.randn(2, 4))
        """})
    assert _codes(tmp_path, "train.py") == []
