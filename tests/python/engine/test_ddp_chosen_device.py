"""DistributedDataParallel's `device_ids` against a module placed on a device the program chose between the cpu and a
GPU (`DEVICE = torch.device(f"cuda:{LOCAL_RANK}")` unless CUDA is missing or the user asked for the cpu, as an
`if` statement or a conditional expression). The analysis assumes a machine with CUDA, where the choice is its GPU
(on the cpu path DDP refuses `device_ids` for a cpu module too), so `device_ids=[dist.get_rank()]` (the job's global
rank) with the module on `cuda:{LOCAL_RANK}` is DEV106, found where `device_ids` is written (deepmd-pytorch#45).
A choice whose GPU side is not known, or the same rank on both sides, stays silent."""

from __future__ import annotations

import textwrap

from devflow.api import check_source
from project_fixtures import findings


def _codes(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics)


_ENV = '''
    import argparse
    import os
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    LOCAL_RANK = os.environ.get("LOCAL_RANK")
    LOCAL_RANK = int(0 if LOCAL_RANK is None else LOCAL_RANK)
    CHOICE
'''

_TRAINER = '''

    class Trainer:
        def __init__(self):
            self.model = nn.Linear(4, 4).to(DEVICE)
            self.rank = dist.get_rank() if dist.is_initialized() else 0
            if dist.is_initialized():
                self.model = DDP(
                    self.model,
                    device_ids=[IDS],
                    output_device=IDS,
                )

        def step(self, x):
            return self.model(x.to(DEVICE))


    def main():
        dist.init_process_group(backend="nccl")
        Trainer().step(torch.randn(2, 4))


    if __name__ == "__main__":
        main()
'''

_STATEMENT = '''if os.environ.get("DEVICE") == "cpu" or torch.cuda.is_available() is False:
        DEVICE = torch.device("cpu")
    else:
        DEVICE = torch.device(f"cuda:{LOCAL_RANK}")'''


def _program(choice: str, ids: str = "self.rank") -> str:
    return (_ENV.replace("CHOICE", choice) + _TRAINER).replace("IDS", ids)


def _ids_line(src: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if "device_ids=" in line)


def test_statement_choice_with_an_opt_out_and_the_global_rank():
    src = _program(_STATEMENT)
    assert _codes(src) == [(_ids_line(src), "DEV106")]
    d = check_source(textwrap.dedent(src), "t.py").diagnostics[0]
    assert "`DEVICE` (cuda:{LOCAL_RANK} where CUDA is available" in d.message
    assert "global rank" in d.message


def test_conditional_expression_choice():
    src = _program('DEVICE = torch.device(f"cuda:{LOCAL_RANK}" if torch.cuda.is_available() else "cpu")')
    assert _codes(src) == [(_ids_line(src), "DEV106")]


def test_command_line_opt_out_reversed_test():
    choice = ('args = argparse.ArgumentParser().parse_args()\n    DEVICE = torch.device("cpu" if args.cpu or '
              'not torch.cuda.is_available() else f"cuda:{LOCAL_RANK}")')
    src = _program(choice)
    assert _codes(src) == [(_ids_line(src), "DEV106")]


def test_renamed_environment_rank():
    src = _program(_STATEMENT).replace("LOCAL_RANK", "local_gpu").replace('"local_gpu"', '"LOCAL_RANK"')
    assert _codes(src) == [(_ids_line(src), "DEV106")]


def test_the_local_rank_in_device_ids_is_silent():
    assert _codes(_program(_STATEMENT, "LOCAL_RANK")) == []
    assert _codes(_program('DEVICE = torch.device(f"cuda:{LOCAL_RANK}" if torch.cuda.is_available() else "cpu")',
                           "LOCAL_RANK")) == []


def test_a_choice_with_an_unknown_gpu_side_is_silent():
    src = _program('DEVICE = torch.device(os.environ["TRAIN_DEVICE"] if torch.cuda.is_available() else "cpu")')
    assert _codes(src) == []
    src = _program('DEVICE = torch.device(os.environ.get("TRAIN_DEVICE", "cpu"))')
    assert _codes(src) == []


def test_split_into_an_environment_module_a_trainer_and_an_entry(tmp_path):
    pkg = tmp_path / "proj"
    (pkg / "utils").mkdir(parents=True)
    (pkg / "train").mkdir()
    for d in (pkg, pkg / "utils", pkg / "train"):
        (d / "__init__.py").write_text("")
    (pkg / "utils" / "env.py").write_text(textwrap.dedent(_ENV.replace("CHOICE", _STATEMENT)))
    trainer = textwrap.dedent(_TRAINER).split("\n\ndef main():")[0].replace("IDS", "self.rank")
    (pkg / "train" / "trainer.py").write_text(
        "import torch\nimport torch.distributed as dist\nimport torch.nn as nn\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\nfrom proj.utils.env import DEVICE\n"
        + trainer)
    (tmp_path / "run.py").write_text(textwrap.dedent('''
        import torch
        import torch.distributed as dist
        from proj.train import trainer


        def train():
            dist.init_process_group(backend="nccl")
            trainer.Trainer().step(torch.randn(2, 4))


        if __name__ == "__main__":
            train()
    '''))
    text = (pkg / "train" / "trainer.py").read_text().splitlines()
    ids_line = next(i for i, line in enumerate(text, 1) if "device_ids=" in line)
    assert f"proj/train/trainer.py:{ids_line} DEV106" in findings(tmp_path, relative=True)


def test_a_bare_cuda_choice_is_the_current_device():
    """`"cuda" if available else "cpu"` is the current GPU: cuda:0 in every process unless the program sets it."""
    choice = 'DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
    src = _program(choice, "LOCAL_RANK")
    assert _codes(src) == [(_ids_line(src), "DEV106")]
    assert _codes(_program(choice + "\n    torch.cuda.set_device(LOCAL_RANK)", "LOCAL_RANK")) == []
