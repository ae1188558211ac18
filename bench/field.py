#!/usr/bin/env python3
"""Precision of devflow on real application code: a field of public PyTorch repositories.

    .venv/bin/python bench/field.py [CHECKOUTS] [--repo NAME ...] [--review FILE] [--json FILE]
                                    [--compare EARLIER.json] [--brief] [--no-source]
    PYTHONPATH=<other worktree>/server .venv/bin/python bench/field.py ...   # another branch's engine

CHECKOUTS (default .cache/field) holds one folder per repository of bench/field.txt, named
`owner+name`, with the files of the pinned commit (bench/field_fetch.md says how they were made;
nothing is downloaded here). For every `.py` and `.ipynb` file in each repository's scope, tests
left out, the engine runs in this process exactly as `devflow check` runs it on one file
(`devflow.api.read_source` + `check_source`, default configuration, notebooks as their joined code
cells). It prints:

- per repository: files, lines (a notebook counts its code cells), CPU seconds, and every
  diagnostic as `path:line CODE message`, the source line, and the related locations;
- files the engine could not check (E999 syntax error, E902 unreadable, E000 internal error) and
  rule errors, which are bugs of their own;
- a summary: diagnostics per 100 KLOC, counts per rule, and, from the classification in
  bench/field_review.md (true / false / debatable per diagnostic), precision = true / (true + false)
  per rule and overall, false alarms per mechanism, and the diagnostics not classified yet (as table
  rows ready to paste into the review);
- with `--compare`, the diagnostics gone and new since an earlier run's `--json` (before / after a change).

A review entry is keyed by repository, path, code and the diagnostic's source line (whitespace
collapsed), so it survives line shifts; the line number only breaks ties between identical lines.
Nothing here is a test: it prints figures and never fails on them.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
FIELD_TXT = ROOT / "bench" / "field.txt"
REVIEW_MD = ROOT / "bench" / "field_review.md"
SUFFIXES = (".py", ".ipynb")
VERDICTS = ("true", "false", "debatable")


# -- the field ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Repo:
    name: str  # owner/name
    commit: str
    scopes: tuple[str, ...]  # folders, files or globs; "!x" leaves x out

    @property
    def slug(self) -> str:
        return self.name.replace("/", "+")


def read_field(path: Path = FIELD_TXT) -> list[Repo]:
    repos = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        spec, *scopes = line.split()
        name, sep, commit = spec.partition("@")
        if not sep or name.count("/") != 1 or not commit:
            raise SystemExit(f"{path}:{n}: expected `owner/name@commit scope...`, got {raw!r}")
        repos.append(Repo(name, commit, tuple(scopes) or (".",)))
    return repos


def is_test(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return (any(p in ("test", "tests", "testing", ".ipynb_checkpoints") for p in parts[:-1])
            or name.startswith("test_") or name.endswith(("_test.py", "_tests.py")) or name == "conftest.py")


def _matches(path: str, scope: str) -> bool:
    scope = scope.strip("/")
    if scope in ("", "."):
        return True
    if any(c in scope for c in "*?["):
        return fnmatch.fnmatch(path, scope)
    return path == scope or path.startswith(scope + "/")


def in_scope(path: str, scopes: tuple[str, ...]) -> bool:
    """A `.py` / `.ipynb` file, not a test, inside a positive scope and outside every `!scope`."""
    if not path.endswith(SUFFIXES) or is_test(path):
        return False
    positive = [s for s in scopes if not s.startswith("!")] or ["."]
    negative = [s[1:] for s in scopes if s.startswith("!")]
    return any(_matches(path, s) for s in positive) and not any(_matches(path, s) for s in negative)


# -- the review -----------------------------------------------------------------------------------

def norm(source_line: str) -> str:
    return " ".join(source_line.split())


@dataclass
class Verdict:
    verdict: str
    line: int
    mechanism: str
    reason: str


def _cells(row: str) -> list[str]:
    """The cells of a markdown table row; `\\|` is a literal bar."""
    cells = re.split(r"(?<!\\)\|", row.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def _unquote(cell: str) -> str:
    return cell[1:-1] if len(cell) >= 2 and cell[0] == cell[-1] == "`" else cell


def read_review(path: Path) -> dict[tuple[str, str, str, str], list[Verdict]]:
    """(repo, path, code, source line) -> verdicts, from the rows of the review's tables:
    `| verdict | repo | path:line | code | `source line` | mechanism | reason |`."""
    review: dict[tuple[str, str, str, str], list[Verdict]] = defaultdict(list)
    if not path.exists():
        return review
    for row in path.read_text(encoding="utf-8").splitlines():
        if not row.startswith("|"):
            continue
        cells = _cells(row)
        if len(cells) < 5 or cells[0].lower() not in VERDICTS:
            continue
        verdict, repo, location, code, source = cells[:5]
        mechanism = cells[5] if len(cells) > 5 else ""
        reason = cells[6] if len(cells) > 6 else ""
        file, _, line = location.rpartition(":")
        if not line.isdigit():
            file, line = location, "0"
        key = (repo, file, code, norm(_unquote(source)))
        review[key].append(Verdict(verdict.lower(), int(line), mechanism, reason))
    return review


def read_mechanisms(path: Path) -> dict[str, str]:
    """The legend of mechanism ids: rows `| M1 | what the engine believed |` of the review."""
    legend = {}
    if path.exists():
        for row in path.read_text(encoding="utf-8").splitlines():
            cells = _cells(row) if row.startswith("|") else []
            if len(cells) >= 2 and re.fullmatch(r"M\d+[a-z]?", cells[0]) and cells[0] not in legend:
                legend[cells[0]] = cells[1]
    return legend


def lookup(review, repo: str, path: str, code: str, source: str, line: int) -> Verdict | None:
    entries = review.get((repo, path, code, norm(source)))
    if not entries:
        return None
    return min(entries, key=lambda v: abs(v.line - line))


# -- checking -------------------------------------------------------------------------------------

@dataclass
class Finding:
    repo: str
    path: str
    line: int
    code: str
    message: str
    source: str
    cell: str = ""  # "cell 3 line 2" for a notebook
    related: list[str] = field(default_factory=list)
    verdict: Verdict | None = None


@dataclass
class RepoResult:
    repo: Repo
    files: int = 0
    lines: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    errors: list[tuple[str, str, str]] = field(default_factory=list)  # (path, code, message)
    missing: bool = False
    slowest: list[tuple[float, str, int]] = field(default_factory=list)  # (CPU s, path, lines) per file


def check_repo(repo: Repo, folder: Path, api) -> RepoResult:
    result = RepoResult(repo)
    base = folder / repo.slug
    if not base.is_dir():
        result.missing = True
        return result
    paths = sorted(p for p in base.rglob("*") if p.is_file() and in_scope(p.relative_to(base).as_posix(), repo.scopes))
    for p in paths:
        rel = p.relative_to(base).as_posix()
        t0 = time.process_time()
        try:
            src = api.read_source(str(p))
        except api.FileProblem as e:
            result.errors.append((rel, "E902", str(e)))
            continue
        res = api.check_source(src.text, str(p))
        spent = time.process_time() - t0
        result.seconds += spent
        result.files += 1
        lines = src.text.splitlines()
        result.slowest.append((spent, rel, len(lines)))
        result.lines += len(lines)
        if res.error is not None:
            result.errors.append((rel, api.error_code(res) or "E999", res.error))
        for err in res.rule_errors:
            result.errors.append((rel, "RULE", err))
        for d in res.diagnostics:
            line = d.span.line
            text = lines[line - 1] if 0 < line <= len(lines) else ""
            cell = ""
            if src.cells is not None:
                c, cl = src.cells.to_cell(line)
                cell = f"cell {c + 1} line {cl}"
            related = [f"{r.span.line}: {r.message}  | {lines[r.span.line - 1].strip() if 0 < r.span.line <= len(lines) else ''}"
                       for r in d.related]
            result.findings.append(Finding(repo.name, rel, line, d.code, d.message, text, cell, related))
    return result


# -- report ---------------------------------------------------------------------------------------

def per_kloc(n: int, lines: int) -> float:
    return 100_000 * n / lines if lines else 0.0


def precision(true: int, false: int) -> str:
    return f"{100 * true / (true + false):.0f}%" if true + false else "-"


def report(results: list[RepoResult], review, legend: dict[str, str], show_source: bool, brief: bool) -> dict:
    out = sys.stdout
    all_findings: list[Finding] = []
    for r in results:
        if r.missing:
            print(f"== {r.repo.name}: not checked out (no {r.repo.slug} folder)", file=out)
            continue
        print(f"== {r.repo.name}@{r.repo.commit[:10]}  {r.files} files  {r.lines:,} lines  "
              f"{r.seconds:.1f} s  {len(r.findings)} diagnostics", file=out)
        for f in r.findings:
            f.verdict = lookup(review, f.repo, f.path, f.code, f.source, f.line)
            all_findings.append(f)
            if brief:
                continue
            tag = f"[{f.verdict.verdict}{' ' + f.verdict.mechanism if f.verdict.mechanism else ''}] " if f.verdict else "[?] "
            cell = f" ({f.cell})" if f.cell else ""
            print(f"  {tag}{f.path}:{f.line}{cell} {f.code} {f.message}", file=out)
            if show_source:
                print(f"      > {f.source.strip()}", file=out)
                for rel in f.related:
                    print(f"      related {rel}", file=out)
        if not brief:
            for path, code, msg in r.errors:
                print(f"  {path} {code} {msg}", file=out)

    checked = [r for r in results if not r.missing]
    lines = sum(r.lines for r in checked)
    files = sum(r.files for r in checked)
    seconds = sum(r.seconds for r in checked)
    errors = Counter(code for r in checked for _, code, _ in r.errors)
    print("\n== summary", file=out)
    print(f"repositories {len(checked)} (missing {len(results) - len(checked)}), files {files}, "
          f"lines {lines:,}, CPU {seconds:.1f} s ({lines / seconds if seconds else 0:,.0f} lines/s)", file=out)
    print(f"diagnostics {len(all_findings)} = {per_kloc(len(all_findings), lines):.1f} per 100 KLOC", file=out)
    print("files not checked: " + (", ".join(f"{c} {n}" for c, n in sorted(errors.items())) or "none"), file=out)
    slow = sorted(((t, f"{r.repo.name}/{p}", n) for r in checked for t, p, n in r.slowest), reverse=True)[:5]
    if slow:
        print("slowest files: " + "; ".join(f"{p} ({n:,} lines) {t:.2f} s" for t, p, n in slow), file=out)

    by_rule: dict[str, Counter] = defaultdict(Counter)
    for f in all_findings:
        by_rule[f.code][f.verdict.verdict if f.verdict else "unclassified"] += 1
    total = Counter()
    print(f"\n{'rule':8} {'count':>5} {'true':>5} {'false':>5} {'debat':>5} {'unclas':>6} {'precision':>9}", file=out)
    for code in sorted(by_rule):
        c = by_rule[code]
        total.update(c)
        print(f"{code:8} {sum(c.values()):5} {c['true']:5} {c['false']:5} {c['debatable']:5} {c['unclassified']:6} "
              f"{precision(c['true'], c['false']):>9}", file=out)
    print(f"{'all':8} {sum(total.values()):5} {total['true']:5} {total['false']:5} {total['debatable']:5} "
          f"{total['unclassified']:6} {precision(total['true'], total['false']):>9}", file=out)

    mechanisms = Counter(f.verdict.mechanism or "(none)" for f in all_findings if f.verdict and f.verdict.verdict == "false")
    if mechanisms:
        print("\nfalse alarms by mechanism (see bench/field_review.md):", file=out)
        for m, n in mechanisms.most_common():
            print(f"  {n:4}  {m}  {legend.get(m, '')}", file=out)

    unclassified = [f for f in all_findings if f.verdict is None]
    if unclassified:
        print(f"\nunclassified ({len(unclassified)}): review rows to fill in", file=out)
        for f in unclassified:
            src = f.source.strip().replace("|", "\\|")
            print(f"| ? | {f.repo} | {f.path}:{f.line} | {f.code} | `{src}` |  |  |", file=out)

    return {
        "repositories": [{"repo": r.repo.name, "commit": r.repo.commit, "files": r.files, "lines": r.lines,
                          "seconds": round(r.seconds, 3), "missing": r.missing,
                          "errors": [{"path": p, "code": c, "message": m} for p, c, m in r.errors]}
                         for r in results],
        "lines": lines,
        "diagnostics": [{"repo": f.repo, "path": f.path, "line": f.line, "code": f.code, "message": f.message,
                         "source": f.source, "cell": f.cell,
                         "verdict": f.verdict.verdict if f.verdict else None,
                         "mechanism": f.verdict.mechanism if f.verdict else None} for f in all_findings],
        "per_100kloc": per_kloc(len(all_findings), lines),
        "by_rule": {k: dict(v) for k, v in by_rule.items()},
        "precision": (total["true"] / (total["true"] + total["false"])) if total["true"] + total["false"] else None,
    }


def compare(before: dict, after: dict) -> None:
    """Diagnostics gone and new between two runs, keyed like the review (line shifts do not count)."""
    def keyed(run):
        out = Counter()
        for d in run["diagnostics"]:
            out[(d["repo"], d["path"], d["code"], norm(d["source"]))] += 1
        return out
    old, new = keyed(before), keyed(after)
    verdicts = {(d["repo"], d["path"], d["code"], norm(d["source"])): d.get("verdict") or "?"
                for run in (before, after) for d in run["diagnostics"]}
    gone, added = old - new, new - old
    print(f"\n== compared with the earlier run: {sum(gone.values())} gone, {sum(added.values())} new")
    for title, keys in (("gone", gone), ("new", added)):
        by_verdict = Counter(verdicts[k] for k in keys.elements())
        print(f"{title}: " + (", ".join(f"{n} {v}" for v, n in sorted(by_verdict.items())) or "none"))
        for (repo, path, code, src) in sorted(keys.elements()):
            print(f"  [{verdicts[(repo, path, code, src)]}] {repo} {path} {code} > {src}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="?", type=Path, default=ROOT / ".cache" / "field",
                    help="folder with one owner+name folder per repository (default .cache/field)")
    ap.add_argument("--field", type=Path, default=FIELD_TXT, help="the list of repositories (bench/field.txt)")
    ap.add_argument("--review", type=Path, default=REVIEW_MD, help="the classification (bench/field_review.md)")
    ap.add_argument("--repo", action="append", help="only this repository (owner/name); repeatable")
    ap.add_argument("--json", type=Path, help="also write the results as JSON to this file")
    ap.add_argument("--compare", type=Path, metavar="JSON",
                    help="a --json file of an earlier run (another engine): list the diagnostics gone and new since")
    ap.add_argument("--brief", action="store_true", help="per repository figures and the summary only")
    ap.add_argument("--no-source", dest="source", action="store_false", help="do not print source lines")
    args = ap.parse_args()

    # The engine of this checkout unless PYTHONPATH names another (e.g. a branch's server/ folder).
    sys.path.append(str(ROOT / "server"))
    from devflow import api

    print(f"engine: {Path(api.__file__).resolve().parent}", file=sys.stdout)
    repos = read_field(args.field)
    if args.repo:
        repos = [r for r in repos if r.name in args.repo]
    if not args.checkouts.is_dir():
        raise SystemExit(f"no checkout folder {args.checkouts}: see bench/field_fetch.md")
    results = [check_repo(r, args.checkouts, api) for r in repos]
    data = report(results, read_review(args.review), read_mechanisms(args.review), args.source, args.brief)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1), encoding="utf-8")
    if args.compare:
        compare(json.loads(args.compare.read_text(encoding="utf-8")), data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
