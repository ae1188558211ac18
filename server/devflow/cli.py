"""`devflow` command line: check | serve | run | rules.

    devflow check [PATH ...] [--format text|json|sarif] [--fix] [--unsafe-fixes]
                  [--select CODES] [--ignore CODES] [--extend-select CODES]
                  [--jobs N] [--exit-zero] [--config FILE] [--output-file FILE] [--quiet]
    devflow serve [...]      the language server (devflow.lsp.server)
    devflow run [...]        run a script with the runtime probe (devflow.runtime.cli)
    devflow dryrun [...]     run a script with CUDA emulated, report every device mix (devflow.dryrun.cli)
    devflow rules [CODE ...] the rule catalogue

Exit status of `check`: 0 nothing left to report, 1 findings or files that could not be
checked, 2 usage, configuration or internal error (as ruff).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from concurrent.futures import ProcessPoolExecutor

from devflow import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# Below this many files per worker a process pool costs more than it saves.
_FILES_PER_WORKER = 4
# True when `devflow` runs as its own process (not main([...]) called from other code or tests).
_is_process_entry = False


class UsageError(Exception):
    pass


def _code_list(value: str) -> list[str]:
    return [v.strip() for v in value.replace(" ", ",").split(",") if v.strip()]


class _Extend(argparse.Action):
    """`--select A,B --select C` -> [A, B, C]."""

    def __call__(self, parser, namespace, values, option_string=None):
        current = getattr(namespace, self.dest) or []
        setattr(namespace, self.dest, current + _code_list(values))


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="devflow",
        description="Find, fix and explain PyTorch code that mixes devices (cpu / cuda / mps / meta).",
    )
    parser.add_argument("--version", action="version", version=f"devflow {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="check .py files and .ipynb notebooks",
                           description="Check Python files and notebooks for device mixes.")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the current folder)")
    check.add_argument("--format", "--output-format", dest="format", choices=("text", "json", "sarif"),
                       default="text", help="output format (default: text)")
    check.add_argument("--fix", action="store_true", help="apply safe fixes, then report what remains")
    check.add_argument("--diff", action="store_true",
                       help="show the changes --fix would make as a unified diff, write nothing "
                            "(exit 1 if there are any)")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix, apply unsafe fixes too; without, show them as fixable")
    check.add_argument("--select", action=_Extend, default=None, metavar="CODES",
                       help="only these rules: codes or prefixes, comma-separated (DEV101,DEV2); "
                            "replaces select in the config")
    check.add_argument("--extend-select", action=_Extend, default=None, metavar="CODES",
                       help="rules to add to the selection")
    check.add_argument("--ignore", action=_Extend, default=None, metavar="CODES",
                       help="rules to skip, added to ignore in the config")
    check.add_argument("--jobs", "-j", type=_positive_int, default=None, metavar="N",
                       help="worker processes (default: the number of CPUs)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--config", metavar="FILE",
                       help="use this pyproject.toml / devflow toml for every file (default: the "
                            "nearest pyproject.toml with [tool.devflow] above each file)")
    check.add_argument("--output-file", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    check.add_argument("--quiet", "-q", action="store_true", help="text format: no summary line")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                       help="colour the text output (auto: on a terminal unless NO_COLOR is set)")
    check.add_argument("--stdin-filename", metavar="NAME",
                       help="with PATH `-`: the name of the code read from stdin (for config, messages)")

    sub.add_parser("serve", help="start the language server (stdio by default)", add_help=False)
    sub.add_parser("run", help="run a Python script and explain device errors it raises", add_help=False)
    sub.add_parser("dryrun", help="run a script with CUDA emulated and report every device mix", add_help=False)
    rules = sub.add_parser("rules", help="list the rules, or show some")
    rules.add_argument("codes", nargs="*", metavar="CODE")
    rules.add_argument("--format", choices=("text", "json"), default="text")
    return parser


# -- check ----------------------------------------------------------------------------------------

def _check_one(task: tuple) -> object:
    from devflow.analysis import program
    from devflow.api import check_file

    path, config, fix, unsafe, diff_only, roots = task
    # The engine allocates many small objects and frees them by reference counting; pausing the
    # cyclic collector per file is ~30% faster (measured on the bench corpus), and what little
    # cyclic garbage a file leaves is collected once it is re-enabled.
    gc.disable()
    try:
        return check_file(path, config, fix=fix, unsafe=unsafe, diff_only=diff_only, roots=roots)
    finally:
        gc.enable()
        program.freeze_parsed()  # the project files parsed so far: out of every later collection


def _workers(requested: int | None, n_files: int) -> int:
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    jobs = requested or available
    return max(1, min(jobs, -(-n_files // _FILES_PER_WORKER) if requested is None else n_files))


def run_check(args: argparse.Namespace) -> int:
    from devflow.config import ConfigError, ConfigResolver
    from devflow.discovery import discover
    from devflow.output import Report

    resolver = ConfigResolver(explicit=args.config, select=args.select, ignore=args.ignore,
                              extend_select=args.extend_select)
    paths = args.paths or ["."]
    if paths == ["-"]:
        return _check_stdin(args, resolver)
    if "-" in paths:
        print("devflow: error: `-` (stdin) cannot be mixed with other paths", file=sys.stderr)
        return EXIT_ERROR
    try:
        files = discover(paths, resolver)
        fix = args.fix or args.diff
        # the folders named on the command line are where imports resolve, as an editor's workspace
        # folders are (`devflow check repo/` finds `repo/pkg` from `repo/examples/run.py`)
        roots = tuple(os.path.abspath(p) for p in paths if os.path.isdir(p))
        tasks = [(path, resolver.for_path(path), fix, args.unsafe_fixes, args.diff, roots) for path in files]
    except ConfigError as e:
        print(f"devflow: error: {e}", file=sys.stderr)
        return EXIT_ERROR

    jobs = _workers(args.jobs, len(tasks))
    if _is_process_entry:
        gc.freeze()  # imports and config are never garbage: keep them out of every collection (and fork)
    if jobs <= 1:
        checked = [_check_one(t) for t in tasks]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            checked = list(pool.map(_check_one, tasks, chunksize=max(1, len(tasks) // (jobs * 8))))

    report = Report(checked, fix=args.fix, unsafe_fixes=args.unsafe_fixes, quiet=args.quiet,
                    color=_use_color(args.color, sys.stdout if not args.output_file else None))
    for f in checked:
        for note in f.notes:
            print(f"warning: {f.path}: {note}", file=sys.stderr)
        for err in f.result.rule_errors:
            print(f"warning: {f.path}: a rule failed and was skipped: {err}", file=sys.stderr)
    if not files:
        print("warning: no Python files or notebooks found under the given paths", file=sys.stderr)

    if args.diff:
        return _emit_diff(checked, args)
    return _emit(report, args)


def _use_color(choice: str, stream) -> bool:
    if choice != "auto":
        return choice == "always"
    if stream is None or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def _emit_diff(checked: list, args: argparse.Namespace) -> int:
    """--diff: the diffs on stdout, a one-line count on stderr (as ruff)."""
    diffs = [f for f in sorted(checked, key=lambda f: f.path) if f.diff]
    sys.stdout.write("".join(f.diff if f.diff.endswith("\n") else f.diff + "\n" for f in diffs))
    sys.stdout.flush()
    n = sum(f.fixed for f in diffs)
    print(f"Would fix {n} error{'' if n == 1 else 's'}." if n else "No errors would be fixed.", file=sys.stderr)
    for f in checked:
        if f.result.error is not None:
            print(f"warning: {f.path}: {f.result.error}", file=sys.stderr)
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if diffs else EXIT_CLEAN


def _check_stdin(args: argparse.Namespace, resolver) -> int:
    """`devflow check -`: the code comes on stdin (editors, pre-commit pipes). With --fix the
    fixed code goes to stdout and the report to stderr, as ruff does."""
    from devflow.api import CheckedFile, check_source, fix_source
    from devflow.config import ConfigError
    from devflow.output import Report

    name = args.stdin_filename or "-"
    try:
        config = resolver.for_path(name if args.stdin_filename else os.getcwd())
    except ConfigError as e:
        print(f"devflow: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    source = sys.stdin.read()
    result = check_source(source, name, config)
    fixed_codes: tuple[str, ...] = ()
    if args.fix:
        if result.error is None:
            new_source, codes, notes = fix_source(source, result.diagnostics, args.unsafe_fixes, path=name,
                                                  config=config)
            for note in notes:
                print(f"warning: {name}: {note}", file=sys.stderr)
            if codes:
                result = check_source(new_source, name, config)
                fixed_codes = tuple(codes)
            source = new_source
        sys.stdout.write(source)
        sys.stdout.flush()
    report = Report([CheckedFile(name, result, None, fixed_codes)], fix=args.fix, unsafe_fixes=args.unsafe_fixes,
                    quiet=args.quiet)
    return _emit(report, args, to_stderr=args.fix)


def _emit(report, args: argparse.Namespace, to_stderr: bool = False) -> int:
    from devflow.output import render

    text = render(report, args.format)
    if args.output_file:
        try:
            with open(args.output_file, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError as e:
            print(f"devflow: error: cannot write {args.output_file}: {e.strerror or e}", file=sys.stderr)
            return EXIT_ERROR
    else:
        stream = sys.stderr if to_stderr else sys.stdout
        stream.write(text)
        stream.flush()

    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if report.remaining else EXIT_CLEAN


# -- serve / run ----------------------------------------------------------------------------------

_DELEGATES = {
    "serve": ("devflow.lsp.server", "the language server"),
    "run": ("devflow.runtime.cli", "the runtime probe"),
    "dryrun": ("devflow.dryrun.cli", "the dry run"),
}


def _delegate(command: str, argv: list[str]) -> int:
    module_name, what = _DELEGATES[command]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            print(f"devflow {command}: {what} is not available in this installation ({module_name} is missing)",
                  file=sys.stderr)
        else:
            print(f"devflow {command}: {what} needs the Python package {e.name!r}, which is not installed",
                  file=sys.stderr)
        return EXIT_ERROR
    main = getattr(module, "main", None)
    if main is None:
        print(f"devflow {command}: {module_name} has no main()", file=sys.stderr)
        return EXIT_ERROR
    result = main(argv)
    return int(result or 0)


# -- rules ----------------------------------------------------------------------------------------

def run_rules(args: argparse.Namespace) -> int:
    import json

    try:
        from devflow.rules import DYNAMIC_RULES, RULES, doc_url
    except ImportError:
        print("devflow rules: the rule table is not available", file=sys.stderr)
        return EXIT_ERROR
    RULES = {**RULES, **DYNAMIC_RULES}  # noqa: N806 - the static rules and the dry run's
    codes = [c.upper() for c in args.codes] or sorted(RULES)
    chosen = [RULES[c] for c in sorted(RULES) if any(c.startswith(p) for p in codes)]
    if not chosen:
        print(f"devflow rules: no rule matches {' '.join(args.codes)}", file=sys.stderr)
        return EXIT_ERROR
    if args.format == "json":
        print(json.dumps([{"code": r.code, "name": r.name, "summary": r.summary, "fix": r.fix,
                           "url": doc_url(r.code)} for r in chosen], indent=2))
        return EXIT_CLEAN
    for r in chosen:
        fix = {"safe": "fix", "unsafe": "unsafe fix"}.get(r.fix or "", "no fix")
        print(f"{r.code}  {r.name:<40} {fix:<11} {r.summary}")
        if args.codes:
            print(f"        {doc_url(r.code)}")
    return EXIT_CLEAN


# -- entry ----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    global _is_process_entry
    _is_process_entry = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in _DELEGATES:
        return _delegate(argv[0], argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help / --version exit 0, usage errors exit 2
        return int(e.code or 0)
    try:
        if args.command == "check":
            return run_check(args)
        if args.command == "rules":
            return run_rules(args)
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("devflow: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `devflow check | head`: the reader went away; not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_CLEAN
    except Exception as e:  # noqa: BLE001 - a crash must still end with a message and exit 2
        print(f"devflow: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_ERROR
