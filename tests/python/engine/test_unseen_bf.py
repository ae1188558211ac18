"""Semantics found missing on unseen real cases, batch BF (tests/fixtures/engine/unseen/bf_*): models written
by hand (tensors a forward or __init__ creates, plain tensor attributes, hidden states, loss targets).

- unittest runs every method of a `unittest.TestCase` subclass whose name starts with the loader's prefix
  ("test") on its own, after `setUp()` on the same instance: such a method is an entry point whose calls are
  followed (as a top-level `main()` is), with `self` as setUp left it. transformers' model tests build the
  model in a tester object made in setUp, move it to `torch_device` and call it: CTRLModel's cpu position
  table indexed by the cuda `position_ids` is found from the test (bf_ctrl_pos_encoding).
- A factory's sizes are positional and its device= keyword-only: `torch.zeros(*batch["positions"].shape, n)`
  spreads zero or more sizes before the plain `n`, so the tensor is on the cpu and at least 1-d (not a 0-dim
  scalar that mixes with any device). nanofold's `Nanofold.forward` starts the single representation that
  way and hands it to the moved structure module's LayerNorm (bf_nanofold_single_zeros, once the device is
  known).
- unittest fixtures the engine does not model keep a test on its own: a test whose class (or project base) has
  `setUpClass` (deepparse's integration tests set `cls.a_cpu_device` there), or that reads a class-body
  attribute as `self.name` (other class attributes, `all_model_classes = (...)`, do not matter); and the
  body of `with self.assertRaises(...)` is meant to fail (avalanche's DDP test expects the unmoved model to
  raise), so it is not run.
- A project class whose base is not resolved (coqui TTS's vocoders derive from `trainer.TrainerModel`, an
  nn.Module of a package not installed) may be an nn.Module: `.to()` on its instance may move the submodules
  it holds, whose placement is then unknown (not "never moved"). Followed from TTS's unittest test of
  Wavegrad, it was a false alarm."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- unittest test methods are entry points ----------------------------------------------------------------

_MODEL = """
    import unittest
    import torch
    from torch import nn


    def table(n, d):
        return torch.arange(n, dtype=torch.float).unsqueeze(1) * torch.ones(d)


    class PosModel(nn.Module):
        def __init__(self, n=16, d=8):
            super().__init__()
            self.table = table(n, d)
            self.w = nn.Embedding(10, d)

        def forward(self, ids):
            pos = torch.arange(ids.shape[-1], device=ids.device)
            return self.w(ids) + self.table[pos, :]


    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
