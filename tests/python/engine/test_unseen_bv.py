"""Semantics found missing on unseen real cases, batch BV (tests/fixtures/engine/unseen/bv_*): the training
machinery (distillation wrappers, EMA / target networks, trainers, DataParallel, resume).

- A module hook runs where the hooked module is called, not where it is written:
  `m.register_forward_hook(self._hook)` (also the forward pre-hook and backward hooks) makes torch call
  `self._hook(module, inputs, output)` at every call of `m`, so an attribute the hook assigns on its own object
  (`self.hidden = flatten(output)`) holds the hooked layer's output after `m(x)`, whatever the rest of the
  class last wrote there (`self.hidden = None` in `__init__` and after each read). Such an attribute is unknown
  to the analysis (it does not run hooks), so a module moved by `.to(hidden)` is not taken as left where it was
  (byol-pytorch's NetWrapper builds its projector with `MLP(...).to(hidden)`, hidden being the hook's output:
  its fixed twin is clean). Attributes the hook does not write keep their known devices.
- `nn.DataParallel(model)` of a model that is already a DataParallel (train() wraps it, evaluate() wraps what
  it is given again): the outer wrapper replicates the inner one onto each GPU, where the inner wrapper's module
  sits on the replica's GPU while its device_ids[0] is cuda:0, so the evaluation forward raises (DEV106 at the
  call). The value a DataParallel call returns is a wrapper (kept through copies of the value, calls and
  returns), so `isinstance(model, nn.DataParallel)` of it is True and the guarded re-wrap
  (`if n_gpu > 1 and not isinstance(model, nn.DataParallel)`) is skipped; two wrappers of one module side by
  side are not nested. An `and` with a known false operand is false whatever the unknown ones are.
- DistributedDataParallel over a DataParallel (FFB6D's `torch.distributed.launch` script wraps its model in
  `nn.DataParallel(model)` and then in DDP): DDP's forward calls the DataParallel, whose module must sit on its
  device_ids[0] (cuda:0 without device_ids) while each process moved it to `cuda:{local_rank}`: DEV106 at the
  call, as without the DDP wrapper. (FFB6D itself also passes the model through apex's `amp.initialize`, whose
  result the analysis does not know: its case stays a miss.)
- An int attribute written on both branches of an `if` (`args.n_gpu = torch.cuda.device_count()` / `= 1`)
  holds either after it, not the one the branch run last wrote (transformers' run_language_modeling.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_source
from project_fixtures import findings

UNSEEN = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "unseen"


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_WRAPPER = """
    import torch
    from torch import nn


    class MLP(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.net = nn.Linear(dim, 4)

        def forward(self, x):
            return self.net(x)


    class NetWrapper(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.projector = None
            self.hidden = None
            self.net.register_forward_hook(self._hook)

        def _hook(self, _, __, output):
            self.hidden = output.flatten(1)

        def forward(self, x):
            _ = self.net(x)
            hidden = self.hidden
            self.hidden = None
            if self.projector is None:
                self.projector = MLP(hidden.shape[1]).to(hidden)
            return self.projector(hidden)


    class Learner(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.online = NetWrapper(net)
            self.predictor = MLP(4)
            device = next(net.parameters()).device
            self.to(device)
            self.forward(torch.randn(2, 8, device=device))

        def forward(self, x):
            return self.predictor(self.online(x))
"""


def test_attribute_a_forward_hook_sets_is_unknown_after_the_hooked_call():
    assert _codes(_WRAPPER + """
    learner = Learner(nn.Linear(8, 8).cuda())
    """) == []


def test_hook_renamed_and_registered_on_a_layer_found_by_name():
    # the hooked layer comes out of `dict(named_modules())`: not a module the analysis knows, the hook still counts
    src = _WRAPPER.replace("self.hidden", "self.captured").replace("self._hook", "self._grab").replace(
        "def _hook", "def _grab").replace(
        "self.net.register_forward_hook(self._grab)",
        "layer = dict([*self.net.named_modules()]).get('0', self.net)\n            layer.register_forward_hook(self._grab)")
    assert _codes(src + """
    learner = Learner(nn.Sequential(nn.Linear(8, 8)).cuda())
    """) == []


def test_forward_pre_hook_written_attribute_is_unknown_too():
    src = _WRAPPER.replace("register_forward_hook", "register_forward_pre_hook").replace(
        "def _hook(self, _, __, output):\n            self.hidden = output.flatten(1)",
        "def _hook(self, _, inputs):\n            self.hidden = inputs[0]")
    assert _codes(src + """
    learner = Learner(nn.Linear(8, 8).cuda())
    """) == []


def test_hooked_wrapper_in_its_own_file_used_from_a_trainer_class(tmp_path: Path):
    (tmp_path / "wrapper.py").write_text(textwrap.dedent(_WRAPPER))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn
        from wrapper import Learner


        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda")
                self.learner = Learner(nn.Linear(8, 8).to(self.device))

            def step(self, x):
                return self.learner(x.to(self.device)).sum()


        if __name__ == "__main__":
            Trainer().step(torch.randn(2, 8))
    """))
    assert findings(tmp_path) == []


def test_attribute_the_hook_does_not_write_keeps_its_device():
    # the hook writes `hidden` only: `self.scale`, a plain cpu tensor attribute, still meets the cuda output
    src = _WRAPPER.replace("self.hidden = None\n            self.net.register_forward_hook",
                           "self.hidden = None\n            self.scale = torch.ones(4)\n            self.net.register_forward_hook")
    src = src.replace("return self.projector(hidden)", "return self.projector(hidden) * self.scale")
    found = _codes(src + """
    learner = Learner(nn.Linear(8, 8).cuda())
    """)
    assert found and all(code.startswith("DEV") for _, code in found)


def test_byol_fixed_twin_is_clean():
    case = UNSEEN / "bv_byol_mock_forward_cpu_image_fixed"
    assert findings(case) == []


# --- DataParallel wrapped again ------------------------------------------------------------------------------

_DOUBLE = """
    import argparse
    import torch
    from torch import nn


    def evaluate(args, model):
        if args.n_gpu > 1:
            model = torch.nn.DataParallel(model)
        x = torch.randn(4, 8).to(args.device)
        return model(x)


    def train(args, model):
        if args.n_gpu > 1:
            model = torch.nn.DataParallel(model)
        for _ in range(3):
            out = model(torch.randn(4, 8).to(args.device))
            evaluate(args, model)


    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    args = parser.parse_args()
    if args.local_rank == -1:
        args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        args.n_gpu = torch.cuda.device_count()
    else:
        torch.cuda.set_device(args.local_rank)
        args.device = torch.device("cuda", args.local_rank)
        args.n_gpu = 1
    model = nn.Linear(8, 2)
    model.to(args.device)
    train(args, model)
"""


def test_dataparallel_wrapped_again_in_evaluate_is_reported_at_its_call():
    assert _codes(_DOUBLE) == [(11, "DEV106")]


def test_guarded_rewrap_and_side_by_side_wrappers_are_silent():
    guarded = _DOUBLE.replace("    def evaluate(args, model):\n        if args.n_gpu > 1:",
                              "    def evaluate(args, model):\n        if args.n_gpu > 1 and not isinstance(model, torch.nn.DataParallel):")
    assert _codes(guarded) == []
    assert _codes("""
    import torch
    from torch import nn

    m = nn.Linear(8, 2).cuda()
    a = torch.nn.DataParallel(m)
    b = torch.nn.DataParallel(m)
    b(torch.randn(4, 8).cuda())
    """) == []


def test_double_wrap_across_files_inside_a_trainer_class(tmp_path: Path):
    (tmp_path / "evaluation.py").write_text(textwrap.dedent("""
        import torch


        def run_eval(model, n_gpu, device):
            if n_gpu > 1:
                model = torch.nn.DataParallel(model)
            return model(torch.randn(4, 8).to(device))
    """))
    (tmp_path / "trainer.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn
        from evaluation import run_eval


        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda")
                self.n_gpu = torch.cuda.device_count()
                self.model = nn.Linear(8, 2).to(self.device)
                if self.n_gpu > 1:
                    self.model = nn.DataParallel(self.model)

            def fit(self):
                for _ in range(2):
                    self.model(torch.randn(4, 8).to(self.device))
                    run_eval(self.model, self.n_gpu, self.device)


        if __name__ == "__main__":
            Trainer().fit()
    """))
    # (checked by itself, trainer.py shows it at its own call of run_eval)
    assert findings(tmp_path) == ["evaluation.py:8 DEV106", "trainer.py:18 DEV106"]


def test_single_wrap_in_evaluate_of_a_plain_model_is_silent():
    assert _codes(_DOUBLE.replace("            evaluate(args, model)\n", "") + """
    evaluate(args, model)
    """) == []


def test_hf_run_language_modeling_case_is_found_and_its_fix_is_clean():
    case = UNSEEN / "bv_hf_lm_eval_double_dataparallel"
    assert findings(case, relative=True) == ["examples/run_language_modeling.py:242 DEV106"]
    assert findings(UNSEEN / "bv_hf_lm_eval_double_dataparallel_fixed") == []


# --- DDP over a DataParallel ---------------------------------------------------------------------------------

_LAUNCHED = """
    import argparse
    import torch
    from torch import nn

    parser = argparse.ArgumentParser()
    parser.add_argument('--local_rank', type=int, default=0)
    args = parser.parse_args()


    def train():
        torch.cuda.set_device(args.local_rank)
        torch.distributed.init_process_group(backend='nccl', init_method='env://')
        model = nn.Linear(8, 2)
        device = torch.device('cuda:{}'.format(args.local_rank))
        model.to(device)
        model = nn.DataParallel(model)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank],
                                                          output_device=args.local_rank)
        return model(torch.randn(4, 8).cuda())


    if __name__ == "__main__":
        train()
"""


def test_ddp_over_a_dataparallel_of_a_rank_gpu_model_is_reported():
    assert _codes(_LAUNCHED) == [(20, "DEV106")]


def test_ddp_over_the_plain_model_or_a_dataparallel_on_its_rank_gpu_is_silent():
    assert _codes(_LAUNCHED.replace("        model = nn.DataParallel(model)\n", "")) == []
    assert _codes(_LAUNCHED.replace("nn.DataParallel(model)", "nn.DataParallel(model, device_ids=[args.local_rank])")) == []


def test_ddp_over_dataparallel_inside_a_trainer_class_in_its_own_file(tmp_path: Path):
    (tmp_path / "engine.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn


        class Runner:
            def __init__(self, model, local_rank):
                self.device = torch.device("cuda", local_rank)
                model.to(self.device)
                model = nn.DataParallel(model)
                self.model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])

            def step(self, x):
                return self.model(x.cuda())
    """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import os
        import torch
        from torch import nn
        from engine import Runner

        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        Runner(nn.Linear(8, 2), local_rank).step(torch.randn(4, 8))
    """))
    assert findings(tmp_path) == ["engine.py:14 DEV106", "main.py:9 DEV106"]
