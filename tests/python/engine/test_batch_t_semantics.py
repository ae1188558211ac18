"""Semantics found missing by the unseen batch T (multi-GPU and distributed code, tests/fixtures/engine/unseen/t_*),
each tested on the variations a user writes (renamed, split into files, one helper deeper, inside a trainer
class) and on the neighbours that must stay silent:
- a process group's backend decides which tensors its collectives take (torch's backend capabilities, in the
  generated knowledge): `init_process_group("nccl")` (or `new_group(backend="nccl")`, or a `--dist-backend`
  option whose default is "nccl", or no backend at all on a machine with CUDA: torch sets up the accelerator's
  backend only) communicates cuda tensors only, so a cpu tensor given to `all_reduce`, `broadcast`,
  `all_gather` ... is DEV208; a group made with "cpu:gloo,cuda:nccl" or with gloo takes cpu tensors; a group
  or backend not known here says nothing;
- NCCL object collectives (`all_gather_object` ...) serialise into a tensor on the current CUDA device: in a
  program whose several processes never call `torch.cuda.set_device`, DEV208."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

_METER = """
    import torch
    import torch.distributed as dist


    class Meter:
        def __init__(self):
            self.sum, self.count = 0.0, 0

        def update(self, v, n=1):
            self.sum += v * n
            self.count += n

        def synchronize(self):
            total = torch.tensor([self.sum, self.count])
            dist.all_reduce(total)
            return total
"""


# ---- cpu tensors on an NCCL process group
def test_all_reduce_of_a_cpu_tensor_on_an_nccl_group(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        import torch.distributed as dist

        dist.init_process_group(backend="nccl")
        stats = torch.zeros(3)
        dist.all_reduce(stats, op=dist.ReduceOp.SUM)
        parts = [torch.zeros(3) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, stats.cuda())
    """})
    assert _codes(tmp_path, "run.py") == [(6, "DEV208"), (8, "DEV208")]


def test_meter_in_another_file_synchronised_by_a_trainer_class(tmp_path):
    _project(tmp_path, {"utils/meters.py": _METER, "utils/__init__.py": "", "train.py": """
        import os

        import torch.distributed as dist

        from utils.meters import Meter

        BACKEND = "nccl"


        class Trainer:
            def __init__(self):
                dist.init_process_group(BACKEND, rank=int(os.environ["RANK"]), world_size=2)
                self.loss = Meter()

            def evaluate(self, losses):
                for v in losses:
                    self.loss.update(v)
                return self._sync()

            def _sync(self):
                return self.loss.synchronize()


        if __name__ == "__main__":
            Trainer().evaluate([0.5, 0.25])
    """})
    assert _codes(tmp_path, "utils/meters.py") == [(15, "DEV208")]
    assert _codes(tmp_path, "train.py") == [(21, "DEV208")]


def test_backend_from_the_default_of_a_command_line_option(tmp_path):
    _project(tmp_path, {"meters.py": _METER, "main.py": """
        import argparse

        import torch.distributed as dist

        from meters import Meter

        parser = argparse.ArgumentParser()
        parser.add_argument("--dist-backend", default="nccl", type=str)
        parser.add_argument("--backend2", type=str)


        def main():
            args = parser.parse_args()
            dist.init_process_group(backend=args.dist_backend)
            m = Meter()
            m.update(1.0)
            return m.synchronize()


        main()
    """, "other.py": """
        import argparse

        import torch.distributed as dist

        from meters import Meter

        parser = argparse.ArgumentParser()
        parser.add_argument("--backend", type=str)

        args = parser.parse_args()
        dist.init_process_group(backend=args.backend)
        Meter().synchronize()
    """})
    assert _codes(tmp_path, "main.py") == [(17, "DEV208")]
    assert _codes(tmp_path, "other.py") == []  # no default: the backend is whatever the command line says


