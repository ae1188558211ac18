"""Under torchrun every rank's report says which rank it is: 2 ranks on cpu (gloo), each failing
with a cross-device error on the meta device, run through `torchrun -m devflow.runtime run`."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

SCRIPT = textwrap.dedent("""\
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(1)
    dist.all_reduce(t)  # the group works on cpu
    print(f"rank {rank} sum {int(t.item())}", flush=True)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2)).to("meta")
    model.append(nn.Linear(2, 2))  # appended after the move: left on cpu
    batch = torch.randn(3, 4, device="meta")
    model(batch)
""")


def test_two_ranks_each_report_their_rank(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
         "-m", "devflow.runtime", "run", "--report-json", "rep.json", "train.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode != 0  # both ranks fail, as they would under plain torchrun
    out = proc.stdout + proc.stderr
    assert "rank 0 sum 2" in out and "rank 1 sum 2" in out, out[-3000:]
    for rank in (0, 1):
        assert f"devflow: device placement report (rank {rank} of 2)" in out, out[-3000:]
        rep = json.loads((tmp_path / f"rep.rank{rank}.json").read_text())
        assert rep["rank"]["rank"] == rank and rep["rank"]["world_size"] == 2
        assert rep["culprit"]["module"] == "model.2", rep["culprit"]["summary"]
        assert rep["culprit"]["device"] == "cpu" and rep["culprit"]["expected_device"] == "meta"
