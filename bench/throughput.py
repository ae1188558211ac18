#!/usr/bin/env python3
"""Throughput and precision of devflow's engine on real, well-tested PyTorch code.

    .venv/bin/python bench/throughput.py [--packages transformers==5.23.0 ...] [--max-files N]
                                         [--libcst-lines N] [--top N] [--json FILE]
                                         [--project] [--wheels DIR]

Downloads (`pip download --no-deps`) the wheels of transformers, diffusers, timm, peft and
accelerate into .cache/bench (git-ignored), unpacks their .py files, then, in this one process
(one core: the `--jobs 1` figure; CPU time of the process unless `--wall`), times:

- `devflow.engine.analyze` on every file  -> lines/s per core (target >= 20k);
- the same through `api.check_source` as a `devflow check` worker runs it (noqa, config,
  cyclic gc paused per file; `--no-cli` skips this second pass);
- `ast.parse` on the same files            -> the floor any analysis pays;
- `libcst.parse_module`                    -> on a sample of files when the whole set would take
                                              too long (`--libcst-lines`, said in the output);
- and counts the engine's diagnostics      -> per 100 KLOC (target <= 1), with the full list so
                                              that each one can be inspected;
- `--project`: each package checked as a project -> lines/s per core with every file's imports of
  (its imports of the package's own modules            its package resolved (roots = the unpacked wheel),
  resolved, parsed once per process by the program     the program cache shared by the whole run as in
  cache), its diagnostics listed as above              `devflow check` or the editor; next to the
                                                       per-file figure above.

`--wheels DIR`: a folder that already holds the pinned wheels (e.g. another checkout's
.cache/bench/wheels): they are copied from there instead of downloaded.

The wheel versions are pinned so that figures and findings stay comparable between runs;
`--packages` overrides them. Nothing here is a test: it prints figures and never fails on them.
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench"
DEFAULT_PACKAGES = [
    "transformers==5.23.0",
    "diffusers==0.42.1",
    "timm==1.0.31",
    "peft==0.21.2",
    "accelerate==1.15.0",
]

# CPU time of this process: the figure is "per core" even on a machine busy with other work
# (wall-clock time there would measure the neighbours). --wall switches to wall-clock time.
CLOCK = time.process_time

sys.path.insert(0, str(ROOT / "server"))


def download(packages: list[str], local: Path | None = None) -> list[Path]:
    """The wheels of `packages` in CACHE/wheels, copied from `local` or downloaded, once."""
    wheels_dir = CACHE / "wheels"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    wheels = []
    for spec in packages:
        name, _, version = spec.partition("==")
        prefix = name.replace("-", "_").lower()

        def matching(folder: Path) -> list[Path]:
            return [w for w in folder.glob("*.whl") if w.name.lower().startswith(prefix + "-")
                    and (not version or w.name.split("-")[1] == version)]

        found = matching(wheels_dir)
        if not found and local is not None and matching(local):
            import shutil

            for w in matching(local):
                shutil.copy2(w, wheels_dir / w.name)
            found = matching(wheels_dir)
        if not found:
            print(f"downloading {spec} ...", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                            "-q", "-d", str(wheels_dir), spec], check=True)
            found = [w for w in wheels_dir.glob("*.whl") if w.name.lower().startswith(prefix + "-")
                     and (not version or w.name.split("-")[1] == version)]
        if not found:
            raise SystemExit(f"no wheel for {spec} in {wheels_dir}")
        wheels.append(sorted(found)[-1])
    return wheels


def unpack(wheel: Path) -> Path:
    """The wheel's .py files under CACHE/src/<wheel name>, unpacked once."""
    dest = CACHE / "src" / wheel.stem
    stamp = dest / ".unpacked"
    if not stamp.exists():
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                if member.endswith(".py"):
                    zf.extract(member, dest)
        stamp.touch()
    return dest


