"""`devflow dryrun` on every runnable case of the public corpus (public, public2): buggy.py must
get a finding on one of its bug_lines, fixed.py none and a normal end.

Each case runs in a fresh copy of its folder, in a subprocess with a timeout, two at a time.
Recorded validation steps are replayed: a fixture script runs as plain python; a setup run (the
"first training run" that writes a checkpoint) runs under the dry run without a step limit, as it
ran on the user's GPU; the check run gets the recorded arguments.

    python tests/python/dryrun/corpus_dryrun.py     prints the table
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("DEVFLOW_SHARED", ROOT.parent / "shared"))
SPLITS = ("public", "public2")
CASE_TIMEOUT = 120
OK_STATES = {"finished", "stopped"}


def runnable_cases() -> list[Path]:
    out = []
    for split in SPLITS:
        base = SHARED / "corpus" / split
        if not base.is_dir():
            continue
        for d in sorted(base.iterdir()):
            case = d / "case.json"
            if case.exists() and json.loads(case.read_text()).get("runnable_offline"):
                out.append(d)
    return out


def _prepare(case_dir: Path, variant: str, work: Path, case: dict) -> str:
    """Copy the case into work; return the script name to run for the variant."""
    shutil.copytree(case_dir, work, dirs_exist_ok=True)
    files = (case.get("files") or {}).get(variant) or []
    for f in files:  # multi-file cases: fixed/models.py replaces models.py
        src = case_dir / f
        if "/" in f and src.exists():
            shutil.copy(src, work / Path(f).name)
    return f"{variant}.py"


def dryrun(script: str, args: list[str], cwd: Path, *extra: str, timeout: int = CASE_TIMEOUT) -> dict:
    cmd = [sys.executable, "-m", "devflow.dryrun", "--format", "json", "--no-static", *extra, script, *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"diagnostics": [], "status": {"state": "timeout"}, "stderr": ""}
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        doc = {"diagnostics": [], "status": {"state": "no-report"}}
    doc["stderr"] = proc.stderr[-3000:]
    return doc


def run_variant(case_dir: Path, variant: str) -> dict:
    case = json.loads((case_dir / "case.json").read_text())
    steps = case.get("validation_steps") or [{"role": "check", "args": []}]
    with tempfile.TemporaryDirectory(prefix=f"dryrun-{case['id']}-") as tmp:
        work = Path(tmp)
        script = _prepare(case_dir, variant, work, case)
        result: dict = {}
        for step in steps:
            role = step.get("role")
            if role == "fixture":
                subprocess.run([sys.executable, step["script"]], cwd=work, capture_output=True, timeout=CASE_TIMEOUT)
            elif role == "setup":
                dryrun(script, step.get("args", []), work, "--max-steps", "0")
            elif role == "check":
                result = dryrun(script, step.get("args", []), work)
        return result


def _matches(diag: dict, bug_lines: list) -> bool:
    for b in bug_lines:
        if isinstance(b, int):
            if diag["line"] == b and os.path.basename(diag["path"]) in ("buggy.py",):
                return True
        else:
            name, _, line = str(b).rpartition(":")
            if os.path.basename(diag["path"]) == name and diag["line"] == int(line):
                return True
    return False


def evaluate_case(case_dir: Path) -> dict:
    case = json.loads((case_dir / "case.json").read_text())
    buggy = run_variant(case_dir, "buggy")
    fixed = run_variant(case_dir, "fixed")
    b_diags, f_diags = buggy.get("diagnostics", []), fixed.get("diagnostics", [])
    return {
        "id": case["id"], "split": case_dir.parent.name, "bug_lines": case["bug_lines"],
        "buggy_lines": sorted({(os.path.basename(d["path"]), d["line"], d["code"]) for d in b_diags}),
        # at: the finding's own line; related: one of its related locations (where an operand got
        # its device, the calls that led to the op)
        "found_at": any(_matches(d, case["bug_lines"]) for d in b_diags),
        "found": any(_matches(d, case["bug_lines"]) or any(_matches(r, case["bug_lines"]) for r in d.get("related", []))
                     for d in b_diags),
        "fixed_findings": sorted({(os.path.basename(d["path"]), d["line"], d["code"]) for d in f_diags}),
        "fixed_state": fixed.get("status", {}).get("state"),
        "fixed_clean": not f_diags and fixed.get("status", {}).get("state") in OK_STATES,
        "buggy_status": buggy.get("status", {}), "fixed_status": fixed.get("status", {}),
        "stderr": (buggy.get("stderr", "")[-800:], fixed.get("stderr", "")[-800:]),
    }


def evaluate(jobs: int = 2) -> list[dict]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(evaluate_case, runnable_cases()))


def table(rows: list[dict]) -> str:
    lines = [f"{'case':<48} {'buggy':<6} {'fixed':<6} reported / fixed findings"]
    for r in rows:
        lines.append(f"{r['split'] + '/' + r['id']:<48} {'found' if r['found'] else 'MISS':<6} "
                     f"{'clean' if r['fixed_clean'] else 'DIRTY':<6} "
                     f"{[f'{p}:{n}:{c}' for p, n, c in r['buggy_lines']]} / "
                     f"{[f'{p}:{n}:{c}' for p, n, c in r['fixed_findings']]} {r['fixed_state']}")
    found = sum(r["found"] for r in rows)
    found_at = sum(r["found_at"] for r in rows)
    clean = sum(r["fixed_clean"] for r in rows)
    both = sum(r["found"] and r["fixed_clean"] for r in rows)
    n = len(rows) or 1
    lines.append(f"buggy: a finding at a bug line {found_at}/{len(rows)} ({100 * found_at / n:.0f}%), at or related to "
                 f"a bug line {found}/{len(rows)} ({100 * found / n:.0f}%)")
    lines.append(f"buggy found: {found}/{len(rows)} ({100 * found / n:.0f}%); fixed clean and ends "
                 f"normally: {clean}/{len(rows)} ({100 * clean / n:.0f}%); both: {both}/{len(rows)} "
                 f"({100 * both / n:.0f}%)")
    # a fixed.py that fails on the real H100 as well: its finding is the emulation being faithful
    gpu_fails = _fixed_fails_on_gpu()
    faithful = [r["id"] for r in rows if not r["fixed_clean"] and r["id"] in gpu_fails]
    if faithful:
        lines.append(f"fixed.py reported and failing on the H100 too ({len(faithful)}): "
                     + ", ".join(f"{c} ({gpu_fails[c]})" for c in faithful)
                     + f"; clean or failing on the H100: {clean + len(faithful)}/{len(rows)}")
    return "\n".join(lines)


def _fixed_fails_on_gpu() -> dict[str, str]:
    runs = SHARED / "corpus" / "gpu" / "h100_runs.json"
    if not runs.exists():
        return {}
    cases = json.loads(runs.read_text()).get("cases", {})
    # torch's own errors only: not a missing package or network of that machine
    return {cid: c["fixed"].get("exception", "")[:80] for cid, c in cases.items()
            if isinstance(c, dict) and isinstance(c.get("fixed"), dict) and c["fixed"].get("rc")
            and c["fixed"].get("exception", "").startswith("RuntimeError")}


if __name__ == "__main__":
    only = sys.argv[1:]
    cases = [c for c in runnable_cases() if not only or c.name in only]
    with ThreadPoolExecutor(max_workers=2) as pool:
        rows = list(pool.map(evaluate_case, cases))
    if only:
        for r in rows:
            print(json.dumps(r, indent=1, default=str))
    if os.environ.get("DRYRUN_CORPUS_JSON"):
        Path(os.environ["DRYRUN_CORPUS_JSON"]).write_text(json.dumps(rows, indent=1, default=str))
    print(table(rows))
