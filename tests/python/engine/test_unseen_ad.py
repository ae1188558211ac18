"""Semantics found missing on unseen real cases, batch AD (tests/fixtures/engine/unseen/ad_*: more than one
device).

- The accelerator chosen as `torch.device("cuda" if torch.cuda.is_available() else "cpu")` is, on the CUDA
  machine the analysis assumes, the bare "cuda": the current device. A module moved there and wrapped in
  `nn.DataParallel` runs forward on a replica per GPU, and a plain tensor attribute it made with
  `.to(device)` in `__init__` (outside any replica, so on cuda:0) is not copied to the replicas: it meets
  the other replicas' inputs (ad_seq2seq_transformer_dataparallel_scale: the tutorial Transformer's
  `self.scale`). Registered buffers are copied; a device derived from the input follows the replica.
- `x.device.type` is the string "cuda" for a tensor on any GPU: as a device it names the current one
  (cuda:0 unless set), not x's GPU (ad_momentumnet_device_type_bitstore: `device = val.device.type`
  for a store that meets `val`'s data on cuda:1). `type(x) is torch.Tensor` of a tensor is True.
- Operators on instances of the project's classes run their special methods: `v *= g` calls
  `type(v).__imul__(v, g)` (falling back to `__mul__`), `a + b` calls `__add__` then `b.__radd__`.
- A process's rank (the index `mp.spawn` passes, LOCAL_RANK) is a number: `args.gpu is not None` holds once
  `args.gpu = gpu` (the ImageNet example's `train()`: only `images` moved on that branch, the target left on
  the cpu). A device that is `cuda:{gpu}` on one path and the bare "cuda" on the other is some GPU: a loss
  without weight moved there holds no tensor, and its inputs are still checked against each other.
- DataParallel nested in DataParallel: the outer wrapper's replicas carry the inner wrapper, whose module now
  sits on the replica's GPU while it scatters the inputs over its own device_ids (cuda:0 first): DEV106 at the
  inner call (ad_meal_v2_nested_dataparallel_discriminator). `if len(ids) > 1: DataParallel(m, device_ids=ids)`
  runs on several GPUs even when `ids` comes from a flag."""

from __future__ import annotations

import textwrap

from devflow.api import check_source
from project_fixtures import codes as _project_codes, write_project as _project


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# ---- DataParallel replicas and attributes made on the chosen accelerator
ENCODER = """
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self, vocab, hid, device):
            super().__init__()
            self.tok = nn.Embedding(vocab, hid)
            self.scale = torch.sqrt(torch.FloatTensor([hid])).to(device)

        def forward(self, src):
            return self.tok(src) * self.scale
"""

TRAIN = """
    import torch
    import torch.nn as nn

    from encoder import Encoder

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Encoder(100, 16, device).to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)

    for _ in range(10):
        src = torch.randint(0, 100, (32, 7)).to(device)
        out = model(src)
"""


def test_attribute_on_the_chosen_accelerator_meets_the_replicas():
    assert _codes(ENCODER + TRAIN.replace("from encoder import Encoder", "")) == [(10, "DEV202")]


def test_split_into_files(tmp_path):
    _project(tmp_path, {"encoder.py": ENCODER, "train.py": TRAIN})
    assert _project_codes(tmp_path, "encoder.py") == [(9, "DEV202")]
    assert _project_codes(tmp_path, "train.py") == [(13, "DEV202")]


def test_renamed_one_submodule_deeper_inside_a_trainer_class():
    assert _codes("""
        import torch
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, dim, dev):
                super().__init__()
                self.q = nn.Linear(dim, dim)
                self.temperature = torch.tensor([dim ** 0.5]).to(dev)

            def forward(self, x):
                return self.q(x) / self.temperature

        class Net(nn.Module):
            def __init__(self, dev):
                super().__init__()
                self.blocks = nn.ModuleList([Attention(8, dev) for _ in range(2)])

            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                return x

        class Trainer:
            def __init__(self):
                self.dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.net = nn.DataParallel(Net(self.dev).to(self.dev))

            def step(self, x):
                return self.net(x.to(self.dev))

        Trainer().step(torch.rand(4, 8))
        """) == [(9, "DEV202")]


def test_silent_when_the_tensor_is_a_buffer():
    src = ENCODER.replace("self.scale = torch.sqrt(torch.FloatTensor([hid])).to(device)",
                          "self.register_buffer('scale', torch.sqrt(torch.FloatTensor([hid])))")
    assert _codes(src + TRAIN.replace("from encoder import Encoder", "")) == []


