"""`devflow dryrun [options] script.py [args...]` / `devflow dryrun [options] -m module [args...]`.

Runs the user's program (only because the user asked) in a child process with the virtual
accelerator installed; the program's own output goes to the terminal (to stderr with
--format json|sarif, so stdout holds only the report). Exit status: 0 no finding, 1 findings,
2 usage error / torch missing / the run could not start.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

TORCH_MISSING = (
    "devflow dryrun: PyTorch is not installed in this interpreter ({python}).\n"
    "The dry run executes your script with PyTorch, so it needs the torch your code uses. Install it with\n"
    "    {python} -m pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
    "(the CPU build is enough: the GPU is emulated)."
)


def _size(text: str) -> int:
    units = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20, "MIB": 2**20,
             "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40}
    t = text.strip().upper()
    num = t.rstrip("KMGTIB")
    try:
        return int(float(num) * units[t[len(num):]])
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"expected a size like 512M or 4G, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="devflow dryrun",
        description="Run a PyTorch script with CUDA emulated on this machine and report every device mix "
                    "it makes (each at its line, once, with a count). Runs your code: use it on code you trust.")
    p.add_argument("--gpus", type=int, default=1, metavar="N", help="number of virtual CUDA devices (default 1)")
    p.add_argument("--max-steps", type=int, default=2, metavar="N",
                   help="run N optimizer steps (default 2; 0: no limit); later steps change nothing, so the rest of "
                        "the script (evaluation, checkpointing) still runs")
    p.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                   help="stop the script after this long (default 300; 0: no limit)")
    p.add_argument("--meta-above", type=_size, default=None, metavar="SIZE",
                   help="tensors larger than SIZE (e.g. 1G) keep no data (meta): shapes and devices only")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    p.add_argument("--output-file", "-o", metavar="FILE", help="write the report to FILE")
    p.add_argument("--no-static", action="store_true",
                   help="do not look up the static rule that explains a finding's line")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module as `python -m MODULE`")
    p.add_argument("script", nargs="?", help="the script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if ns.module and ns.script:
        ns.args = [ns.script] + ns.args
        ns.script = None
    if not ns.module and not ns.script:
        parser.print_usage(sys.stderr)
        print("devflow dryrun: error: give a script or -m MODULE", file=sys.stderr)
        return EXIT_ERROR
    if ns.script and not os.path.isfile(ns.script):
        print(f"devflow dryrun: error: no such file: {ns.script}", file=sys.stderr)
        return EXIT_ERROR
    if importlib.util.find_spec("torch") is None:
        print(TORCH_MISSING.format(python=sys.executable), file=sys.stderr)
        return EXIT_ERROR
    result = run(ns)
    if result is None:
        return EXIT_ERROR
    from devflow.dryrun import report

    findings = result["findings"]
    if not ns.no_static:
        report.attach_static(findings)
    text = report.render(result, ns.format, target=ns.script or f"-m {ns.module}")
    if ns.output_file:
        try:
            with open(ns.output_file, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            print(f"devflow dryrun: error: cannot write {ns.output_file}: {e.strerror or e}", file=sys.stderr)
            return EXIT_ERROR
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_FINDINGS if findings and not ns.exit_zero else EXIT_CLEAN


def run(ns) -> dict | None:
    """The child run; None when it could not start."""
    fd, out_path = tempfile.mkstemp(prefix="devflow-dryrun-", suffix=".json")
    os.close(fd)
    os.unlink(out_path)
    target = ["-m", ns.module] if ns.module else [ns.script]
    cmd = [sys.executable, "-m", "devflow.dryrun.child", out_path, str(max(1, ns.gpus)), str(max(0, ns.max_steps)),
           str(max(0.0, ns.timeout)), str(ns.meta_above) if ns.meta_above else "-"] + target + list(ns.args)
    env = dict(os.environ)
    # The child must import this devflow even when the script's folder shadows it.
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    quiet_stdout = ns.format != "text" and not ns.output_file
    print(f"devflow dryrun: running {' '.join(target + list(ns.args))} with {ns.gpus} virtual GPU"
          f"{'s' if ns.gpus != 1 else ''} (max {ns.max_steps or 'unlimited'} optimizer steps)", file=sys.stderr, flush=True)
    start = time.perf_counter()
    grace = ns.timeout + 30 if ns.timeout else None
    try:
        proc = subprocess.run(cmd, env=env, stdout=sys.stderr if quiet_stdout else None, timeout=grace)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        rc = None
    except OSError as e:
        print(f"devflow dryrun: error: cannot start {sys.executable}: {e}", file=sys.stderr)
        return None
    try:
        with open(out_path, encoding="utf-8") as f:
            result = json.load(f)
    except (OSError, ValueError):
        result = {"findings": [], "status": {"state": "crashed"}}
    finally:
        import glob
        # the report, its temp file, and what DataLoader workers left if the run ended abruptly
        for p in [out_path, out_path + ".tmp"] + glob.glob(glob.escape(out_path) + ".worker-*"):
            try:
                os.unlink(p)
            except OSError:
                pass
    status = result.setdefault("status", {})
    if rc is None:
        status.update(state="timeout", reason=f"killed after {grace:g} s")
    elif status.get("state") == "running":
        status.update(state="crashed", exit_code=rc)
    status.setdefault("wall_s", round(time.perf_counter() - start, 3))
    return result
