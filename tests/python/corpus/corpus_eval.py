"""Measure the engine on the corpus folders (`public`, `public2`): recall, fixed-clean, fix runs to the end.

    .venv/bin/python tests/python/corpus/corpus_eval.py [SHARED_DIR] [--no-runs]

Per folder:
- recall: the bug is reported on one of the case's `bug_lines` (an int is a line of buggy.py, a string
  "name.py:LINE" a line of a sibling module of a multi-file case);
- fixed-clean: the fixed variant (every file of it) gets no diagnostic at all;
- fix runs to the end: for every runnable case (`runnable_offline: true`) whose maintainers' fix runs
  to the end under the case's validation (recorded in case.json), `devflow check --fix --unsafe-fixes`
  on a copy of the buggy files, then the case's validation steps replayed through meta_run.py (a check
  step in meta mode runs with `--strict`): the script must end without any exception (not merely
  without a device error). A fix that turns a script that ran into one that fails is counted apart
  (`broken`): it must stay 0.
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

FOLDERS = ("public", "public2")


def _devflow() -> list[str]:
    exe = Path(sys.executable).with_name("devflow")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "devflow"]


def case_dirs(shared: Path, folder: str) -> list[Path]:
    base = shared / "corpus" / folder
    return sorted(p for p in base.iterdir() if (p / "case.json").exists()) if base.is_dir() else []


def variant_files(case_dir: Path, case: dict, variant: str) -> list[Path]:
    """The files of the buggy / fixed variant (a multi-file case lists them in `files`)."""
    names = (case.get("files") or {}).get(variant) or [f"{variant}.py"]
    return [case_dir / n for n in names]


def check_variant(files: list[Path]) -> list[tuple[str, str, int]]:
    """(file base name, code, line) of every diagnostic on the variant's files.
    One file at a time through the engine; the project-wide engine checks them as one project."""
    out = []
    for f in files:
        result = analyze(f.read_text(), str(f))
        out.extend((f.name, d.code, d.span.line) for d in result.diagnostics)
        out.extend((f.name, f"rule-error: {e}", 0) for e in result.rule_errors)
    return out


def _bug_places(case: dict) -> set[tuple[str, int]]:
    out = set()
    for b in case["bug_lines"]:
        if isinstance(b, str):
            name, _, line = b.rpartition(":")
            out.add((name, int(line)))
        else:
            out.add(("buggy.py", int(b)))
    return out


def _recorded(case: dict, variant: str) -> list[dict]:
    return [r for r in case.get("validated", {}).get("runs", {}).get(variant, []) if r.get("role") == "check"]


def _meta(shared: Path, mode: str | None, script: Path, args: list[str], cwd: Path) -> dict:
    cmd = [sys.executable, str(shared / "corpus" / "tools" / "meta_run.py")]
    if mode and mode != "plain":
        cmd.append(f"--{mode}")
    cmd += ["--workdir", str(cwd), str(script), *args]  # a setup run's outputs stay for the check run
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "device_error": False}
    for line in reversed(p.stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {"status": "error", "message": (p.stderr or p.stdout)[-500:], "device_error": False}


def _steps(case: dict) -> list[dict]:
    steps = case.get("validation_steps") or [{"role": "check", "mode": "strict", "args": []}]
    # The check runs in strict meta mode unless the case needs the real cpu (native / cpu).
    return [dict(s, mode="strict") if s.get("role") == "check" and s.get("mode", "plain") == "plain" else s
            for s in steps]


def run_case(shared: Path, case_dir: Path, case: dict, fix: bool) -> dict:
    """Copy the case, optionally `devflow check --fix --unsafe-fixes` its buggy files, replay its steps."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for f in case_dir.iterdir():
            if f.is_file():
                shutil.copy(f, work / f.name)
        buggy = [work / f.name for f in variant_files(case_dir, case, "buggy")]
        before = {f: f.read_text() for f in buggy}
        rc = None
        if fix:
            rc = subprocess.run(_devflow() + ["check", "--fix", "--unsafe-fixes", "--exit-zero", "--jobs", "1",
                                              *map(str, buggy)], cwd=work, capture_output=True, text=True,
                                timeout=180).returncode
        result: dict = {}
        for step in _steps(case):
            if step.get("role") == "fixture":
                subprocess.run([sys.executable, step["script"]], cwd=work, capture_output=True, timeout=300)
                continue
            out = _meta(shared, step.get("mode", "strict"), buggy[0], step.get("args", []), work)
            if step.get("role") == "check":
                result = out
        result["fix_rc"] = rc
        result["changed"] = any(f.read_text() != before[f] for f in buggy)
        return result