"""


def _test_lines(src: str) -> list[str]:
    return [f"{line} {code}" for line, code in _codes(src)]


def test_test_method_calls_are_followed():
    src = _MODEL + """

    class PosModelTest(unittest.TestCase):
        def test_forward(self):
            model = PosModel()
            model.to(DEVICE)
            ids = torch.randint(0, 10, (2, 5), device=DEVICE)
            model(ids)
    """
    assert any(code == "DEV204" for _, code in _codes(src))


def test_state_set_in_setUp_reaches_the_test():
    src = _MODEL + """

    class Tester:
        def __init__(self, parent, batch_size=2):
            self.parent = parent
            self.batch_size = batch_size

        def prepare(self):
            return PosModel(), torch.randint(0, 10, (self.batch_size, 5), device=DEVICE)

        def create_and_check(self, model, ids):
            model.to(DEVICE)
            model.eval()
            out = model(ids)
            self.parent.assertEqual(out.shape[0], self.batch_size)


    class PosModelTest(unittest.TestCase):
        def setUp(self):
            self.model_tester = Tester(self)

        def test_model(self):
            config_and_inputs = self.model_tester.prepare()
            self.model_tester.create_and_check(*config_and_inputs)
    """
    assert any(code == "DEV204" for _, code in _codes(src))


def test_from_unittest_import_TestCase_and_a_project_base():
    src = _MODEL.replace("import unittest", "from unittest import TestCase") + """

    class Mixin:
        def check(self, model):
            model.to(DEVICE)
            return model(torch.randint(0, 10, (2, 5), device=DEVICE))


    class PosModelTest(Mixin, TestCase):
        def test_check(self):
            self.check(PosModel())
    """
    assert any(code == "DEV204" for _, code in _codes(src))


def test_test_in_another_file_than_the_model(tmp_path: Path):
    (tmp_path / "models.py").write_text(textwrap.dedent(_MODEL))
    (tmp_path / "test_models.py").write_text(textwrap.dedent("""
        import unittest
        import torch
        from models import DEVICE, PosModel


        class PosModelTest(unittest.TestCase):
            def test_forward(self):
                model = PosModel().to(DEVICE)
                model(torch.randint(0, 10, (2, 5), device=DEVICE))
    """))
    diags = check_path(str(tmp_path / "test_models.py")).diagnostics
    assert [(d.span.line, d.code) for d in diags] == [(10, "DEV204")]


# --- silent twins ------------------------------------------------------------------------------------------

def test_fixed_model_is_silent_from_the_test():
    src = _MODEL.replace("self.table[pos, :]", "self.table.to(ids.device)[pos, :]") + """

    class PosModelTest(unittest.TestCase):
        def setUp(self):
            self.model = PosModel()

        def test_forward(self):
            self.model.to(DEVICE)
            self.model(torch.randint(0, 10, (2, 5), device=DEVICE))
    """
    assert not any(code in ("DEV204", "DEV201") for _, code in _codes(src))


def test_test_with_unknown_device_is_silent():
    src = _MODEL + """

    class PosModelTest(unittest.TestCase):
        def setUp(self):
            self.device = self.id()

        def test_forward(self):
            model = PosModel().to(self.device)
            model(torch.randint(0, 10, (2, 5), device=self.device))
    """
    assert not any(code == "DEV204" for _, code in _codes(src))


def test_a_helper_method_of_a_test_case_is_not_an_entry():
    # not a test method: the runner never calls `check_on` by itself, and nothing here calls it
    src = _MODEL + """

    class PosModelTest(unittest.TestCase):
        def check_on(self, device):
            model = PosModel().to(device)
            model(torch.randint(0, 10, (2, 5), device=device))
    """
    assert not any(code == "DEV204" for _, code in _codes(src))


def test_a_plain_class_with_test_methods_is_not_a_unittest_case():
    src = _MODEL + """

    class Helper:
        def test_forward(self):
            model = PosModel().to(DEVICE)
            model(torch.randint(0, 10, (2, 5), device=DEVICE))
    """
    assert not any(code == "DEV204" for _, code in _codes(src))


# --- a factory with a spread size ---------------------------------------------------------------------------

_STRUCT = """
    import torch
    from torch import nn


    class Structure(nn.Module):
        def __init__(self, n=4):
            super().__init__()
            self.single_layer_norm = nn.LayerNorm(n)

        def forward(self, single):
            return self.single_layer_norm(single)


    class Fold(nn.Module):
        def __init__(self, n=4):
            super().__init__()
            self.n = n
            self.structure_module = Structure(n)

        def start(self, positions):
            return SINGLE

        def forward(self, batch):
            single = self.start(batch["positions"])
            return self.structure_module(single)


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Fold().to(device)
    model({"positions": torch.zeros(2, 8, dtype=torch.long, device=device)})
"""


_MIX = ("DEV201", "DEV202")  # at the factory, or where the helper's result is handed to the moved module


def _mixes(src: str) -> bool:
    return any(code in _MIX for _, code in _codes(src))


def _fold(single: str) -> str:
    return _STRUCT.replace("SINGLE", single)


def test_spread_batch_dims_before_a_size_is_a_cpu_tensor_with_dims():
    assert _mixes(_fold("torch.zeros(*positions.shape, self.n)"))


def test_spread_sizes_variations():
    for expr in ("torch.randn(*positions.shape, 3, self.n)", "torch.ones(*positions.shape[:-1], 8, self.n)",
                 "torch.empty(*positions.size(), self.n).normal_()"):
        assert _mixes(_fold(expr)), expr


def test_spread_sizes_in_a_trainer_class(tmp_path: Path):
    (tmp_path / "model.py").write_text(textwrap.dedent(_fold("torch.zeros(*positions.shape, self.n)")
                                                       .split("device = torch.device")[0]))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from model import Fold


        class Trainer:
            def __init__(self, device):
                self.device = device
                self.model = Fold().to(self.device)

            def step(self, batch):
                batch = {k: v.to(self.device) for k, v in batch.items()}
                return self.model(batch)


        if __name__ == "__main__":
            trainer = Trainer(torch.device("cuda"))
            trainer.step({"positions": torch.zeros(2, 8, dtype=torch.long)})
    """))
    diags = check_path(str(tmp_path / "train.py")).diagnostics
    assert any(d.code in _MIX for d in diags)


