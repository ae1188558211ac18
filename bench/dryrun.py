"""Cost of `devflow dryrun` against plain cpu execution of the same scripts.

Scripts: every runnable case of the public corpus (public, public2; their recorded fixture and
setup steps replayed first), the dry run's multi-mix test scripts, a heavier training loop, and a
loop of tiny tensors (the worst case for a per-op hook).
For each:
  slowdown, memory   fixed.py (it runs to its end): the plain cpu run against the dry run with
                     no step limit, so both do the same work; each in a fresh process
      wall           whole process (interpreter, torch and devflow imports included)
      script         the script's own time (after the imports)
      peak RSS       the process's maximum resident memory
  first finding      buggy.py under a default dry run: time from the script's start to the first
                     finding
The plain cpu run is the same program on the cpu: its files with "cuda" rewritten to "cpu" (line
for line), run by plain python; torch.cuda.is_available() is False there, as on a laptop.

    python bench/dryrun.py [--quick] [--repeat N] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python" / "dryrun"))
import corpus_dryrun  # noqa: E402 - the corpus walk and case preparation of the coverage test

TIMEOUT = 300
LONG_BODY_S = 0.5
TIMED = r"""
import os, runpy, sys, time
import torch
t = time.perf_counter()
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    sys.stderr.write("\nBENCH_SCRIPT_S=%f\n" % (time.perf_counter() - t))
"""
# Runs a command as a child and reports the child's own peak RSS (os.wait4) and wall time.
MEASURE = ("import os,sys,subprocess,time;t=time.perf_counter();p=subprocess.Popen(sys.argv[1:]);"
           "_,st,ru=os.wait4(p.pid,0);sys.stderr.write('\\nBENCH_RSS=%d BENCH_WALL=%f BENCH_RC=%d\\n'%(ru.ru_maxrss,"
           "time.perf_counter()-t,os.waitstatus_to_exitcode(st)))")

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

# The worst case for a per-op hook: a training loop of tiny tensors (batch 4, 8 features), where
# the Python work per op is larger than the op itself.
SMALL_OPS = r"""
import torch, torch.nn as nn
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(300):
    x = torch.randn(4, 8, device=device)
    loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
