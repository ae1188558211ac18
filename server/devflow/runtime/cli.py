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


def _user_traceback(exc: BaseException):
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


# Set when the script ended with an uncaught KeyboardInterrupt: at the very end of interpreter
# shutdown the process kills itself with SIGINT, as python does (the shell sees "killed by SIGINT").
_interrupted = {"die": False}


def _die_by_sigint() -> None:
    if not _interrupted["die"]:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except BaseException:  # noqa: BLE001 - shutting down: nothing left to tell
            pass
    try:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # noqa: BLE001 - no signals here (Windows): exit 130 as returned
        pass


def _exit_code(e: SystemExit) -> int:
    """What python exits with for an uncaught SystemExit (printing a non-integer code)."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code)
    try:
        sys.stderr.write(f"{code}\n")
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - a closed stderr: python stays silent too
        pass
    return 1


def _print_uncaught(exc: BaseException) -> None:
    """sys.excepthook, as the interpreter calls it (a user's custom hook included)."""
    tb = _user_traceback(exc)
    try:
        exc.__traceback__ = tb
    except BaseException:  # noqa: BLE001
        pass
    hook = getattr(sys, "excepthook", None) or sys.__excepthook__
    try:
        hook(type(exc), exc, tb)
    except BaseException as hook_error:  # noqa: BLE001 - python's own wording for a failing hook
        try:
            if hook_error.__context__ is exc:  # the interpreter calls the hook outside any handler
                hook_error.__context__ = None
            htb = hook_error.__traceback__
            htb = htb.tb_next if htb is not None and htb.tb_frame.f_code is _print_uncaught.__code__ else htb
            sys.stderr.write("Error in sys.excepthook:\n")
            traceback.print_exception(type(hook_error), hook_error, htb)
            sys.stderr.write("\nOriginal exception was:\n")
            traceback.print_exception(type(exc), exc, tb)
        except BaseException:  # noqa: BLE001
            pass


def main(argv: list[str], *, process_entry: bool | None = None) -> int:
    try:
        report_json, script, module, args = _parse(list(argv))
    except ValueError as e:
        sys.stderr.write(f"devflow run: {e}\n{USAGE}")
        return 2
    if script is None and module is None:
        sys.stdout.write(USAGE)
        return 0
    if process_entry is None:  # `devflow run` as its own process (devflow.cli's entry point)
        process_entry = bool(getattr(sys.modules.get("devflow.cli"), "_is_process_entry", False))
    if script is not None:
        if not os.path.exists(script):  # a directory or zip with __main__.py runs too, as with python
            sys.stderr.write(f"devflow run: can't open file {script!r}: no such file\n")
            return 2
        if os.path.isdir(script) and not os.path.isfile(os.path.join(script, "__main__.py")):
            sys.stderr.write(f"devflow run: can't find '__main__' module in {script!r}\n")
            return 1
        sys.argv = [script] + args
        # python puts the script's folder first on sys.path, in place of its own entry
        entry = os.path.dirname(os.path.abspath(script))
    else:
        sys.argv = [module] + args
        entry = os.getcwd()
    if sys.path:
        sys.path[0] = entry
    else:
        sys.path.insert(0, entry)
    if process_entry:
        import atexit

        atexit.register(_die_by_sigint)  # registered first, so it runs after the script's own handlers
    saved = (sys.modules.get("__main__"), sys.getrecursionlimit())
    try:
        return _run(script, module, report_json, process_entry)
    finally:
        if not process_entry:  # called from other code (tests, a driver): leave its process as it was
            _previous_main.clear()  # and do not keep the script's module (its objects) alive
            if saved[0] is not None:
                sys.modules["__main__"] = saved[0]
            sys.setrecursionlimit(saved[1])


def _run(script, module, report_json, process_entry) -> int:
    try:
        if module is not None:
            _run_module_as_main(module)
        elif os.path.isfile(script) and not _is_zip(script):
            _run_file_as_main(os.path.abspath(script))  # python 3.9+: an absolute __file__
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        return _exit_code(e)
    except KeyboardInterrupt as exc:
        _print_uncaught(exc)
        if process_entry:
            _interrupted["die"] = True
        return 130
    except BaseException as exc:  # noqa: BLE001 - report, then the traceback, then exit 1 like python
        _report(exc, report_json)
        _print_uncaught(exc)
        return 1
    return 0


def _outer_depth() -> int:
    """Python frames below the script (devflow's entry, this module): the recursion limit grows
    by that much, so a RecursionError comes at the same depth of the user's code as with python."""
    depth, f = 0, sys._getframe(1)
    while f is not None:
        depth += 1
        f = f.f_back
    return depth


def _run_file_as_main(path: str) -> None:
    """Run the file in a real `__main__` module that stays in sys.modules until the interpreter
    shuts down, as `python script.py` does (its globals die at shutdown, not when we return)."""
    import builtins
    import importlib.machinery
    import types

    with open(path, "rb") as f:  # bytes: compile() honours the file's coding cookie like python
        source = f.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main_mod = types.ModuleType("__main__")
    main_mod.__dict__.update({"__file__": path, "__cached__": None, "__builtins__": builtins,
                              "__loader__": importlib.machinery.SourceFileLoader("__main__", path),
                              "__spec__": None, "__package__": None})
    _previous_main.append(sys.modules.get("__main__"))  # devflow's own entry module stays alive
    sys.modules["__main__"] = main_mod
    sys.setrecursionlimit(sys.getrecursionlimit() + _outer_depth() + 1)
    exec(code, main_mod.__dict__)


def _run_module_as_main(module: str) -> None:
    """`python -m module`: runpy's own entry for -m (sys.modules['__main__'] replaced for good)."""
    _previous_main.append(sys.modules.get("__main__"))
    sys.setrecursionlimit(sys.getrecursionlimit() + _outer_depth() + 3)
    runner = getattr(runpy, "_run_module_as_main", None)
    if runner is None:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        runner(module, alter_argv=False)


_previous_main: list = []


def _is_zip(path: str) -> bool:
    try:
        import zipfile

        return zipfile.is_zipfile(path)
    except BaseException:  # noqa: BLE001
        return False


def _report(exc: BaseException, report_json: str | None) -> None:
    """Print the placement report on stderr (and write the JSON); never raises, never exits."""
    try:
        from .hook import report_for
        from .render import render_text

        rep = report_for(exc)
        if rep is None:
            return
        for stream in (sys.stdout,):  # keep the program's output before the report, as printed
            try:
                if stream is not None and not stream.closed:
                    stream.flush()
            except BaseException:  # noqa: BLE001 - a closed / broken stdout is the program's business
                pass
        text = render_text(rep, color=_isatty(sys.stderr))
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - a closed stderr: nowhere to print
            pass
        if report_json:
            path = _rank_path(report_json)
            try:
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(rep, f, indent=1, default=str)
                sys.stderr.write(f"devflow: report written to {path}\n")
            except OSError as e:
                sys.stderr.write(f"devflow: could not write the report to {path}: {e}\n")
    except BaseException as e:  # noqa: BLE001 - the program's own traceback must still follow
        try:
            sys.stderr.write(f"devflow: the placement report failed: {type(e).__name__}\n")
        except BaseException:  # noqa: BLE001
            pass


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except BaseException:  # noqa: BLE001
        return False