def test_silent_when_made_in_forward_on_the_replica_or_the_input_device():
    src = ENCODER.replace("return self.tok(src) * self.scale",
                          "return self.tok(src) * self.scale.to(src.device)")
    assert _codes(src + TRAIN.replace("from encoder import Encoder", "")) == []
    made_in_forward = ENCODER.replace("return self.tok(src) * self.scale",
                                      "return self.tok(src) * torch.ones(1, device=self.scale.device.type)")
    assert _codes(made_in_forward + TRAIN.replace("from encoder import Encoder", "")) == []


def test_silent_without_dataparallel_or_on_one_gpu():
    plain = TRAIN.replace("from encoder import Encoder", "").replace(
        "if torch.cuda.device_count() > 1:\n        model = nn.DataParallel(model)\n", "")
    assert _codes(ENCODER + plain) == []
    one_gpu = TRAIN.replace("from encoder import Encoder", "").replace("nn.DataParallel(model)",
                                                                       "nn.DataParallel(model, device_ids=[0])")
    assert _codes(ENCODER + one_gpu) == []


# ---- `x.device.type` names the current device; operators run a project class's special methods
STORE = """
    import torch


    class BitStore:
        def __init__(self, shape, device):
            self.store = torch.zeros(shape, dtype=torch.long).to(device)

        def push(self, n, m):
            self.store *= m
            self.store += n


    class ExactRep:
        def __init__(self, val, device=None):
            if device is None:
                device = val.device.type
            self.intrep = self.to_int(val)
            self.aux = BitStore(val.shape, device)

        def to_int(self, x):
            if type(x) is torch.Tensor:
                return (x * 2 ** 52).long()
            return int(x * 2 ** 52)

        def __imul__(self, a):
            self.aux.push(self.intrep % 7, 7)
            return self
"""


def test_device_type_of_a_second_gpu_tensor_is_the_current_device():
    assert _codes("""
        import torch
        x = torch.rand(3).to("cuda:1")
        y = torch.zeros(3, device=x.device.type)
        z = x + y
        """) == [(4, "DEV202")]


def test_in_place_operator_runs_the_class_method_split_into_files(tmp_path):
    _project(tmp_path, {"exact.py": STORE, "train.py": """
        import torch
        from exact import ExactRep

        def run(v, gamma):
            for _ in range(3):
                v *= gamma
            return v

        x = torch.rand(16).to(torch.device("cuda:1"))
        run(ExactRep(x), 0.9)
        """})
    assert _project_codes(tmp_path, "exact.py") == [(6, "DEV202")]
    assert _project_codes(tmp_path, "train.py") == [(6, "DEV202")]


def test_binary_operator_and_its_reflected_form_inside_a_trainer_class():
    src = """
        import torch

        class Meter:
            def __init__(self, device):
                self.total = torch.zeros(1, device=device)

            def __add__(self, other):
                self.total = self.total + other
                return self

            __radd__ = __add__

        class Trainer:
            def __init__(self):
                self.dev = torch.device("cuda:1")
                self.meter = Meter(torch.rand(1).to(self.dev).device.type)

            def step(self):
                loss = torch.rand(1, device=self.dev)
                self.meter = self.meter + loss

        Trainer().step()
        """
    assert _codes(src) == [(6, "DEV202")]


def test_silent_when_the_store_follows_the_tensor_device():
    fixed = STORE.replace("device = val.device.type", "device = val.device")
    assert _codes(fixed + """
    x = torch.rand(16).to("cuda:1")
    v = ExactRep(x)
    v *= 0.9
    """) == []


def test_silent_when_the_device_type_is_used_on_the_default_gpu_or_for_autocast():
    assert _codes(STORE + """
    x = torch.rand(16).cuda()
    v = ExactRep(x)
    v *= 0.9
    """) == []
    assert _codes("""
        import torch
        x = torch.rand(3).to("cuda:1")
        with torch.autocast(device_type=x.device.type):
            y = x * 2
        """) == []


# ---- a rank is never None; a weightless loss moved to "some GPU" still checks its inputs
WORKER = """
    import argparse
    import torch
    import torch.nn as nn
    import torch.multiprocessing as mp

    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", default=None, type=int)


    def train(loader, model, criterion, args):
        for images, target in loader:
            if args.gpu is not None and torch.cuda.is_available():
                images = images.cuda(args.gpu, non_blocking=True)
            elif not args.gpu and torch.cuda.is_available():
                target = target.cuda(args.gpu, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)


    def main_worker(gpu, ngpus, args):
        args.gpu = gpu
        torch.cuda.set_device(args.gpu)
        model = nn.Linear(4, 3).cuda(args.gpu)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
        if args.gpu:
            device = torch.device("cuda:{}".format(args.gpu))
        else:
            device = torch.device("cuda")
        criterion = nn.CrossEntropyLoss().to(device)
        data = torch.utils.data.TensorDataset(torch.rand(8, 4), torch.randint(0, 3, (8,)))
        train(torch.utils.data.DataLoader(data, batch_size=4), model, criterion, args)


    if __name__ == "__main__":
        mp.spawn(main_worker, nprocs=2, args=(2, parser.parse_args()))
"""