def test_spread_sizes_silent_twins():
    # the fix (device= of the batch), and a spread alone (its shape may be empty: a 0-dim scalar)
    for expr in ("torch.zeros(*positions.shape, self.n, device=positions.device)",
                 "torch.zeros(*positions.shape)", "torch.zeros(*positions.shape, (2, self.n))"):
        assert not _mixes(_fold(expr)), expr


def test_spread_sizes_with_unknown_model_device_is_silent():
    src = _fold("torch.zeros(*positions.shape, self.n)").replace(
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', "import sys\n    device = sys.argv[1]")
    assert not _mixes(src)


def test_setUpClass_state_keeps_the_tests_on_their_own():
    # what setUpClass stores on the class (a cpu device here) is not modelled: the test is not followed
    src = _MODEL + """

    class PosModelTest(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            cls.a_cpu_device = torch.device("cpu")

        def setUp(self):
            self.ids = torch.randint(0, 10, (2, 5))

        def prepare(self, device):
            return self.ids.to(device)

        def test_forward(self):
            nn.Linear(5, 5)(self.prepare(self.a_cpu_device).float())
    """
    assert not any(code.startswith("DEV") for _, code in _codes(src))


def test_body_of_assertRaises_is_expected_to_fail():
    src = _MODEL + """

    class PosModelTest(unittest.TestCase):
        def test_cpu_input_raises(self):
            model = PosModel().to("cuda")
            with self.assertRaises(RuntimeError):
                model(torch.randint(0, 10, (2, 5)))
            model(torch.randint(0, 10, (2, 5), device="cuda"))
    """
    assert not any(code == "DEV201" for _, code in _codes(src))
    # the same cpu input outside the block is reported
    bare = src.replace("with self.assertRaises(RuntimeError):", "if True:")
    assert any(code == "DEV201" for _, code in _codes(bare))


def test_class_attributes_the_test_does_not_read_do_not_matter():
    src = _MODEL + """

    class PosModelTest(unittest.TestCase):
        all_model_classes = (PosModel,)
        test_pruning = True

        def test_forward(self):
            model = PosModel().to(DEVICE)
            model(torch.randint(0, 10, (2, 5), device=DEVICE))
    """
    assert any(code == "DEV204" for _, code in _codes(src))


def test_a_class_attribute_the_test_reads_keeps_it_on_its_own():
    src = _MODEL + """

    class PosModelTest(unittest.TestCase):
        device = torch.device("cpu")

        def test_forward(self):
            model = nn.Linear(5, 5)
            model(torch.rand(2, 5).to(self.device))
    """
    assert not any(code.startswith("DEV") for _, code in _codes(src))


# --- a class whose base is not resolved may be an nn.Module -----------------------------------------------------

_VOCODER = """
    import torch
    from torch import nn
    from trainer import TrainerModel


    class FiLM(nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.conv = nn.Conv1d(i, o, 3, padding=1)

        def forward(self, x, noise_scale):
            return self.conv(x) * noise_scale[:, None, None]


    class BaseVocoder(TrainerModel):
        def __init__(self, config):
            super().__init__()
            self.config = config


    class Wavegrad(BaseVocoder):
        def __init__(self, config):
            super().__init__(config)
            self.film = nn.ModuleList([])
            for oc in (8, 8):
                self.film.append(FiLM(4, oc))

        def forward(self, x, noise_scale):
            return self.film[0](x, noise_scale)


    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
"""


def test_to_on_an_instance_of_an_unresolved_base_may_move_its_submodules():
    src = _VOCODER + """
    model = Wavegrad({})
    model.to(device)
    model.forward(torch.rand(8, 4, 20).to(device), torch.rand(8).to(device))
    """
    assert not any(code.startswith("DEV") for _, code in _codes(src))


def test_unresolved_base_in_a_test_method_is_silent():
    src = "import unittest\n" + _VOCODER + """

    class WavegradTrainTest(unittest.TestCase):
        def test_train_step(self):
            model = Wavegrad({})
            model.train()
            model.to(device)
            model.forward(torch.rand(8, 4, 20).to(device), torch.rand(8).to(device))
    """
    assert not any(code.startswith("DEV") for _, code in _codes(src))


def test_a_known_plain_class_is_not_a_module():
    # a project class whose bases are all known and not modules: `.to()` is its own method, not a move
    src = _VOCODER.replace("from trainer import TrainerModel", "").replace("class BaseVocoder(TrainerModel):",
                                                                         "class BaseVocoder:") + """
    model = Wavegrad({})
    model.film.to(device)
    model.forward(torch.rand(8, 4, 20).to(device), torch.rand(8).to(device))
    """
    assert not any(code.startswith("DEV") for _, code in _codes(src))
