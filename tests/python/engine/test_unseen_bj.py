"""Semantics found missing on unseen real cases, batch BJ (tests/fixtures/engine/unseen/bj_*): training
machinery and multi-GPU (resume, checkpoints, AMP, DDP / DataParallel, Fabric).

- A GradScaler kept on an object (`self.scaler = torch.cuda.amp.GradScaler()` in `__init__`, used in
  `optimizer_step`) belongs to the object: whether its state is saved (`self.scaler.state_dict()`) or restored
  (`self.scaler.load_state_dict(...)`) is decided over all the methods of the class. A checkpoint written with
  `torch.save({... .state_dict() ...})` in a method of a class whose scaler is never saved, and an optimizer
  member (`self.optimizer = torch.optim.X(...)`) resumed with `load_state_dict(ckpt[...])` in a class whose
  scaler is never restored, restart the loss scale on every resume (DEV402; ConfLUNet's TrainingPipeline).
  An optimizer member built by an unknown factory is not taken as an optimizer (unknown stays silent).
- A class defining `__new__` is a factory: `Network(config)` runs `Network.__new__(Network, config)`, and when that
  returns an object that is not an instance of `Network` (`return FullyConnectedNetwork(...)`), Python skips
  `__init__` and the call's value is that object (muzero-general's `models.MuZeroNetwork`).
- `nn.DataParallel(module)` without device_ids uses every visible GPU: in a program written for GPU machines (it
  names CUDA somewhere, e.g. `train_on_gpu = torch.cuda.is_available()`), a DataParallel module called while its
  parameters are still on the cpu fails ("module must have its parameters and buffers on device cuda:0"), as it
  already did where the wrap sits under `if torch.cuda.is_available():`. A program that never names CUDA runs
  DataParallel as a plain call on the cpu: silent (muzero-general's DiagnoseModel, never moved to the GPU).
- A process's rank is either a machine's local rank (LOCAL_RANK, SLURM_LOCALID, `--local_rank`,
  `dist.get_node_local_rank()`) or the job's global rank (RANK, SLURM_PROCID, `dist.get_rank()`): as GPU indices
  they are the same only on the first node, so `DDP(model, device_ids=[dist.get_rank()])` with the model on
  `cuda:{LOCAL_RANK}` fails on every other node (deepmd-pytorch's Trainer). Two devices of the same kind of rank,
  or a rank of unknown kind (the index `mp.spawn` passes), are not said to differ. `rank if distributed else 0`
  is still the rank: 0 is the rank of the only process."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- a GradScaler member of a trainer class ------------------------------------------------------------------

_PIPELINE = """
    import os
    import torch
    import torch.nn as nn


    class TrainingPipeline:
        def __init__(self, path):
            self.path = path
            self.model = nn.Linear(4, 4).cuda()
            self.optimizer = torch.optim.Adam(self.model.parameters())
            self.scaler = torch.cuda.amp.GradScaler()
            self.resume()

        def resume(self):
            if os.path.exists(self.path):
                checkpoint = torch.load(self.path)
                self.model.load_state_dict(checkpoint["state_dict"])
                self.optimizer.load_state_dict(checkpoint["optimizer"])
                {RESTORE}

        def optimizer_step(self, loss):
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()

        def save_checkpoint(self):
            torch.save({"state_dict": self.model.state_dict(), "optimizer": self.optimizer.state_dict(){SAVE}},
                       self.path)
