"""Cold start of the VS Code client's server chain, without VS Code: what the client runs between
activation and the first diagnostics, timed in wall clock and in CPU seconds (the CPU figure is
what a quiet machine's wall clock would be; the shared 2-core machine's wall clock is not).

    .venv/bin/python bench/cold_start.py [--libs extension/bundled/libs] [--runs 5]

"before": `python -c PROBE` importing the whole server (the old probe), then
`python -m devflow serve` with the project folder as cwd (the old launch).
"after": `python -I devflow_launch.py --libs LIBS probe` (finds, does not import), then
`python -I devflow_launch.py --libs LIBS serve`; "after, probe remembered": the serve step only.
Each run: spawn, LSP initialize / initialized / didOpen of the canonical DEV101 snippet, and the
first publishDiagnostics for it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "extension" / "launcher" / "devflow_launch.py"
SNIPPET = (ROOT / "tests" / "fixtures" / "canonical.py").read_text(encoding="utf-8")
OLD_PROBE = ("import sys, json, importlib\n"
             "for m in ['devflow', 'devflow.lsp', 'pygls.lsp.server', 'lsprotocol.types', 'libcst']:\n"
             "    importlib.import_module(m)\n"
             "print(json.dumps({'version': list(sys.version_info[:3])}))\n")


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def send(proc: subprocess.Popen, msg: dict) -> None:
    body = json.dumps(msg).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def read(proc: subprocess.Popen) -> dict:
    length = 0
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def first_diagnostics(cmd: list[str], cwd: str, env: dict) -> None:
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        uri = Path(cwd, "model.py").as_uri()
        send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": Path(cwd).as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": Path(cwd).as_uri(), "name": "w"}]}})
        while read(proc).get("id") != 1:
            pass
        send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": SNIPPET}}})
        while True:
            msg = read(proc)
            if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"]["uri"] == uri:
                if not msg["params"]["diagnostics"]:
                    raise RuntimeError("no DEV101 in the canonical snippet")
                return
    finally:
        proc.kill()
        proc.wait()


def timed(steps) -> tuple[float, float]:
    cpu0, t0 = cpu_children(), time.perf_counter()
    for step in steps:
        step()
    return (time.perf_counter() - t0) * 1000, (cpu_children() - cpu0) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--libs", default=str(ROOT / "extension" / "bundled" / "libs"))
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    libs = args.libs if Path(args.libs, "devflow").is_dir() else str(ROOT / "server")
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="devflow-cold-") as work:
        Path(work, "model.py").write_text(SNIPPET, encoding="utf-8")
        old_env = {**os.environ, "PYTHONPATH": libs, "PYTHONUTF8": "1"}
        new_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        launch = [py, "-I", "-X", "utf8", str(LAUNCHER), "--libs", libs]
        variants = {
            "before (probe imports the server, python -m devflow serve)": [
                lambda: subprocess.run([py, "-c", OLD_PROBE], cwd=work, env=old_env, check=True, capture_output=True),
                lambda: first_diagnostics([py, "-m", "devflow", "serve"], work, old_env)],
            "after (isolated launcher: cheap probe, then serve)": [
                lambda: subprocess.run(launch + ["probe"], cwd=work, env=new_env, check=True, capture_output=True),
                lambda: first_diagnostics(launch + ["serve"], work, new_env)],
            "after, probe remembered (later activations)": [
                lambda: first_diagnostics(launch + ["serve"], work, new_env)],
        }
        timed(variants["after, probe remembered (later activations)"])  # warm the bytecode caches
        print(f"cold start to first diagnostics, median of {args.runs} (libs {libs}; load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} cores)")
        for name, steps in variants.items():
            walls, cpus = zip(*(timed(steps) for _ in range(args.runs)))
            print(f"  {name:<62} wall {statistics.median(walls):6.0f} ms   cpu {statistics.median(cpus):6.0f} ms")
        print("VS Code adds its own part (extension host, document sync): see the e2e's figure.")


if __name__ == "__main__":
    main()
