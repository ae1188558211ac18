"""Check the rewriter itself: a rewritten runnable case must behave like the unrewritten one
under the corpus harness (meta_run.py, the case's own validation steps): same outcome
(ok / error) and the same cross-device verdict. Sibling modules a rewrite creates get the
harness's own cuda -> meta rewrite, as the entry script does."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .rewrite import REWRITES, case_dirs, load, variant


def _harness(shared: Path):
    spec = importlib.util.spec_from_file_location("meta_run", shared / "corpus" / "tools" / "meta_run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(shared: Path, case: dict, files: dict[str, str], entry: str, extras: set[str]) -> dict:
    meta = _harness(shared)
    with tempfile.TemporaryDirectory(prefix="devflow-mm-run-") as tmp:
        work = Path(tmp)
        steps = case.get("validation_steps") or [{"role": "check", "mode": "strict", "args": []}]
        modes = {s.get("mode", "strict") for s in steps if s.get("role") != "fixture"}
        for name, text in files.items():
            if name != entry and name not in extras and modes <= {"strict", "plain"}:
                text = meta.rewrite(text)
            (work / name).write_text(text)
        if entry != "buggy.py":
            (work / "buggy.py").write_text(files[entry])  # fixtures and steps name buggy.py
        result: dict = {}
        for step in steps:
            if step.get("role") == "fixture":
                subprocess.run([sys.executable, step["script"]], cwd=work, capture_output=True, timeout=300)
                continue
            cmd = [sys.executable, str(shared / "corpus" / "tools" / "meta_run.py")]
            if step.get("mode", "strict") != "plain":
                cmd.append(f"--{step.get('mode', 'strict')}")
            cmd += ["--workdir", str(work), str(work / "buggy.py"), *step.get("args", [])]
            p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=300)
            out = {"status": "error", "message": (p.stderr or p.stdout)[-300:]}
            for line in reversed(p.stdout.strip().splitlines()):
                try:
                    out = json.loads(line)
                    break
                except ValueError:
                    continue
            if step.get("role") == "check":
                result = out
        return {"status": result.get("status"), "device_error": bool(result.get("device_error")),
                "message": (result.get("message") or "")[:160]}


def run(shared: Path, n: int, kinds: list[str] | None = None, cases: list[str] | None = None) -> list[dict]:
    shared = shared.resolve()
    kinds = kinds or [k for k in REWRITES if k != "identity"]
    rows = []
    picked = [d for d in case_dirs(shared) if json.loads((d / "case.json").read_text()).get("runnable_offline")
              and (not cases or d.name in cases)][:n]
    for d in picked:
        case = json.loads((d / "case.json").read_text())
        for role in ("buggy", "fixed"):
            proj = load(d, role)
            base = _run(shared, case, {**proj.sources, **proj.extras}, proj.entry, set(proj.extras))
            for kind in kinds:
                v = variant(d, kind, role, proj)
                if v.rendered is None:
                    continue
                got = _run(shared, case, v.rendered.files, proj.entry, set(proj.extras))
                same = (got["status"] == "ok") == (base["status"] == "ok") and got["device_error"] == base["device_error"]
                rows.append({"case": d.name, "role": role, "kind": kind, "same": same, "base": base, "got": got})
                print(f"  {'same' if same else 'DIFFERS'}: {d.name} {role} {kind}: {base['status']}/{base['device_error']}"
                      f" -> {got['status']}/{got['device_error']} {got['message'][:100] if not same else ''}", flush=True)
    return rows


def report(rows: list[dict]) -> str:
    out = [f"rewriter validation (meta_run): {sum(r['same'] for r in rows)}/{len(rows)} variants behave like the original"]
    for r in rows:
        if not r["same"]:
            out.append(f"  DIFFERS {r['case']} {r['role']} {r['kind']}: {r['base']} -> {r['got']}")
    return "\n".join(out)
