"""Cost of `devflow dryrun` against plain cpu runs of the same scripts.

For each script: the plain run (`python script.py`: torch finds no GPU and takes its cpu path) and
the dry run (virtual GPU, no step limit, so both do the same work), each in a fresh process:
  wall       whole process, interpreter and torch import included
  script     the script's own time (after imports of torch and devflow)
  peak RSS   the process's maximum resident memory
  first      time from the script's start to the first finding (buggy scripts)
Scripts: the corpus's runnable fixed.py files that need no setup step, the dry run's multi-mix
test scripts, and a heavier training loop (an MLP and a small CNN on batches of 64).

    python bench/dryrun.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DEVFLOW_SHARED", ROOT.parent / "shared"))

TIMED = r"""
import runpy, sys, time
import torch
t = time.perf_counter()
sys.argv = [sys.argv[1]] + sys.argv[2:]
sys.path[0] = __import__("os").path.dirname(__import__("os").path.abspath(sys.argv[0]))
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    sys.stderr.write("\nBENCH_SCRIPT_S=%f\n" % (time.perf_counter() - t))
"""

HEAVY = r"""
import torch, torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(device)
cnn = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                    nn.Linear(32, 10)).to(device)
opt = torch.optim.AdamW(list(mlp.parameters()) + list(cnn.parameters()), lr=1e-3)
for step in range(30):
    x = torch.randn(64, 256, device=device)
    img = torch.randn(64, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    loss = nn.functional.cross_entropy(mlp(x), y) + nn.functional.cross_entropy(cnn(img), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss.item() < 0.01:
        break
print("loss", round(loss.item(), 3))
"""


def _script_s(err: str) -> float | None:
    for line in err.splitlines()[::-1]:
        if line.startswith("BENCH_SCRIPT_S="):
            return float(line.split("=", 1)[1])
    return None


def run_pair(script: Path) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(TIMED)
    timed = f.name
    try:
        p_wall, p_rss, _, p_err = measure_fresh([sys.executable, timed, str(script)], script.parent)
        out_json = tempfile.mktemp(suffix=".json")
        d_wall, d_rss, _, _ = measure_fresh([sys.executable, "-m", "devflow.dryrun.child", out_json, "1", "0", "0", "-",
                                             str(script)], script.parent)
        doc = json.loads(Path(out_json).read_text()) if Path(out_json).exists() else {"status": {}, "findings": []}
        Path(out_json).unlink(missing_ok=True)
    finally:
        os.unlink(timed)
    st = doc.get("status", {})
    return {"script": script, "plain_wall": p_wall, "plain_script": _script_s(p_err), "plain_rss": p_rss,
            "dry_wall": d_wall, "dry_script": st.get("elapsed_s"), "dry_rss": d_rss,
            "first": st.get("first_finding_s"), "findings": len(doc.get("findings", [])), "state": st.get("state")}


def measure_fresh(cmd, cwd) -> tuple[float, int, str, str]:
    """Runs cmd in a fresh process and returns its own peak RSS (KiB), via a tiny parent that
    waits for it with os.wait4."""
    wrapper = ("import os,sys,subprocess,time,json;t=time.perf_counter();p=subprocess.Popen(sys.argv[1:]);"
               "_,st,ru=os.wait4(p.pid,0);sys.stderr.write('\\nBENCH_RSS=%d BENCH_WALL=%f\\n'%(ru.ru_maxrss,"
               "time.perf_counter()-t))")
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], cwd=cwd, capture_output=True, text=True, timeout=900)
    rss, wall = 0, 0.0
    for line in proc.stderr.splitlines()[::-1]:
        if line.startswith("BENCH_RSS="):
            a, b = line.split()
            rss, wall = int(a.split("=")[1]), float(b.split("=")[1])
            break
    return wall, rss, proc.stdout, proc.stderr


def scripts() -> list[Path]:
    out = []
    for split in ("public", "public2"):
        base = SHARED / "corpus" / split
        if not base.is_dir():
            continue
        for d in sorted(base.iterdir()):
            case = d / "case.json"
            if case.exists():
                c = json.loads(case.read_text())
                if c.get("runnable_offline") and not c.get("validation_steps") and not c.get("files"):
                    out.append(d / "fixed.py")
                    out.append(d / "buggy.py")
    out += sorted((ROOT / "tests" / "python" / "dryrun" / "scripts").glob("*.py"))
    heavy = Path(tempfile.mkdtemp(prefix="dryrun-bench-")) / "heavy_train.py"
    heavy.write_text(HEAVY)
    out.append(heavy)
    return out


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0, help="only the first N scripts")
    ns = ap.parse_args()
    todo = scripts()
    if ns.limit:
        todo = todo[:ns.limit] + [todo[-1]]
    rows = []
    print(f"{'script':<60} {'plain s':>8} {'dry s':>8} {'x wall':>7} {'x script':>8} {'plain MB':>8} {'dry MB':>7} "
          f"{'first s':>7} n")
    for s in todo:
        r = run_pair(s)
        rows.append(r)
        name = f"{s.parent.name}/{s.name}"
        xw = r["dry_wall"] / r["plain_wall"] if r["plain_wall"] else float("nan")
        xs = (r["dry_script"] / r["plain_script"]) if r["plain_script"] and r["dry_script"] else float("nan")
        first = f"{r['first']:.2f}" if r["first"] is not None else "-"
        print(f"{name[-60:]:<60} {r['plain_wall']:8.2f} {r['dry_wall']:8.2f} {xw:7.2f} {xs:8.2f} "
              f"{r['plain_rss'] / 1024:8.0f} {r['dry_rss'] / 1024:7.0f} {first:>7} {r['findings']}", flush=True)
    xw = geomean([r["dry_wall"] / r["plain_wall"] for r in rows if r["plain_wall"]])
    xs = geomean([r["dry_script"] / r["plain_script"] for r in rows if r["plain_script"] and r["dry_script"]])
    heavy = rows[-1]
    firsts = sorted(r["first"] for r in rows if r["first"] is not None)
    print(f"\nscripts: {len(rows)}; slowdown (geometric mean): whole process {xw:.2f}x, script body {xs:.2f}x "
          f"(target <= 3x)")
    print(f"heavier training loop: plain {heavy['plain_wall']:.2f} s, dry run {heavy['dry_wall']:.2f} s "
          f"({heavy['dry_wall'] / heavy['plain_wall']:.2f}x wall, "
          f"{(heavy['dry_script'] or 0) / (heavy['plain_script'] or 1):.2f}x script)")
    print(f"peak RSS: plain max {max(r['plain_rss'] for r in rows) / 1024:.0f} MB, dry run max "
          f"{max(r['dry_rss'] for r in rows) / 1024:.0f} MB; mean ratio "
          f"{geomean([r['dry_rss'] / r['plain_rss'] for r in rows if r['plain_rss']]):.2f}x")
    if firsts:
        print(f"time to first finding (from the script's start): median {firsts[len(firsts) // 2]:.2f} s, "
              f"max {firsts[-1]:.2f} s over {len(firsts)} scripts with findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
