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

from project_fixtures import codes as _codes, write_project as _project


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


# ---- accelerate's Accelerator.prepare(): modules and DataLoaders are placed, the rest is returned as is
def test_accelerate_criterion_weights_left_out_of_prepare_inside_a_trainer(tmp_path):
    _project(tmp_path, {"trainer.py": """
        import torch
        from accelerate import Accelerator
        from torch.utils.data import DataLoader, TensorDataset


        class Trainer:
            def __init__(self, model, dataset, class_counts):
                self.accelerator = Accelerator()
                loader = DataLoader(dataset, batch_size=8)
                self.model, self.loader = self.accelerator.prepare(model, loader)
                self.weights = 1.0 / torch.tensor(class_counts, dtype=torch.float)

            def fit(self):
                for x, y in self.loader:
                    loss = torch.nn.functional.cross_entropy(self.model(x), y, weight=self.weights)
                    self.accelerator.backward(loss)


        data = TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,)))
        Trainer(torch.nn.Linear(4, 3), data, [10, 20, 2]).fit()
        """})
    # the weights are made on the cpu and never placed: reported where they are made (DEV201)
    assert [c for _, c in _codes(tmp_path, "trainer.py")] in (["DEV201"], ["DEV203"])


def test_accelerate_model_left_out_of_prepare_meets_prepared_batches(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        from accelerate import Accelerator
        from torch.utils.data import DataLoader, TensorDataset

        accelerator = Accelerator()
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)
        optimizer, loader = accelerator.prepare(optimizer, loader)
        for (x,) in loader:
            accelerator.backward(model(x).sum())
        """})
    assert len(_codes(tmp_path, "train.py")) == 1


def test_accelerate_everything_prepared_or_moved_to_its_device_is_silent(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        from accelerate import Accelerator
        from torch.utils.data import DataLoader, TensorDataset


        def run(accelerator, weights):
            model = torch.nn.Linear(4, 3)
            loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 3, (16,))), batch_size=4)
            model, loader = accelerator.prepare(model, loader)
            w = weights.to(accelerator.device)
            for x, y in loader:
                accelerator.backward(torch.nn.functional.cross_entropy(model(x), y, weight=w))


        run(Accelerator(), torch.tensor([1.0, 2.0, 3.0]))
        """})
    assert _codes(tmp_path, "train.py") == []


def test_accelerate_on_a_device_the_command_line_picks_stays_unknown(tmp_path):
    _project(tmp_path, {"train.py": """
        import argparse
        import torch
        from accelerate import Accelerator
        from torch.utils.data import DataLoader, TensorDataset

        parser = argparse.ArgumentParser()
        parser.add_argument("--cpu", action="store_true")
        accelerator = Accelerator(cpu=parser.parse_args().cpu)
        scale = torch.ones(1, 4)
        loader = accelerator.prepare(DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4))
        for (x,) in loader:
            y = x * scale
        """})
    assert _codes(tmp_path, "train.py") == []


# ---- a module offloaded to the cpu on one branch of an undecided `if` (found on diffusers' examples)
def test_encoder_offloaded_on_one_branch_then_used_on_the_other_path_is_silent(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        from accelerate import Accelerator


        def encode(text_encoder, ids, device):
            return text_encoder(ids.to(device))


        def main(train_text_encoder):
            accelerator = Accelerator()
            text_encoder = torch.nn.Embedding(100, 8)
            text_encoder.to(accelerator.device)
            cached = encode(text_encoder, torch.randint(0, 100, (2, 4)), accelerator.device)
            if not train_text_encoder:
                text_encoder.cpu()  # free memory: the embeddings are cached
            for _ in range(3):
                if train_text_encoder:
                    cached = encode(text_encoder, torch.randint(0, 100, (2, 4)), accelerator.device)


        main(False)
        """})
    assert _codes(tmp_path, "train.py") == []


def test_a_model_offloaded_on_every_path_still_meets_device_inputs(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 4).to(device)
        model.cpu()
        y = model(torch.randn(2, 4).to(device))
        """})
    assert [c for _, c in _codes(tmp_path, "train.py")] == ["DEV106"]


def test_a_cpu_model_moved_to_the_cpu_on_one_branch_is_still_not_moved(tmp_path):
    _project(tmp_path, {"train.py": """
        import sys
        import torch

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 4)
        if "--offload" in sys.argv:
            model.cpu()
        y = model(torch.randn(2, 4).to(device))
        """})
    assert [c for _, c in _codes(tmp_path, "train.py")] == ["DEV106"]
