"""Semantics found missing on unseen real cases, batch BM (tests/fixtures/engine/unseen/bm_*): training machinery,
multi-GPU, resume.

- A device chosen between the cpu and the rank's GPU (`torch.device(f"cuda:{local_rank}" if available else "cpu")`)
  is the rank's GPU wherever CUDA is available: against the current device (a bare "cuda" / `.cuda()`, cuda:0 in
  every process while the program never calls `torch.cuda.set_device`) it differs in every process but rank 0, as
  the rank's GPU itself does. The value on the bare current device is the one reported.
- A value of unknown kind moved with `.to(device)` (`models.__dict__[arch](...).to(device)`, the registry lookup of
  the torchvision / ImageNet scripts) whose `parameters()` / `named_parameters()` / `buffers()` /
  `named_buffers()` are asked for is an nn.Module (no Tensor has those methods): they are its own tensors, on that
  device. A value never moved stays unknown.

(The GPU picked by an integer command-line option, `f"cuda:{args.gpu}"`, is deliberately left unknown against the
current device: the user may pick cuda:0. See tests/fixtures/engine/multigpu/silent_unknown_index.)"""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics)


_RANK_CHOSEN = """
    import os
    import torch
    import torch.nn as nn

    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 4).to(device)


    def etf(W):
        sub = torch.eye(4).cuda()
        return torch.norm(W @ W.T - sub)


    x = torch.ones(2, 4).cuda()
    print(model(x), etf(model.weight))
"""


def test_rank_gpu_chosen_against_cpu_meets_current_device():
    assert _codes(_RANK_CHOSEN) == [(12, "DEV202"), (16, "DEV202")]
    msg = check_source(textwrap.dedent(_RANK_CHOSEN), "t.py").diagnostics[0].message
    assert "every process but rank 0" in msg


def test_rank_gpu_chosen_renamed_in_trainer_class():
    src = """
        import os
        import torch
        import torch.nn as nn


        class Runner:
            def __init__(self):
                self.rank = int(os.environ["LOCAL_RANK"])
                self.dev = torch.device("cuda:" + str(self.rank) if torch.cuda.is_available() else "cpu")
                self.net = nn.Linear(4, 2).to(self.dev)

            def step(self, batch):
                return self.net(batch.cuda())


        Runner().step(torch.randn(3, 4))
    """
    assert _codes(src) == [(14, "DEV202")]


def test_rank_gpu_chosen_split_into_files(tmp_path):
    (tmp_path / "metrics.py").write_text(textwrap.dedent("""
        import torch


        def reference(k):
            return torch.eye(k).cuda()


        def etf(W):
            return torch.norm(W @ W.T - reference(W.shape[0]))
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import os
        import torch
        import torch.nn as nn
        from metrics import etf

        local_rank = int(os.environ["LOCAL_RANK"])
        device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(8, 4).to(device)
        print(etf(model.weight))
    """))
    found = sorted((name, d.span.line, d.code) for name in ("metrics.py", "train.py")
                   for d in check_path(str(tmp_path / name)).diagnostics)
    assert ("metrics.py", 6, "DEV202") in found


def test_rank_gpu_chosen_silent_twins():
    # everything follows the chosen device
    assert _codes(_RANK_CHOSEN.replace(".cuda()", ".to(device)")) == []
    # the current device is set to the rank's GPU: a bare cuda is that GPU
    assert _codes(_RANK_CHOSEN.replace("device = torch.device(",
                                       "torch.cuda.set_device(local_rank)\n    device = torch.device(")) == []
    # no rank: "cuda" if available is the current device itself
    assert _codes(_RANK_CHOSEN.replace('f"cuda:{local_rank}"', '"cuda"')) == []


_REGISTRY = """
    import os
    import torch
    import zoo as models  # a model zoo the analysis cannot see into

    arch = os.environ.get("ARCH", "resnet18")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = models.__dict__[arch](num_classes=10).to(local_rank)
    for name, p in model.named_parameters():
        if name == "fc.weight":
            W = p
    print(W - torch.zeros_like(W).cuda())
"""


def test_registry_model_moved_then_its_parameters_are_on_the_device():
    assert _codes(_REGISTRY) == [(12, "DEV202")]
    src = _REGISTRY.replace("for name, p in model.named_parameters():\n        if name == \"fc.weight\":\n"
                            "            W = p", "W = next(model.parameters())")
    assert _codes(src) == [(10, "DEV202")]


def test_registry_model_silent_twins():
    # never moved: where its parameters are stays unknown (an unresolved factory may place them itself)
    assert _codes(_REGISTRY.replace(".to(local_rank)", "")) == []
    # the reference follows the parameter
    assert _codes(_REGISTRY.replace("torch.zeros_like(W).cuda()", "torch.zeros_like(W)")) == []