"""

# "cuda" -> "cpu", line for line: device strings, .cuda(...), the cuda default tensor type
_TO_CPU = [
    (re.compile(r"\.cuda\([^()]*\)"), '.to("cpu")'),
    (re.compile(r"([\"'])cuda(:\d+)?\1"), '"cpu"'),
    (re.compile(r"torch\.cuda\.(FloatTensor|DoubleTensor|HalfTensor|LongTensor)"), r"torch.\1"),
    (re.compile(r"([\"'])torch\.cuda\.(\w+)\1"), r'"torch.\2"'),
]


def to_cpu(folder: Path):
    for path in folder.rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for pattern, repl in _TO_CPU:
            text = pattern.sub(repl, text)
        path.write_text(text, encoding="utf-8")


class Item:
    """One benchmark script: a corpus case (prepared per run) or a standalone script."""

    def __init__(self, name: str, case_dir: Path | None = None, script: Path | None = None):
        self.name, self.case_dir, self.script = name, case_dir, script

    def prepare(self, variant: str, mode: str) -> tuple[Path, str, list[str]]:
        """A fresh folder with the program for `mode` ("plain" or "dry") and its setup steps done;
        returns (folder, script, arguments of the run to measure)."""
        work = Path(tempfile.mkdtemp(prefix="bench-dryrun-" + self.name.replace("/", "-")[:40] + "-"))
        if self.case_dir is None:
            shutil.copy(self.script, work / self.script.name)
            if mode == "plain":
                to_cpu(work)
            return work, self.script.name, []
        case = json.loads((self.case_dir / "case.json").read_text())
        script = corpus_dryrun._prepare(self.case_dir, variant, work, case)
        if mode == "plain":
            to_cpu(work)
        args: list[str] = []
        for step in case.get("validation_steps") or [{"role": "check", "args": []}]:
            role = step.get("role")
            if role == "fixture":
                subprocess.run([sys.executable, step["script"]], cwd=work, capture_output=True, timeout=TIMEOUT)
            elif role == "setup":  # the first training run, as it ran for the user (plain: on the cpu)
                cmd = [sys.executable, script] if mode == "plain" else \
                    [sys.executable, "-m", "devflow.dryrun", "--max-steps", "0", "--no-static", script]
                subprocess.run(cmd + step.get("args", []), cwd=work, capture_output=True, timeout=TIMEOUT)
            elif role == "check":
                args = step.get("args", [])
        return work, script, args


def measure(cmd: list[str], cwd: Path) -> dict:
    # one intra-op thread for both runs: on a shared machine, thread oversubscription times the
    # neighbours, not the program
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        proc = subprocess.run([sys.executable, "-c", MEASURE, *cmd], cwd=cwd, capture_output=True, text=True,
                              timeout=TIMEOUT, env=env)
        err = proc.stderr
    except subprocess.TimeoutExpired:
        return {"rc": None, "wall": None, "rss": None, "err": "timeout"}
    out = {"rc": None, "wall": None, "rss": None, "script": None, "err": err[-600:]}
    for line in err.splitlines()[::-1]:
        if line.startswith("BENCH_RSS="):
            rss, wall, rc = (part.split("=")[1] for part in line.split())
            out.update(rss=int(rss) / 1024, wall=float(wall), rc=int(rc))
        elif line.startswith("BENCH_SCRIPT_S=") and out["script"] is None:
            out["script"] = float(line.split("=")[1])
    return out


def run_plain(item: Item) -> dict:
    work, script, args = item.prepare("fixed", "plain")
    timed = work / "_bench_timed.py"
    timed.write_text(TIMED)
    try:
        return measure([sys.executable, str(timed), script, *args], work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_dry(item: Item, variant: str, max_steps: int) -> dict:
    work, script, args = item.prepare(variant, "dry")
    out_json = work / "_bench_report.json"
    try:
        r = measure([sys.executable, "-m", "devflow.dryrun.child", str(out_json), "1", str(max_steps), str(TIMEOUT),
                     "-", script, *args], work)
        try:
            doc = json.loads(out_json.read_text())
        except (OSError, ValueError):
            doc = {"status": {"state": "no report"}, "findings": []}
        st = doc.get("status", {})
        r.update(script=st.get("elapsed_s"), first=st.get("first_finding_s"), state=st.get("state"),
                 findings=len(doc.get("findings", [])))
        return r
    finally:
        shutil.rmtree(work, ignore_errors=True)


def items(quick: bool, only: str | None) -> list[Item]:
    out = [Item(f"{d.parent.name}/{d.name}", case_dir=d) for d in corpus_dryrun.runnable_cases()]
    scripts = sorted((ROOT / "tests" / "python" / "dryrun" / "scripts").glob("*.py"))
    out += [Item(f"scripts/{s.name}", script=s) for s in scripts]
    for name, text in (("heavy_train.py", HEAVY), ("small_ops_train.py", SMALL_OPS)):
        path = Path(tempfile.mkdtemp(prefix="bench-dryrun-")) / name
        path.write_text(text)
        out.append(Item(f"bench/{name}", script=path))
    if only:
        out = [i for i in out if only in i.name]
    if quick:  # every 4th corpus case, the test scripts, the heavy loop
        corpus = [i for i in out if i.case_dir is not None]
        out = corpus[::4] + [i for i in out if i.case_dir is None]
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def fmt(x, spec=".2f", none="-") -> str:
    return none if x is None else format(x, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a quarter of the corpus cases (about 2 minutes)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measure; the fastest counts")
    ap.add_argument("--only", help="only scripts whose name contains this")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ns = ap.parse_args()
    todo = items(ns.quick, ns.only)
    print(f"{'script':<52} {'plain s':>7} {'dry s':>7} {'x wall':>6} {'x body':>6} {'plainMB':>7} {'dryMB':>6} "
          f"{'x mem':>5} {'first s':>7}  note", flush=True)
    rows = []
    for item in todo:
        plain = min((run_plain(item) for _ in range(ns.repeat)), key=lambda r: r["wall"] or 1e9)
        dry = min((run_dry(item, "fixed", 0) for _ in range(ns.repeat)), key=lambda r: r["wall"] or 1e9)
        buggy = run_dry(item, "buggy", 2) if item.case_dir is not None else dry
        row = {"name": item.name, "plain": plain, "dry": dry, "first": buggy.get("first")}
        ok = plain["rc"] == 0 and dry["rc"] == 0 and dry.get("state") in ("finished", "stopped")
        row["ok"] = ok
        if ok:
            row["x_wall"] = dry["wall"] / plain["wall"]
            row["x_body"] = dry["script"] / plain["script"] if plain["script"] and dry["script"] else None
            row["x_mem"] = dry["rss"] / plain["rss"]
        note = "" if ok else f"not compared: plain rc {plain['rc']}, dry {dry.get('state')}"
        rows.append(row)
        print(f"{item.name[-52:]:<52} {fmt(plain['wall']):>7} {fmt(dry['wall']):>7} {fmt(row.get('x_wall')):>6} "
              f"{fmt(row.get('x_body')):>6} {fmt(plain['rss'], '.0f'):>7} {fmt(dry['rss'], '.0f'):>6} "
              f"{fmt(row.get('x_mem')):>5} {fmt(row['first']):>7}  {note}", flush=True)
    compared = [r for r in rows if r["ok"]]
    print()
    # a body of a few ms compares one-time costs (a lazy import in torch), not the per-op overhead
    long = [r for r in compared if (r["plain"]["script"] or 0) >= LONG_BODY_S]
    for key, label, among in (("x_wall", "slowdown, whole process", compared),
                              ("x_body", "slowdown, script body", compared),
                              ("x_body", f"  bodies >= {LONG_BODY_S:g} s", long),
                              ("x_mem", "peak RSS, dry / plain", compared)):
        xs = [r[key] for r in among if r.get(key)]
        if xs:
            print(f"{label:<26} median {statistics.median(xs):5.2f}x  p90 {pct(xs, 0.9):5.2f}x  max {max(xs):5.2f}x  "
                  f"({len(xs)} scripts)")
    firsts = [r["first"] for r in rows if r["first"] is not None]
    if firsts:
        print(f"{'time to first finding':<26} median {statistics.median(firsts):5.2f}s  p90 {pct(firsts, 0.9):5.2f}s  "
              f"max {max(firsts):5.2f}s  ({len(firsts)} buggy scripts, from the script's start)")
    over = [r["name"] for r in compared if (r.get("x_wall") or 0) > 3]
    xw = [r["x_wall"] for r in compared]
    xb = [r["x_body"] for r in compared if r.get("x_body")]
    print(f"\nsummary: {len(rows)} scripts, {len(compared)} compared; slowdown median "
          f"{statistics.median(xw) if xw else float('nan'):.2f}x whole process / "
          f"{statistics.median(xb) if xb else float('nan'):.2f}x script body (target <= 3x), "
          f"{len(over)} above 3x{': ' + ', '.join(over) if over else ''}; peak RSS max "
          f"{max((r['dry']['rss'] for r in compared), default=0):.0f} MB dry vs "
          f"{max((r['plain']['rss'] for r in compared), default=0):.0f} MB plain")
    if ns.json:
        Path(ns.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
