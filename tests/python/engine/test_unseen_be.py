"""Semantics found missing on unseen real cases, batch BE (tests/fixtures/engine/unseen/be_*): the backend a
program picks for its process group.

- `torch.distributed.is_nccl_available()` is True on the machine the analysis assumes (one with CUDA): the
  backend torch sets up there by itself (generated knowledge, `no_backend_on_cuda_machine`) is built in.
  `elif dist.is_nccl_available() and torch.cuda.is_available(): backend = "nccl"` is that branch.
- A backend read from the environment on one path and a backend name on the other (`if os.getenv("B") is not
  None: backend = os.environ["B"] elif ...: backend = "nccl"`) is that name: the program's own launch, as the
  default of a `--dist-backend` option is. `os.environ["B"]` is an environment read like `os.getenv("B")`.
Together: HydraGNN's setup_ddp picks NCCL on a GPU machine, and gather_deg_dist all-reduces cpu degree
tensors on it (DEV208, HydraGNN#180). An environment read with no backend name on the other path stays
unknown (silent), and so does a gloo fallback.
"""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_SETUP = """
import os
import torch
import torch.distributed as dist


def setup_ddp():
    if os.getenv("HYDRAGNN_BACKEND") is not None:
        backend = os.environ["HYDRAGNN_BACKEND"]
    elif dist.is_nccl_available() and torch.cuda.is_available():
        backend = "nccl"
    elif torch.distributed.is_gloo_available():
        backend = "gloo"
    else:
        raise RuntimeError("No parallel backends available")
    dist.init_process_group(backend=backend, init_method="env://")
"""


def test_env_override_with_nccl_fallback_is_nccl():
    src = _SETUP + """

def gather_deg_dist(counts):
    deg = torch.zeros(8, dtype=torch.long)
    for c in counts:
        deg += torch.bincount(c, minlength=8)
    dist.all_reduce(deg, op=dist.ReduceOp.SUM)
    return deg


setup_ddp()
gather_deg_dist([])
"""
    assert (23, "DEV208") in _codes(src)


def test_renamed_and_inside_a_trainer_class():
    src = """
    import os
    import torch
    import torch.distributed as dist


    class Trainer:
        def __init__(self):
            be = os.environ.get("DIST_BACKEND")
            if be is None:
                if dist.is_nccl_available():
                    be = "nccl"
                else:
                    be = "gloo"
            dist.init_process_group(be)

        def sync_count(self, n):
            total = torch.tensor([n])
            dist.all_reduce(total)
            return int(total)


    t = Trainer()
    t.sync_count(4)
    """
    assert (19, "DEV208") in _codes(src)


def test_split_into_files_one_helper_deeper(tmp_path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "dist_utils.py").write_text(textwrap.dedent(_SETUP))
    (pkg / "stats.py").write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist


        def _reduce(t):
            dist.all_reduce(t)
            return t


        def global_max(v):
            return _reduce(torch.zeros(1) + v)
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        from proj.dist_utils import setup_ddp
        from proj.stats import global_max


        def main():
            setup_ddp()
            return global_max(3.0)


        if __name__ == "__main__":
            main()
    """))
    found = [(d.span.line, d.code) for d in check_path(str(tmp_path / "train.py")).diagnostics]
    assert (8, "DEV208") in found


def test_silent_when_the_tensor_is_on_the_gpu():
    src = _SETUP + """

setup_ddp()
deg = torch.zeros(8, dtype=torch.long).cuda()
dist.all_reduce(deg)
"""
    assert not [c for c in _codes(src) if c[1] == "DEV208"]


def test_silent_when_the_environment_alone_names_the_backend():
    src = """
    import os
    import torch
    import torch.distributed as dist

    dist.init_process_group(backend=os.environ["BACKEND"])
    t = torch.zeros(1)
    dist.all_reduce(t)
    """
    assert not _codes(src)


def test_silent_with_a_gloo_fallback():
    src = """
    import os
    import torch
    import torch.distributed as dist

    if os.getenv("BACKEND") is not None:
        backend = os.environ["BACKEND"]
    else:
        backend = "gloo"
    dist.init_process_group(backend=backend)
    t = torch.zeros(1)
    dist.all_reduce(t)
    """
    assert not _codes(src)


def test_python_numbers_from_builtins_make_a_cpu_tensor():
    """`max` / `min` / `abs` / `round` of Python numbers is one: `torch.tensor()` of it is on the cpu. (`int()` of
    a value not known here stays unknown: a command-line value, say.)"""
    src = """
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")


    def max_degree(ds):
        m = 0
        for i in range(len(ds)):
            m = max(m, 3)
        t = torch.tensor(m)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t)


    max_degree(load())
    """
    assert (13, "DEV208") in _codes(src)


def test_round_of_a_tensor_stays_a_tensor():
    src = """
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    x = torch.ones(3, device="cuda")
    t = torch.stack([round(x), abs(x)])
    dist.all_reduce(t)
    """
    assert not _codes(src)
