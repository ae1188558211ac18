"""Semantics found missing by the unseen batch W (tests/fixtures/engine/unseen/w_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- what an nn.Module instance runs when called is `type(m).__call__` found in Python's method resolution
  order: `class M(nn.Module, Extractor)` runs nn.Module.__call__ (so forward) even when its second base
  declares an (abstract) `__call__`; a project `__call__` that comes first (its own, a project base's, or
  a mixin listed before nn.Module) still runs;
- `torch.set_default_tensor_type(cuda)` / `set_default_device(cuda)` in an entry script reaches a shuffling
  DataLoader built in a function it calls in another file: its sampler draws `randperm` with a cpu generator
  on the cuda default (DEV601, which said so only when both sit in one file)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


STATS = """
import torch


class GlobalStats(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.mean = torch.zeros(dim)
        self.invstd = torch.ones(dim)

    def forward(self, x):
        return (x - self.mean) * self.invstd
"""

EXTRACTOR = """
from abc import ABC, abstractmethod

import torch

from stats import GlobalStats


class FeatureExtractor(ABC):
    @abstractmethod
    def __call__(self, x):
        \"\"\"features and their length\"\"\"


class ModuleFeatureExtractor(torch.nn.Module, FeatureExtractor):
    def __init__(self, pipeline):
        super().__init__()
        self.pipeline = pipeline

    def forward(self, x):
        features = self.pipeline(x)
        return features, torch.tensor([features.shape[0]])


def get_feature_extractor(dim):
    return ModuleFeatureExtractor(torch.nn.Sequential(torch.nn.Identity(), GlobalStats(dim)))
"""


# ---- nn.Module.__call__ before a later base's __call__
def test_module_first_then_abstract_call_base_runs_forward_split_into_files(tmp_path):
    _project(tmp_path, {"stats.py": STATS, "extractor.py": EXTRACTOR, "run.py": """
        import torch

        from extractor import get_feature_extractor

        device = torch.device("cuda")
        fe = get_feature_extractor(80).to(device)
        features, length = fe(torch.randn(100, 80, device=device))
        """})
    assert _codes(tmp_path, "run.py") == [(7, "DEV201")]


def test_module_first_inside_a_featurizer_class_one_call_deeper(tmp_path):
    _project(tmp_path, {"stats.py": STATS, "extractor.py": EXTRACTOR, "featurize.py": """
        import torch

        from extractor import get_feature_extractor


        class Featurizer:
            def __init__(self, device):
                self.device = device
                self.extract = get_feature_extractor(80).to(device)

            def __call__(self, waveform):
                with torch.no_grad():
                    return self.extract(waveform.to(self.device))


        featurizer = Featurizer(torch.device("cuda"))
        feats, n = featurizer(torch.randn(100, 80))
        """})
    assert _codes(tmp_path, "featurize.py") == [(13, "DEV201")]


def test_project_module_base_before_the_abstract_base_still_runs_forward(tmp_path):
    # class Wrapped(Base, Extractor) with Base(nn.Module): the order is Wrapped, Base, Module, Extractor
    _project(tmp_path, {"stats.py": STATS, "model.py": """
        import torch

        from stats import GlobalStats


        class Callable:
            def __call__(self, x):
                return x


        class Base(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = GlobalStats(8)


        class Normalizer(Base, Callable):
            def forward(self, x):
                return self.norm(x)


        m = Normalizer().to("cuda")
        y = m(torch.randn(2, 8, device="cuda"))
        """})
    assert _codes(tmp_path, "model.py") == [(19, "DEV201")]


def test_mixin_call_listed_before_module_runs_instead_of_forward_silent(tmp_path):
    # class M(PlacesInputs, nn.Module): the mixin's __call__ runs first and moves the input to the cpu stats
    _project(tmp_path, {"stats.py": STATS, "model.py": """
        import torch

        from stats import GlobalStats


        class PlacesInputs:
            def __call__(self, x):
                return self.forward(x.cpu())


        class Normalizer(PlacesInputs, torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = GlobalStats(8)

            def forward(self, x):
                return self.norm(x)


        m = Normalizer().to("cuda")
        y = m(torch.randn(2, 8, device="cuda"))
        """})
    assert _codes(tmp_path, "model.py") == []


def test_statistics_registered_as_buffers_move_with_the_extractor_silent(tmp_path):
    _project(tmp_path, {"stats.py": STATS.replace(
        "self.mean = torch.zeros(dim)", 'self.register_buffer("mean", torch.zeros(dim))').replace(
        "self.invstd = torch.ones(dim)", 'self.register_buffer("invstd", torch.ones(dim))'),
        "extractor.py": EXTRACTOR, "run.py": """
        import torch

        from extractor import get_feature_extractor

        device = torch.device("cuda")
        fe = get_feature_extractor(80).to(device)
        features, length = fe(torch.randn(100, 80, device=device))
        """})
    assert _codes(tmp_path, "run.py") == []


# ---- a cuda default tensor type reaching a shuffling DataLoader in another file
FIT = """
import torch
from torch.utils.data import DataLoader, TensorDataset


class Estimator(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = torch.nn.Linear(dim, 1)

    def fit(self, x, y, batch_size=32):
        dataset = TensorDataset(x, y)
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
        for xb, yb in loader:
            loss = ((self.net(xb).squeeze(-1) - yb) ** 2).mean()
            loss.backward()
"""


def test_default_tensor_type_in_the_script_reaches_the_library_loader(tmp_path):
    _project(tmp_path, {"estimator.py": FIT, "main.py": """
        import argparse

        import torch

        from estimator import Estimator


        def main(args):
            if args.cuda:
                torch.set_default_tensor_type("torch.cuda.FloatTensor")
            x, y = torch.randn(100, 5), torch.randn(100)
            Estimator(5).fit(x, y)


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--cuda", action="store_true")
            main(parser.parse_args())
        """})
    assert _codes(tmp_path, "main.py") == [(12, "DEV601")]
    assert _codes(tmp_path, "estimator.py") == [(12, "DEV601")]


def test_set_default_device_then_a_trainer_builds_the_loader_one_call_deeper(tmp_path):
    _project(tmp_path, {"estimator.py": FIT, "trainer.py": """
        from estimator import Estimator


        class Trainer:
            def __init__(self, dim):
                self.model = Estimator(dim)

            def run(self, x, y):
                self.model.fit(x, y, batch_size=16)
        """, "train.py": """
        import torch

        from trainer import Trainer

        torch.set_default_device("cuda")
        x, y = torch.randn(64, 3), torch.randn(64)
        Trainer(3).run(x, y)
        """})
    assert _codes(tmp_path, "train.py") == [(7, "DEV601")]


def test_loader_given_a_generator_on_the_default_device_silent(tmp_path):
    _project(tmp_path, {"estimator.py": FIT.replace(
        "shuffle=True)", "shuffle=True,\n                            generator=torch.Generator(device=x.device))"),
        "main.py": """
        import torch

        from estimator import Estimator

        torch.set_default_tensor_type("torch.cuda.FloatTensor")
        x, y = torch.randn(100, 5), torch.randn(100)
        Estimator(5).fit(x, y)
        """})
    assert _codes(tmp_path, "main.py") == []


def test_loader_built_inside_a_with_device_block_iterated_later_silent(tmp_path):
    # `with torch.device("cuda")` sets the default for its body only: the sampler draws when iterated
    _project(tmp_path, {"loaders.py": """
        from torch.utils.data import DataLoader


        def make_loader(dataset):
            return DataLoader(dataset, batch_size=4, shuffle=True)
        """, "main.py": """
        import torch

        from loaders import make_loader

        with torch.device("cuda"):
            loader = make_loader(list(range(10)))
        for batch in loader:
            print(batch)
        """})
    assert _codes(tmp_path, "main.py") == []


def test_no_shuffle_or_cpu_default_silent(tmp_path):
    _project(tmp_path, {"estimator.py": FIT.replace("shuffle=True", "shuffle=False"), "main.py": """
        import torch

        from estimator import Estimator

        torch.set_default_tensor_type("torch.cuda.FloatTensor")
        Estimator(5).fit(torch.randn(100, 5), torch.randn(100))
        """, "cpu_main.py": """
        import torch

        from estimator import Estimator

        torch.set_default_tensor_type("torch.FloatTensor")
        Estimator(5).fit(torch.randn(100, 5), torch.randn(100))
        """})
    assert _codes(tmp_path, "main.py") == []
    assert _codes(tmp_path, "cpu_main.py") == []
