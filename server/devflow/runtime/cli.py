"""`devflow run [--report-json FILE] script.py [args...]`: run a script as `python script.py` would,
and on a cross-device error print the placement report before the traceback."""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback

USAGE = """usage: devflow run [--report-json FILE] [-m module | script.py] [args...]

Runs the script as `python script.py args...` would (__main__, sys.argv, exit status).
On a cross-device error it prints a device placement report (every live tensor, module and
optimizer state by device, and the culprit) before the traceback.
  --report-json FILE   also write the report as JSON (under torchrun: FILE.rank<N>.json per rank)
"""


def _parse(argv: list[str]):
    report_json = None
    module = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            return None, None, None, None
        if a == "--report-json":
            if i + 1 >= len(argv):
                raise ValueError("--report-json needs a file name")
            report_json = argv[i + 1]
            i += 2
            continue
        if a.startswith("--report-json="):
            report_json = a.split("=", 1)[1]
            i += 1
            continue
        if a == "-m":
            if i + 1 >= len(argv):
                raise ValueError("-m needs a module name")
            module = argv[i + 1]
            return report_json, None, module, argv[i + 2:]
        if a == "--":
            i += 1
            break
        if a.startswith("-"):
            raise ValueError(f"unknown option {a}")
        break
    if i >= len(argv):
        raise ValueError("no script given")
    return report_json, argv[i], None, argv[i + 1:]


def _rank_path(path: str) -> str:
    rank = os.environ.get("RANK")
    world = os.environ.get("WORLD_SIZE", "1")
    if rank is None or world in ("", "1"):
        return path
    root, ext = os.path.splitext(path)
    return f"{root}.rank{rank}{ext or '.json'}"


def _user_traceback(exc: BaseException, script: str | None):
    """Drop devflow's and runpy's frames so the traceback starts in the user's code, like python's."""
    tb = exc.__traceback__
    here = os.path.dirname(os.path.abspath(__file__))
    start = tb
    while tb is not None:
        raw = tb.tb_frame.f_code.co_filename
        fn = os.path.abspath(raw)
        if not (fn.startswith(here + os.sep) or os.path.basename(fn) == "runpy.py" or raw.startswith("<frozen runpy")):
            break
        tb = tb.tb_next
    if tb is None and isinstance(exc, SyntaxError):
        return None  # the script did not compile: python shows only the error, no frames
    return tb or start


def main(argv: list[str]) -> int:
    try:
        report_json, script, module, args = _parse(list(argv))
    except ValueError as e:
        sys.stderr.write(f"devflow run: {e}\n{USAGE}")
        return 2
    if script is None and module is None:
        sys.stdout.write(USAGE)
        return 0
    if script is not None:
        if not os.path.exists(script):  # a directory or zip with __main__.py runs too, as with python
            sys.stderr.write(f"devflow run: can't open file {script!r}: no such file\n")
            return 2
        if os.path.isdir(script) and not os.path.isfile(os.path.join(script, "__main__.py")):
            sys.stderr.write(f"devflow run: can't find '__main__' module in {script!r}\n")
            return 1
        sys.argv = [script] + args
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    else:
        sys.argv = [module] + args
        sys.path.insert(0, os.getcwd())
    try:
        if module is not None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        sys.stderr.write(f"{code}\n")
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException as exc:  # noqa: BLE001 - report, then the traceback, then exit 1 like python
        _report(exc, report_json)
        sys.stderr.flush()
        traceback.print_exception(type(exc), exc, _user_traceback(exc, script))
        return 1
    finally:
        sys.stdout.flush()
    return 0


def _report(exc: BaseException, report_json: str | None) -> None:
    from .hook import report_for
    from .render import render_text

    rep = report_for(exc)
    if rep is None:
        return
    sys.stdout.flush()
    sys.stderr.write(render_text(rep, color=sys.stderr.isatty()))
    if report_json:
        path = _rank_path(report_json)
        try:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(rep, f, indent=1, default=str)
            sys.stderr.write(f"devflow: report written to {path}\n")
        except OSError as e:
            sys.stderr.write(f"devflow: could not write the report to {path}: {e}\n")
