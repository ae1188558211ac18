#!/usr/bin/env python3
"""Placement report time with 10k, 100k and 1M live tensors.

    python bench/probe.py [--sizes 10000,100000,1000000] [--repeat 3]

Each size: a model (meta, with a head left on cpu) plus N small live tensors held in a list
(meta tensors: no storage, so 1M of them fit in memory), then the cross-device error and
placement_report(exc) with the default caps (200 names per device, 2 s naming budget, then counts
only).  Prints the median time, the JSON size and whether the aggregate fallback kicked in.
Targets (issue 5): <= 0.5 s at 100k; <= 2 s at 1M with the aggregate fallback.
"""

import argparse
import gc
import json
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from devflow.runtime.probe import placement_report  # noqa: E402


def scenario(n: int):
    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(24)]).to("meta")
    model.append(nn.Linear(64, 10))  # appended after .to(): on cpu
    live = [torch.empty(4, device="meta") for _ in range(n)]
    try:
        model(torch.empty(2, 64, device="meta"))
    except RuntimeError as e:
        return model, live, e
    raise AssertionError("expected a cross-device error")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ns = ap.parse_args()
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    print(f"{'live tensors':>12} {'median s':>9} {'min s':>7} {'json KiB':>9} {'truncated':>9}  culprit")
    for n in (int(s) for s in ns.sizes.split(",")):
        model, live, exc = scenario(n)
        times = []
        rep = None
        for _ in range(ns.repeat):
            gc.collect()
            t0 = time.perf_counter()
            rep = placement_report(exc)
            times.append(time.perf_counter() - t0)
        size = len(json.dumps(rep, separators=(",", ":"))) / 1024
        total = sum(g["count"] for g in rep["devices"].values())
        assert total >= n, (total, n)
        print(f"{n:>12,} {statistics.median(times):>9.3f} {min(times):>7.3f} {size:>9.1f} {str(rep['truncated']):>9}  "
              f"{rep['culprit']['module']}")
        del model, live, exc, rep
        gc.collect()


if __name__ == "__main__":
    main()