def _runs_to_end(out: dict) -> bool:
    return out.get("status") == "ok"


def evaluate_folder(shared: Path, folder: str, run_fixes: bool = True) -> dict:
    rows = []
    for d in case_dirs(shared, folder):
        case = json.loads((d / "case.json").read_text())
        buggy = check_variant(variant_files(d, case, "buggy"))
        fixed = check_variant(variant_files(d, case, "fixed"))
        places = _bug_places(case)
        recorded_fixed = _recorded(case, "fixed")
        rows.append({
            "id": case["id"], "folder": folder, "class": case["class"], "bug_lines": case["bug_lines"],
            "reported": [f"{c}:{ln}" if name == "buggy.py" else f"{c}:{name}:{ln}" for name, c, ln in buggy],
            "hit": any((name, ln) in places for name, _, ln in buggy),
            "fixed_diagnostics": [f"{c}:{name}:{ln}" for name, c, ln in fixed],
            "rule_errors": [c for _, c, _ in buggy + fixed if c.startswith("rule-error")],
            # runnable offline, reproduced by the recorded validation, and the maintainers' fix itself
            # runs to the end there
            "fix_eligible": bool(case.get("runnable_offline")) and case.get("validated", {}).get("status") is True
                            and all(r.get("status") == "ok" for r in recorded_fixed),
        })
    if run_fixes:
        eligible = [(r, shared / "corpus" / folder / r["id"]) for r in rows if r["fix_eligible"]]

        def one(item):
            r, d = item
            case = json.loads((d / "case.json").read_text())
            before = _recorded(case, "buggy")
            ran_before = bool(before) and all(x.get("status") == "ok" for x in before)
            return r, run_case(shared, d, case, fix=True), ran_before

        workers = int(os.environ.get("DEVFLOW_CORPUS_JOBS", max(2, os.cpu_count() or 2)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for r, out, ran_before in pool.map(one, eligible):
                r["fix_run"] = {k: out.get(k) for k in ("status", "exc_type", "message", "script_line",
                                                        "device_error", "changed")}
                r["fix_ok"] = _runs_to_end(out)
                r["fix_broke"] = ran_before and not r["fix_ok"]
    n = len(rows)
    elig = [r for r in rows if "fix_ok" in r]
    return {
        "folder": folder,
        "cases": n,
        "recall": sum(r["hit"] for r in rows) / n if n else 0.0,
        "fixed_clean": sum(not r["fixed_diagnostics"] for r in rows) / n if n else 0.0,
        "fixed_false_positives": sum(len(r["fixed_diagnostics"]) for r in rows),
        "fix_cases": len(elig),
        "fix_runs_to_end": (sum(r["fix_ok"] for r in elig) / len(elig)) if elig else None,
        "fix_broke": sum(r.get("fix_broke", False) for r in elig),
        "rows": rows,
    }


def evaluate(shared: Path, run_fixes: bool = True) -> dict[str, dict]:
    return {folder: evaluate_folder(shared, folder, run_fixes) for folder in FOLDERS}


def report(results: dict[str, dict]) -> str:
    out = [f"{'case':48} {'class':18} {'hit':4} {'fixed':6} {'fix':5} reported"]
    for res in results.values():
        for r in res["rows"]:
            fix = "-" if "fix_ok" not in r else ("ok" if r["fix_ok"] else ("BROKE" if r.get("fix_broke") else "FAIL"))
            out.append(f"{res['folder'] + '/' + r['id']:48} {r['class']:18} {'yes' if r['hit'] else 'NO':4} "
                       f"{'clean' if not r['fixed_diagnostics'] else 'FP':6} {fix:5} {', '.join(r['reported'])}")
    for res in results.values():
        fs = res["fix_runs_to_end"]
        out.append(f"{res['folder']}: recall {res['recall']:.1%} ({sum(r['hit'] for r in res['rows'])}/{res['cases']}), "
                   f"fixed-clean {res['fixed_clean']:.1%} ({res['fixed_false_positives']} diagnostics on fixed files), "
                   f"fix runs to the end {'n/a' if fs is None else f'{fs:.1%}'} "
                   f"({sum(r.get('fix_ok', False) for r in res['rows'])}/{res['fix_cases']} runnable cases), "
                   f"scripts broken by a fix: {res['fix_broke']}")
    return "\n".join(out)


def write_artifact(results: dict) -> Path:
    path = ROOT / "artifacts" / "corpus.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(results, indent=2))
    return path


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    shared = Path(args[0]) if args else ROOT.parent / "shared"
    res = evaluate(shared, run_fixes="--no-runs" not in sys.argv)
    print(report(res))
    print("written", write_artifact(res))
