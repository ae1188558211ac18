"""Measure the engine on the public corpus: recall, fixed-clean, fix success.

    .venv/bin/python tests/python/corpus/corpus_eval.py [SHARED_DIR]

- recall: the bug is reported on one of the case's `bug_lines` in buggy.py;
- fixed-clean: fixed.py gets no diagnostic at all;
- fix success: for runnable cases whose buggy.py fails with a cross-device error (as recorded in
  case.json's validation runs), `devflow check --fix --unsafe-fixes` on a copy, replayed with the
  case's own validation steps through meta_run.py, no longer ends in a cross-device error.
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
sys.path.insert(0, str(ROOT / "server"))

from devflow.engine import analyze  # noqa: E402


def _devflow() -> list[str]:
    exe = Path(sys.executable).with_name("devflow")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "devflow"]


def fails_with_device_error(case: dict) -> bool | None:
    """From the case's recorded validation runs; None when nothing was recorded."""
    runs = [r for r in case.get("validated", {}).get("runs", {}).get("buggy", []) if r.get("role") == "check"]
    if not runs:
        return None
    return any(r.get("device_error") for r in runs)


def _meta(shared: Path, mode: str | None, script: Path, args: list[str], cwd: Path) -> dict:
    cmd = [sys.executable, str(shared / "corpus" / "tools" / "meta_run.py")]
    if mode and mode != "plain":
        cmd.append(f"--{mode}")
    cmd += [str(script), *args]
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    for line in reversed(p.stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {"status": "error", "message": (p.stderr or p.stdout)[-500:], "device_error": False}


def run_case(shared: Path, case_dir: Path, case: dict, fix: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for f in case_dir.iterdir():
            if f.is_file():
                shutil.copy(f, work / f.name)
        copy = work / "buggy.py"
        rc = None
        if fix:
            rc = subprocess.run(_devflow() + ["check", "--fix", "--unsafe-fixes", "--exit-zero", "--jobs", "1", str(copy)],
                                cwd=work, capture_output=True, text=True, timeout=120).returncode
        steps = case.get("validation_steps") or [{"role": "check", "mode": "strict", "args": []}]
        result: dict = {}
        for step in steps:
            if step.get("role") == "fixture":
                subprocess.run([sys.executable, step["script"]], cwd=work, capture_output=True, timeout=300)
                continue
            out = _meta(shared, step.get("mode", "strict"), copy, step.get("args", []), work)
            if step.get("role") == "check":
                result = out
        result["fix_rc"] = rc
        result["changed"] = copy.read_text() != (case_dir / "buggy.py").read_text()
        return result


def evaluate(shared: Path, run_fixes: bool = True) -> dict:
    cases = sorted(p for p in (shared / "corpus" / "public").iterdir() if (p / "case.json").exists())
    rows = []
    for d in cases:
        case = json.loads((d / "case.json").read_text())
        buggy = analyze((d / "buggy.py").read_text(), str(d / "buggy.py"))
        fixed = analyze((d / "fixed.py").read_text(), str(d / "fixed.py"))
        lines = sorted({x.span.line for x in buggy.diagnostics})
        rows.append({
            "id": case["id"], "class": case["class"], "bug_lines": case["bug_lines"],
            "reported": [f"{x.code}:{x.span.line}" for x in buggy.diagnostics],
            "hit": bool(set(lines) & set(case["bug_lines"])),
            "fixed_diagnostics": [f"{x.code}:{x.span.line}" for x in fixed.diagnostics],
            "rule_errors": buggy.rule_errors + fixed.rule_errors,
            "fix_eligible": bool(case.get("runnable_offline")) and fails_with_device_error(case) is not False,
        })
    if run_fixes:
        eligible = [(r, shared / "corpus" / "public" / r["id"]) for r in rows if r["fix_eligible"]]

        def one(item):
            r, d = item
            case = json.loads((d / "case.json").read_text())
            if fails_with_device_error(case) is None:  # not recorded: run the buggy script itself
                if not run_case(shared, d, case, fix=False).get("device_error"):
                    return r, None
            return r, run_case(shared, d, case, fix=True)

        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            for r, out in pool.map(one, eligible):
                if out is None:
                    r["fix_eligible"] = False
                    continue
                r["fix_run"] = {k: out.get(k) for k in ("status", "exc_type", "message", "script_line", "device_error",
                                                        "changed")}
                r["fix_ok"] = out.get("changed", False) and not out.get("device_error", False)
    n = len(rows)
    elig = [r for r in rows if r.get("fix_eligible") and "fix_ok" in r]
    return {
        "cases": n,
        "recall": sum(r["hit"] for r in rows) / n if n else 0.0,
        "fixed_clean": sum(not r["fixed_diagnostics"] for r in rows) / n if n else 0.0,
        "fixed_false_positives": sum(len(r["fixed_diagnostics"]) for r in rows),
        "fix_cases": len(elig),
        "fix_success": (sum(r["fix_ok"] for r in elig) / len(elig)) if elig else None,
        "rows": rows,
    }


def report(res: dict) -> str:
    out = [f"{'case':45} {'class':18} {'hit':4} {'fixed':6} {'fix':5} reported"]
    for r in res["rows"]:
        fix = "-" if "fix_ok" not in r else ("ok" if r["fix_ok"] else "FAIL")
        out.append(f"{r['id']:45} {r['class']:18} {'yes' if r['hit'] else 'NO':4} "
                   f"{'clean' if not r['fixed_diagnostics'] else 'FP':6} {fix:5} {', '.join(r['reported'])}")
    fs = res["fix_success"]
    out.append(f"recall {res['recall']:.1%} ({sum(r['hit'] for r in res['rows'])}/{res['cases']}), "
               f"fixed-clean {res['fixed_clean']:.1%} ({res['fixed_false_positives']} diagnostics on fixed files), "
               f"fix success {'n/a' if fs is None else f'{fs:.1%}'} over {res['fix_cases']} runnable cases")
    return "\n".join(out)


def write_artifact(res: dict) -> Path:
    path = ROOT / "artifacts" / "corpus.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(res, indent=2))
    return path


if __name__ == "__main__":
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared"
    res = evaluate(shared)
    print(report(res))
    print("written", write_artifact(res))