def load_sources(roots: list[Path], max_files: int | None) -> list[tuple[str, str]]:
    files = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            try:
                files.append((str(path.relative_to(CACHE / "src")), path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as e:
                print(f"skipped {path}: {e}", file=sys.stderr)
    return files[:max_files] if max_files else files


def count_lines(source: str) -> int:
    return source.count("\n") + (0 if source.endswith("\n") or not source else 1)


def timed(fn, files: list[tuple[str, str]], keep: bool = False,
          label: str = "") -> tuple[float, list[tuple[float, str, object]]]:
    """Total seconds of `fn(source, path)` over `files` and each file's (seconds, path, result).

    Parse trees are dropped unless `keep`: holding 2M lines of trees alive makes every later
    garbage collection slower and would charge that to the parser being measured.
    """
    per_file = []
    gc.collect()
    total = 0.0
    for path, source in files:
        t0 = CLOCK()
        try:
            out = fn(source, path)
        except Exception as e:  # a parser's own failure is a figure too, not a crash of the bench
            out = e
        dt = CLOCK() - t0
        total += dt
        per_file.append((dt, path, out if keep or isinstance(out, Exception) else None))
        if label and len(per_file) % 500 == 0:  # progress on stderr: a full run takes minutes
            done = sum(count_lines(s) for _, s in files[: len(per_file)])
            print(f"  {label}: {len(per_file)}/{len(files)} files, {done / total:,.0f} lines/s so far",
                  file=sys.stderr, flush=True)
    return total, per_file


def sample_for_lines(files: list[tuple[str, str]], budget: int) -> list[tuple[str, str]]:
    """An evenly spread subset of `files` with about `budget` lines (all of them if fewer)."""
    total = sum(count_lines(s) for _, s in files)
    if total <= budget:
        return files
    every = -(-total // budget)  # ceil: every k-th file keeps the sample spread over all packages
    return files[::every]


def _ast_parse(source: str, path: str):
    return ast.parse(source, filename=path)


def _project_pass(engine, files: list[tuple[str, str]]):
    """Every file checked at its place in its unpacked wheel, that wheel's folder a project root:
    `from ..modeling_utils import PreTrainedModel` and `import transformers.utils` resolve to the
    package's files (parsed once per process by the program cache, as in one `devflow check` run)."""
    from devflow.analysis import program

    program.clear_cache()
    src = CACHE / "src"

    def as_project(source: str, path: str):
        # as a `devflow check` worker runs a file (cli._check_one): cyclic gc paused during the run,
        # the program cache moved out of the collector's sight between runs (program.freeze_parsed)
        where = src / path
        gc.disable()
        try:
            return engine.analyze(source, str(where), roots=(str(src / Path(path).parts[0]),))
        finally:
            gc.enable()
            program.freeze_parsed()

    return timed(as_project, files, keep=True, label="project mode")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packages", nargs="+", default=DEFAULT_PACKAGES)
    ap.add_argument("--max-files", type=int, default=None, help="only the first N files (quick runs)")
    ap.add_argument("--libcst-lines", type=int, default=300_000,
                    help="libcst.parse_module on an evenly spread sample of about this many lines "
                         "(0: every file)")
    ap.add_argument("--top", type=int, default=10, help="list the N slowest files for the engine")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    ap.add_argument("--wall", action="store_true", help="time with the wall clock instead of CPU time")
    ap.add_argument("--no-cli", dest="cli", action="store_false",
                    help="skip the second engine pass as `devflow check` runs it (noqa, config, gc paused)")
    ap.add_argument("--project", action="store_true",
                    help="also check each package as a project (imports of its own modules resolved)")
    ap.add_argument("--wheels", type=Path, default=None, help="copy the pinned wheels from this folder")
    args = ap.parse_args(argv)
    global CLOCK
    if args.wall:
        CLOCK = time.perf_counter

    from devflow import engine  # after sys.path: the checkout's engine, even without an install

    roots = [unpack(w) for w in download(args.packages, args.wheels)]
    files = load_sources(roots, args.max_files)
    lines = sum(count_lines(s) for _, s in files)
    print(f"corpus: {len(files)} files, {lines:,} lines from {', '.join(args.packages)}")

    engine.analyze("import torch\n", "warmup.py")
    engine_s, engine_runs = timed(engine.analyze, files, keep=True, label="engine")
    cli_s = None
    if args.cli:
        from devflow.api import check_source

        def as_cli(source: str, path: str):  # what each `devflow check` worker does per file
            gc.disable()
            try:
                return check_source(source, path)
            finally:
                gc.enable()

        cli_s, _ = timed(as_cli, files, label="devflow check path")
    project_s = project_runs = None
    if args.project:
        project_s, project_runs = _project_pass(engine, files)
    ast_s, ast_runs = timed(_ast_parse, files)

    import libcst

    cst_files = files if args.libcst_lines == 0 else sample_for_lines(files, args.libcst_lines)
    cst_lines = sum(count_lines(s) for _, s in cst_files)
    cst_s, _ = timed(lambda s, p: libcst.parse_module(s), cst_files)

    diagnostics, file_errors, rule_errors = [], [], []
    for _, path, result in engine_runs:
        if isinstance(result, Exception):
            file_errors.append(f"{path}: engine raised {type(result).__name__}: {result}")
            continue
        if result.error:
            file_errors.append(f"{path}: {result.error}")
        rule_errors.extend(f"{path}: {e}" for e in result.rule_errors)
        diagnostics.extend((path, d) for d in result.diagnostics)
    ast_failures = sum(1 for _, _, r in ast_runs if isinstance(r, Exception))

    def rate(n: int, s: float) -> float:
        return n / s if s > 0 else float("inf")

    figures = {
        "files": len(files),
        "lines": lines,
        "engine_seconds": round(engine_s, 3),
        "engine_lines_per_s": round(rate(lines, engine_s)),
        "ast_lines_per_s": round(rate(lines, ast_s)),
        "libcst_lines_per_s": round(rate(cst_lines, cst_s)),
        "libcst_sampled_lines": cst_lines,
        "engine_vs_ast": round(engine_s / ast_s, 2) if ast_s else None,
        "check_lines_per_s": round(rate(lines, cli_s)) if cli_s else None,
        "diagnostics": len(diagnostics),
        "diagnostics_per_100kloc": round(len(diagnostics) / lines * 100_000, 3) if lines else 0.0,
        "project_lines_per_s": round(rate(lines, project_s)) if project_s else None,
        "file_errors": len(file_errors),
        "rule_errors": len(rule_errors),
    }

    print(f"\n== throughput (one core, {'wall-clock' if args.wall else 'CPU'} time)")
    print(f"devflow engine       {figures['engine_lines_per_s']:>10,} lines/s   ({engine_s:.1f} s, "
          f"{figures['engine_vs_ast']}x ast.parse time)   target >= 20,000")
    if cli_s:
        print(f"devflow check path   {figures['check_lines_per_s']:>10,} lines/s   ({cli_s:.1f} s: check_source with "
              f"noqa + config, cyclic gc paused per file as the CLI workers do)")
    if project_s:
        from devflow.analysis import program

        stats = program.cache_stats()
        print(f"devflow project mode {figures['project_lines_per_s']:>10,} lines/s   ({project_s:.1f} s: each package"
              f" as a project, its own imports resolved; program cache at the end: {stats['files']} files)")
    print(f"ast.parse            {figures['ast_lines_per_s']:>10,} lines/s   ({ast_s:.1f} s"
          f"{f', {ast_failures} files failed to parse' if ast_failures else ''})")
    sampled = "" if cst_files is files else f", on a sample of {len(cst_files)} files / {cst_lines:,} lines"
    print(f"libcst.parse_module  {figures['libcst_lines_per_s']:>10,} lines/s   ({cst_s:.1f} s{sampled})")
    print("\n== slowest files for the engine")
    sources = dict(files)
    for dt, path, _ in sorted(engine_runs, key=lambda r: r[0], reverse=True)[: args.top]:
        print(f"  {dt * 1000:8.1f} ms  {count_lines(sources[path]):>6} lines  {path}")
    print("\n== precision")
    print(f"diagnostics: {len(diagnostics)}  = {figures['diagnostics_per_100kloc']} per 100 KLOC   target <= 1")
    for path, d in sorted(diagnostics, key=lambda pd: (pd[0], pd[1].span.line)):
        print(f"  {path}:{d.span.line}:{d.span.col + 1}: {d.code} {d.message}")
    if project_runs is not None:
        project_diags = [(path, d) for _, path, r in project_runs if not isinstance(r, Exception) for d in r.diagnostics]
        project_errors = [f"{path}: {e}" for _, path, r in project_runs if not isinstance(r, Exception) for e in r.rule_errors]
        project_errors += [f"{path}: engine raised {r!r}" for _, path, r in project_runs if isinstance(r, Exception)]
        figures["project_diagnostics"] = len(project_diags)
        figures["project_diagnostics_per_100kloc"] = round(len(project_diags) / lines * 100_000, 3) if lines else 0.0
        print(f"\n== precision, project mode (imports of the package's own modules resolved)")
        print(f"diagnostics: {len(project_diags)}  = {figures['project_diagnostics_per_100kloc']} per 100 KLOC   target <= 1")
        for path, d in sorted(project_diags, key=lambda pd: (pd[0], pd[1].span.line)):
            print(f"  {path}:{d.span.line}:{d.span.col + 1}: {d.code} {d.message}")
        for line in project_errors[:20]:
            print(f"  error: {line}")
        print("\n== slowest files, project mode")
        sources = dict(files)
        for dt, path, _ in sorted(project_runs, key=lambda r: r[0], reverse=True)[: args.top]:
            print(f"  {dt * 1000:8.1f} ms  {count_lines(sources[path]):>6} lines  {path}")
    if file_errors:
        print(f"\nfiles the engine reported as unanalysable: {len(file_errors)}")
        for line in file_errors[:20]:
            print(f"  {line}")
    if rule_errors:
        print(f"\nrule errors (a rule raised; the rest of the file was still checked): {len(rule_errors)}")
        for line in rule_errors[:50]:
            print(f"  {line}")
    import resource

    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # Linux: KiB
    print(f"\npeak RSS of this process: {figures['peak_rss_mb']:,} MB (all passes; the program cache of --project)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