"""


def _pipeline(restore: str = "pass", save: str = "") -> str:
    return _PIPELINE.replace("{RESTORE}", restore).replace("{SAVE}", save)


def test_member_scaler_neither_saved_nor_restored():
    assert _codes(_pipeline()) == [(19, "DEV402"), (28, "DEV402")]


def test_member_scaler_saved_but_not_restored():
    assert _codes(_pipeline(save=', "scaler": self.scaler.state_dict()')) == [(19, "DEV402")]


def test_member_scaler_saved_and_restored_is_silent():
    assert _codes(_pipeline('self.scaler.load_state_dict(checkpoint["scaler"])',
                            ', "scaler": self.scaler.state_dict()')) == []


def test_renamed_members_and_receiver():
    src = _pipeline().replace("self.", "trainer.").replace("(self", "(trainer") \
        .replace("self.scaler", "trainer.grad_scaler").replace("trainer.scaler", "trainer.grad_scaler") \
        .replace("trainer.optimizer", "trainer.opt")
    assert _codes(src) == [(19, "DEV402"), (28, "DEV402")]


def test_scaler_built_in_a_helper_method_of_the_class():
    src = _pipeline().replace("self.scaler = torch.cuda.amp.GradScaler()\n", "self.setup_amp()\n") + textwrap.indent(
        textwrap.dedent("""
        def setup_amp(self):
            self.scaler = torch.amp.GradScaler("cuda")
        """), "        ")
    assert _codes(src) == [(19, "DEV402"), (28, "DEV402")]


def test_optimizer_member_from_an_unknown_factory_is_not_an_optimizer():
    src = _pipeline().replace("torch.optim.Adam(self.model.parameters())", "build_optimizer(self.model)")
    assert _codes(src) == [(28, "DEV402")]


def test_class_without_a_scaler_is_silent():
    assert _codes(_pipeline().replace("self.scaler = torch.cuda.amp.GradScaler()\n", "")
                  .replace("self.scaler.scale(loss).backward()", "loss.backward()")
                  .replace("self.scaler.step(self.optimizer)", "self.optimizer.step()")
                  .replace("self.scaler.update()", "pass")) == []


def test_scaler_of_another_class_does_not_count():
    src = textwrap.dedent(_pipeline()) + textwrap.dedent("""
        class Other:
            def __init__(self):
                self.scaler = torch.cuda.amp.GradScaler()

            def state(self):
                return {"scaler": self.scaler.state_dict()}

            def load(self, ck):
                self.scaler.load_state_dict(ck["scaler"])
        """)
    assert _codes(src) == [(19, "DEV402"), (28, "DEV402")]


def test_trainer_subclass_in_another_file(tmp_path: Path):
    (tmp_path / "trainer.py").write_text(textwrap.dedent(_pipeline()))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        from trainer import TrainingPipeline


        class SemanticTrainer(TrainingPipeline):
            pass


        if __name__ == "__main__":
            SemanticTrainer("ckpt.pth")
        """))
    got = sorted((f, d.span.line, d.code) for f in ("trainer.py", "run.py")
                 for d in check_path(str(tmp_path / f)).diagnostics)
    assert got == [("trainer.py", 19, "DEV402"), ("trainer.py", 28, "DEV402")]


# --- a factory class: __new__ returns another class's instance ----------------------------------------------

_FACTORY = """
    import torch
    import torch.nn as nn


    class FullyConnected(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = nn.Linear(n, n)

        def forward(self, x):
            return self.lin(x)


    class Network:
        def __new__(cls, config):
            if config["kind"] == "fc":
                return FullyConnected(config["n"])
            raise NotImplementedError(config["kind"])


    net = Network({"kind": "fc", "n": 4})
    {MOVE}
    x = torch.randn(2, 4).cuda()
    net(x)
"""


def test_new_returning_another_class_instance_is_the_call_value():
    assert _codes(_FACTORY.replace("{MOVE}", "")) == [(25, "DEV106")]


def test_new_returning_another_class_instance_moved_is_silent():
    assert _codes(_FACTORY.replace("{MOVE}", "net.cuda()")) == []


def test_new_returning_an_instance_of_its_own_class_runs_init():
    src = """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __new__(cls, *args, **kwargs):
                return super().__new__(cls)

            def __init__(self, n):
                super().__init__()
                self.lin = nn.Linear(n, n)

            def forward(self, x):
                return self.lin(x)


        net = Net(4).cuda()
        net(torch.randn(2, 4).cuda())
    """
    assert _codes(src) == []


# --- DataParallel of a module left on the cpu, in a program that uses CUDA -----------------------------------