def test_spawned_worker_index_is_not_none_and_the_target_stays_on_the_cpu():
    assert _codes(WORKER) == [(18, "DEV202")]


def test_worker_split_into_files_with_the_loop_in_a_trainer_class(tmp_path):
    _project(tmp_path, {
        "engine.py": """
            import torch


            class Trainer:
                def __init__(self, model, criterion, args):
                    self.model, self.criterion, self.args = model, criterion, args

                def fit(self, loader):
                    for images, target in loader:
                        if self.args.gpu is not None:
                            images = images.cuda(self.args.gpu)
                        elif torch.cuda.is_available():
                            target = target.cuda()
                        loss = self.criterion(self.model(images), target)
            """,
        "main.py": """
            import os
            import types
            import torch
            import torch.nn as nn

            from engine import Trainer

            args = types.SimpleNamespace(gpu=None)
            args.gpu = int(os.environ["LOCAL_RANK"])
            model = nn.Linear(4, 3).cuda(args.gpu)
            data = torch.utils.data.TensorDataset(torch.rand(8, 4), torch.randint(0, 3, (8,)))
            Trainer(model, nn.CrossEntropyLoss(), args).fit(torch.utils.data.DataLoader(data, batch_size=4))
            """})
    assert _project_codes(tmp_path, "engine.py") == [(14, "DEV202")]


def test_silent_when_both_are_moved():
    fixed = WORKER.replace("""            if args.gpu is not None and torch.cuda.is_available():
                images = images.cuda(args.gpu, non_blocking=True)
            elif not args.gpu and torch.cuda.is_available():
                target = target.cuda(args.gpu, non_blocking=True)""", """            images = images.cuda(args.gpu, non_blocking=True)
            target = target.cuda(args.gpu, non_blocking=True)""")
    assert fixed != WORKER and _codes(fixed) == []


def test_silent_when_the_gpu_comes_from_a_flag():
    flag = WORKER.replace("        args.gpu = gpu\n", "").replace(
        "mp.spawn(main_worker, nprocs=2, args=(2, parser.parse_args()))",
        "args = parser.parse_args()\n        main_worker(args.gpu, 1, args)")
    assert flag != WORKER and _codes(flag) == []


# ---- DataParallel nested in DataParallel; a `len(ids) > 1` guard means several GPUs
NESTED = """
    import argparse
    import torch
    import torch.nn as nn


    class Critic(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(10, 2)

        def forward(self, x):
            return self.fc(x)


    class CriticLoss(nn.Module):
        def __init__(self, critic):
            super().__init__()
            self.critic = critic

        def forward(self, x):
            return self.critic(x).mean()


    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    critic = torch.nn.DataParallel(Critic().cuda())
    loss_fn = CriticLoss(critic).cuda()
    if len(args.gpus) > 1:
        loss_fn = torch.nn.DataParallel(loss_fn, device_ids=args.gpus)
    for _ in range(3):
        loss = loss_fn(torch.rand(8, 10).cuda())
"""


def test_dataparallel_nested_in_dataparallel():
    assert _codes(NESTED) == [(22, "DEV106")]


def test_nested_split_into_files_one_helper_deeper(tmp_path):
    head, script = NESTED.split("    parser = argparse.ArgumentParser()")
    _project(tmp_path, {"losses.py": head, "train.py": """
        import torch
        from losses import Critic, CriticLoss

        def build(n_gpus):
            critic = torch.nn.DataParallel(Critic().cuda())
            crit = CriticLoss(critic).cuda()
            return torch.nn.DataParallel(crit) if n_gpus > 1 else crit

        def step(fn, x):
            return fn(x.cuda())

        loss_fn = build(torch.cuda.device_count())
        step(loss_fn, torch.rand(8, 10))
        """})
    assert _project_codes(tmp_path, "losses.py") == [(21, "DEV106")]
    assert _project_codes(tmp_path, "train.py") == [(10, "DEV106")]


def test_silent_when_only_one_of_the_two_is_wrapped_or_on_one_gpu():
    inner_only = NESTED.replace("        loss_fn = torch.nn.DataParallel(loss_fn, device_ids=args.gpus)",
                                "        pass")
    assert _codes(inner_only) == []
    outer_only = NESTED.replace("critic = torch.nn.DataParallel(Critic().cuda())", "critic = Critic().cuda()")
    assert _codes(outer_only) == []
    unguarded = NESTED.replace("    if len(args.gpus) > 1:\n        loss_fn", "    if args.gpus:\n        loss_fn")
    assert unguarded != NESTED and _codes(unguarded) == []