def test_group_of_its_own_backend(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        nccl_group = dist.new_group(backend="nccl")
        cpu_group = dist.new_group(backend="gloo")
        t = torch.ones(2)
        dist.broadcast(t, src=0, group=nccl_group)
        dist.broadcast(t, 0, cpu_group)
        dist.broadcast(t, src=0)
    """})
    assert _codes(tmp_path, "run.py") == [(8, "DEV208")]


def test_groups_that_take_cpu_tensors_stay_silent(tmp_path):
    _project(tmp_path, {"meters.py": _METER, "pairs.py": """
        import torch.distributed as dist

        from meters import Meter

        dist.init_process_group(backend="cpu:gloo,cuda:nccl")
        Meter().synchronize()
    """, "gloo.py": """
        import torch.distributed as dist

        from meters import Meter

        dist.init_process_group(backend="gloo")
        Meter().synchronize()
    """})
    for name in ("pairs.py", "gloo.py"):
        assert _codes(tmp_path, name) == [], name
    assert _codes(tmp_path, "meters.py") == []


def test_group_without_a_backend_is_the_accelerators_nccl(tmp_path):
    _project(tmp_path, {"chat.py": """
        import os

        import torch
        import torch.distributed as dist


        def is_torchrun():
            return all(v in os.environ for v in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"))


        def interactive(prompt):
            if is_torchrun():
                torch.distributed.init_process_group()
                torch.cuda.set_device(torch.distributed.get_rank())
                should_print = torch.distributed.get_rank() == 0
            else:
                should_print = True
            if should_print:
                length_tensor = torch.tensor([len(prompt)], dtype=torch.int)
            else:
                length_tensor = torch.tensor([0], dtype=torch.int)
            if is_torchrun():
                dist.broadcast(length_tensor, src=0)
            return int(length_tensor.item())


        interactive("hello")
    """})
    assert _codes(tmp_path, "chat.py") == [(23, "DEV208")]


def test_unknown_backend_group_or_device_stays_silent(tmp_path):
    _project(tmp_path, {"run.py": """
        import os

        import torch
        import torch.distributed as dist


        def reduce(t, group):
            dist.all_reduce(t, group=group)
            return t


        def main(group):
            dist.init_process_group(backend=os.environ.get("BACKEND", "nccl"))
            dist.all_reduce(torch.zeros(2))
            on_gpu = torch.zeros(2, device="cuda")
            return reduce(on_gpu, group), reduce(torch.zeros(2), group)


        main(None)
    """, "late.py": """
        import torch
        import torch.distributed as dist


        def sync():
            dist.all_reduce(torch.zeros(2))  # no group created before it runs


        sync()
        dist.init_process_group("nccl")
    """})
    assert _codes(tmp_path, "run.py") == []
    assert _codes(tmp_path, "late.py") == []


def test_moved_to_the_gpu_before_the_collective_stays_silent(tmp_path):
    _project(tmp_path, {"run.py": """
        import os

        import torch
        import torch.distributed as dist

        local_rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("nccl")
        torch.cuda.set_device(local_rank)
        n = torch.as_tensor(5).to(f"cuda:{local_rank}")
        dist.all_reduce(n)
        total = torch.tensor([1.0, 2.0]).cuda()
        dist.all_reduce(total)
    """})
    assert _codes(tmp_path, "run.py") == []


# ---- object collectives on NCCL and the current device
def test_object_collective_in_spawned_processes_without_set_device(tmp_path):
    _project(tmp_path, {"gather.py": """
        import torch.distributed as dist
        import torch.multiprocessing as mp


        def collect(results, world):
            out = [None] * world
            dist.all_gather_object(out, results)
            return out


        def worker(proc, world):
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29500", rank=proc, world_size=world)
            return collect({"rank": proc}, world)


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
    """})
    assert _codes(tmp_path, "gather.py") == [(7, "DEV208")]


def test_object_collective_silent_with_set_device_gloo_or_one_process(tmp_path):
    _project(tmp_path, {"set.py": """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp


        def worker(rank, world):
            torch.cuda.set_device(rank)
            dist.init_process_group("nccl", rank=rank, world_size=world)
            out = [None] * world
            dist.all_gather_object(out, rank)


        mp.spawn(worker, args=(2,), nprocs=2)
    """, "gloo.py": """
        import torch.distributed as dist
        import torch.multiprocessing as mp


        def worker(rank, world):
            dist.init_process_group("gloo", rank=rank, world_size=world)
            out = [None] * world
            dist.all_gather_object(out, rank)


        mp.spawn(worker, args=(2,), nprocs=2)
    """, "single.py": """
        import torch.distributed as dist

        dist.init_process_group("nccl", init_method="tcp://10.0.0.1:29500", rank=0, world_size=1)
        out = [None]
        dist.all_gather_object(out, {"x": 1})
    """})
    for name in ("set.py", "gloo.py", "single.py"):
        assert _codes(tmp_path, name) == [], name


def test_backend_chosen_by_cuda_availability_in_a_manager_class(tmp_path):
    _project(tmp_path, {"manager.py": """
        import torch
        import torch.distributed as dist


        class DistributedManager:
            _state = {}

            @staticmethod
            def setup(rank=0, world_size=1):
                backend = "nccl" if torch.cuda.is_available() else "gloo"
                dist.init_process_group(backend, rank=rank, world_size=world_size)
    """, "metrics.py": """
        import torch
        import torch.distributed as dist


        class Mean:
            def __call__(self, x):
                self.n = torch.as_tensor(x.shape[0])
                dist.all_reduce(self.n)
                return x.sum(0) / self.n
    """, "infer.py": """
        import torch

        from manager import DistributedManager
        from metrics import Mean


        def main():
            DistributedManager.setup(rank=0, world_size=2)
            x = torch.randn(4, 3, device="cuda")
            return Mean()(x)


        main()
    """})
    assert _codes(tmp_path, "metrics.py") == [(8, "DEV208")]
    assert _codes(tmp_path, "infer.py") == [(10, "DEV208")]


# ---- DataParallel gathers what forward returns
_DETECTOR = """
    import torch
    import torch.nn as nn


    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(8, 4)

        def forward(self, x):
            scores = self.head(x)
            if (scores > 0.5).sum() == 0:
                return torch.zeros(0), torch.zeros(0, 4)
            return scores.max(1)[0], scores
"""


def test_forward_returning_a_cpu_tensor_under_data_parallel_in_a_trainer(tmp_path):
    _project(tmp_path, {"detector.py": _DETECTOR, "trainer.py": """
        import torch

        from detector import Detector


        class Evaluator:
            def __init__(self, model):
                self.model = torch.nn.DataParallel(model).cuda()

            def predict(self, images):
                self.model.eval()
                with torch.no_grad():
                    return self._run(images.cuda())

            def _run(self, batch):
                return self.model(batch)


        Evaluator(Detector()).predict(torch.randn(16, 8))
    """})
    assert _codes(tmp_path, "trainer.py") == [(16, "DEV209")]
    assert _codes(tmp_path, "detector.py") == []  # its forward alone: no DataParallel, no gather


def test_plain_tensor_attribute_returned_under_data_parallel_but_not_a_buffer(tmp_path):
    _project(tmp_path, {"ssd.py": """
        import torch
        import torch.nn as nn


        def priors(n):
            return torch.Tensor([[0.5, 0.5, 0.1, 0.1]] * n)


        class SSD(nn.Module):
            def __init__(self):
                super().__init__()
                self.loc = nn.Conv2d(3, 16, 3, padding=1)
                self.priors = priors(4)

            def forward(self, x):
                return self.loc(x).flatten(1), self.priors


        class SSDBuffer(SSD):
            def __init__(self):
                super().__init__()
                del self.priors
                self.register_buffer("priors", priors(4))


        net = torch.nn.DataParallel(SSD()).cuda()
        out = net(torch.randn(2, 3, 8, 8).cuda())
        net2 = torch.nn.DataParallel(SSDBuffer()).cuda()
        out2 = net2(torch.randn(2, 3, 8, 8).cuda())
    """})
    assert (27, "DEV209") in _codes(tmp_path, "ssd.py")
    assert not any(line == 29 for line, _ in _codes(tmp_path, "ssd.py"))


def test_data_parallel_outputs_on_the_input_device_or_one_gpu_stay_silent(tmp_path):
    _project(tmp_path, {"detector.py": _DETECTOR, "fixed.py": """
        import torch
        import torch.nn as nn


        class Detector(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(8, 4)

            def forward(self, x):
                scores = self.head(x)
                if (scores > 0.5).sum() == 0:
                    return torch.zeros(0, device=x.device), scores.new_zeros(0, 4)
                return scores.max(1)[0], scores


        model = nn.DataParallel(Detector()).cuda()
        out = model(torch.randn(16, 8).cuda())
    """, "one_gpu.py": """
        import torch

        from detector import Detector

        model = torch.nn.DataParallel(Detector().cuda(0), device_ids=[0])
        out = model(torch.randn(16, 8).cuda())
        plain = Detector().cuda()
        out2 = plain(torch.randn(16, 8).cuda())
    """})
    assert _codes(tmp_path, "fixed.py") == []
    assert _codes(tmp_path, "one_gpu.py") == []


def test_backend_named_by_the_backend_class(tmp_path):
    _project(tmp_path, {"comm.py": """
        import torch
        import torch.distributed as dist


        def share_length(tokens):
            length = torch.tensor([len(tokens)], dtype=torch.int)
            dist.broadcast(length, src=0)
            return int(length.item())
    """, "serve.py": """
        import torch.distributed as dist
        from torch.distributed import Backend

        from comm import share_length

        dist.init_process_group(backend=Backend.NCCL)
        share_length([1, 2, 3])
    """})
    assert _codes(tmp_path, "comm.py") == [(7, "DEV208")]
    assert _codes(tmp_path, "serve.py") == [(7, "DEV208")]


def test_object_collective_under_torchrun_with_the_model_on_the_rank_gpu(tmp_path):
    _project(tmp_path, {"evaluate.py": """
        import os

        import torch
        import torch.distributed as dist


        class Evaluator:
            def __init__(self):
                self.local_rank = int(os.environ["LOCAL_RANK"])
                dist.init_process_group(backend="nccl")
                self.model = torch.nn.Linear(4, 2).to(f"cuda:{self.local_rank}")

            def gather_predictions(self, preds):
                gathered = [None] * dist.get_world_size()
                dist.all_gather_object(gathered, preds)
                return [p for part in gathered for p in part]


        if __name__ == "__main__":
            Evaluator().gather_predictions([1, 2])
    """})
    assert _codes(tmp_path, "evaluate.py") == [(15, "DEV208")]