_DP = """
    import torch
    import torch.nn as nn


    def mlp(n):
        return nn.Sequential(nn.Linear(n, n), nn.ELU())


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.representation = torch.nn.DataParallel(mlp(4))

        def initial_inference(self, obs):
            return self.representation(obs)


    class Diagnose:
        def __init__(self, weights):
            self.model = Net()
            self.model.load_state_dict(weights)
            {MOVE}

        def run(self, obs):
            obs = torch.tensor(obs).float().to(next(self.model.parameters()).device)
            return self.model.initial_inference(obs)


    def main(weights, obs):
        {CUDA}
        Diagnose(weights).run(obs)
"""


def _dp(move: str = "", cuda: str = "train_on_gpu = torch.cuda.is_available()") -> str:
    return _DP.replace("{MOVE}", move or "pass").replace("{CUDA}", cuda)


def test_dataparallel_module_on_cpu_in_a_cuda_program():
    assert _codes(_dp()) == [(16, "DEV106")]


def test_dataparallel_module_moved_to_the_device_is_silent():
    assert _codes(_dp('self.model.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))')) == []


def test_dataparallel_module_on_cpu_in_a_program_without_cuda_is_silent():
    assert _codes(_dp(cuda="pass")) == []


def test_dataparallel_module_on_cpu_split_into_files(tmp_path: Path):
    src = textwrap.dedent(_dp())
    models, _, rest = src.partition("class Diagnose:")
    (tmp_path / "models.py").write_text(models)
    (tmp_path / "diagnose.py").write_text("import torch\nfrom models import Net\n\n\nclass Diagnose:" + rest)
    got = sorted((f, d.span.line, d.code) for f in ("models.py", "diagnose.py")
                 for d in check_path(str(tmp_path / f)).diagnostics)
    assert got == [("diagnose.py", 13, "DEV106")]  # the call of the unmoved model, in the file that builds it


# --- a machine's local rank and the job's global rank ---------------------------------------------------------

_RANKS = """
    import os
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
    DEVICE = torch.device(f"cuda:{LOCAL_RANK}")


    class Trainer:
        def __init__(self):
            self.model = nn.Linear(4, 4).to(DEVICE)
            self.rank = {RANK}
            if dist.is_initialized():
                self.model = DDP(self.model, device_ids=[self.rank], output_device=self.rank)


    def main():
        dist.init_process_group(backend="nccl")
        Trainer()


    if __name__ == "__main__":
        main()
"""


def test_ddp_device_ids_global_rank_with_the_model_on_the_local_rank():
    assert _codes(_RANKS.replace("{RANK}", "dist.get_rank()")) == [(17, "DEV106")]


def test_ddp_device_ids_global_rank_or_zero():
    assert _codes(_RANKS.replace("{RANK}", "dist.get_rank() if dist.is_initialized() else 0")) == [(17, "DEV106")]


def test_ddp_device_ids_rank_environment_variable():
    assert _codes(_RANKS.replace("{RANK}", 'int(os.environ["RANK"])')) == [(17, "DEV106")]


def test_ddp_device_ids_local_rank_is_silent():
    assert _codes(_RANKS.replace("{RANK}", "LOCAL_RANK")) == []
    assert _codes(_RANKS.replace("{RANK}", 'int(os.environ["LOCAL_RANK"])')) == []


def test_ddp_device_ids_global_rank_with_the_model_on_the_global_rank_is_silent():
    src = _RANKS.replace("{RANK}", "dist.get_rank()").replace('os.environ.get("LOCAL_RANK", 0)', 'os.environ.get("RANK", 0)')
    assert _codes(src) == []


def test_spawned_index_is_a_rank_of_unknown_kind():
    src = """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def worker(gpu, world_size):
            dist.init_process_group("nccl", rank=gpu, world_size=world_size)
            model = nn.Linear(4, 4).cuda(gpu)
            model = DDP(model, device_ids=[dist.get_rank()])


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
    """
    assert _codes(src) == []
