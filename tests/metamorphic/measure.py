"""Run the engine on every variant and compare with the unrewritten case.

- recall: a diagnostic on a moved bug line (any line of the statement the bug line was in, or of a
  call site the rewrite put in its place) of a rewritten buggy variant;
- agreement: the rewritten buggy variant is hit exactly when the unrewritten one is (the same span
  criterion on the original file);
- fixed: diagnostics on rewritten fixed variants (any file of the variant's project).

Each variant is written to a temporary folder and every project file is checked with
`devflow.api.check_path`, as the CLI does, so an engine that resolves imports from the files next to
the checked file sees the split modules.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

from .project import Project, Rendered, original_spans, render
from . import fixtures as fixture_source
from .rewrite import REWRITES, case_dirs, load, variant


def _check(files: dict[str, str], project: set[str]) -> dict[str, list[tuple[str, int]]]:
    from devflow import api

    out = {}
    with tempfile.TemporaryDirectory(prefix="devflow-mm-") as tmp:
        for name, text in files.items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / name).write_text(text)
        for name in sorted(project):
            res = api.check_path(str(Path(tmp) / name))
            out[name] = [(d.code, d.span.line) for d in res.diagnostics]
    return out


def _hit(diags: dict[str, list[tuple[str, int]]], spans: dict[str, list[tuple[str, int, int]]]) -> bool:
    for places in spans.values():
        for f, lo, hi in places:
            if any(lo <= line <= hi for _, line in diags.get(f, ())):
                return True
    return False


def _original(proj: Project) -> tuple[dict, dict]:
    files = {name: ast_text for name, ast_text in _source_files(proj).items()}
    diags = _check(files, set(proj.trees))
    return diags, original_spans(proj)


def _source_files(proj: Project) -> dict[str, str]:
    return {**proj.sources, **proj.extras, **proj.data}


def evaluate(shared: Path | None, kinds: list[str] | None = None, cases: list[str] | None = None,
             fixtures: Path | None = None) -> dict:
    """The public corpus cases under `shared`, or (`fixtures`) the engine fixture projects of a folder."""
    kinds = kinds or list(REWRITES)
    rows = []
    dirs = fixture_source.case_dirs(fixtures) if fixtures else case_dirs(shared)
    loader = fixture_source.load if fixtures else load
    for d in dirs:
        if cases and d.name not in cases:
            continue
        silent = bool(fixtures) and fixture_source.is_silent(d)
        buggy, fixed = (None if silent else loader(d, "buggy")), loader(d, "fixed")
        base_hit = None
        if buggy is not None:
            base_diags, base_spans = _original(buggy)
            base_hit = _hit(base_diags, base_spans)
        for kind in kinds:
            row = {"case": d.name, "kind": kind, "base_hit": base_hit}
            vb = variant(d, kind, "buggy", buggy) if buggy is not None else None
            row["skipped"] = vb.skipped if vb else "silent case: no buggy variant"
            if vb is not None and vb.rendered is not None:
                diags = _check(vb.rendered.files, set(vb.rendered.files) - set(buggy.extras))
                row["hit"] = _hit(diags, vb.rendered.spans)
                row["reported"] = {f: [f"{c}:{ln}" for c, ln in v] for f, v in diags.items() if v}
            vf = variant(d, kind, "fixed", fixed)
            row["fixed_skipped"] = vf.skipped
            if vf.rendered is not None:
                diags = _check(vf.rendered.files, set(vf.rendered.files) - set(fixed.extras))
                row["fixed_diagnostics"] = [f"{f}:{c}:{ln}" for f, v in diags.items() for c, ln in v]
            rows.append(row)
    return summarize(rows)


def summarize(rows: list[dict]) -> dict:
    per = defaultdict(list)
    for r in rows:
        per[r["kind"]].append(r)
        if r["kind"] != "identity":
            per["all rewrites"].append(r)
    table = {}
    for kind, rs in sorted(per.items(), key=lambda kv: kv[0] == "all rewrites"):
        applied = [r for r in rs if "hit" in r]
        fixed = [r for r in rs if "fixed_diagnostics" in r]
        table[kind] = {
            "cases": len(rs),
            "applied": len(applied),
            "skipped": len(rs) - len(applied),
            "recall": sum(r["hit"] for r in applied) / len(applied) if applied else None,
            "base_recall": sum(r["base_hit"] for r in applied) / len(applied) if applied else None,
            "agreement": sum(r["hit"] == r["base_hit"] for r in applied) / len(applied) if applied else None,
            "fixed_applied": len(fixed),
            "fixed_noisy": sum(bool(r["fixed_diagnostics"]) for r in fixed),
            "fixed_diagnostics": sum(len(r["fixed_diagnostics"]) for r in fixed),
        }
    return {"table": table, "rows": rows}


def report(res: dict) -> str:
    pct = lambda x: "-" if x is None else f"{x:6.1%}"  # noqa: E731
    out = [f"{'rewrite':14} {'applied':>8} {'skipped':>8} {'recall':>7} {'unrewr.':>7} {'agree':>7} "
           f"{'fixed':>6} {'fixedFP':>8} {'diags':>6}"]
    for kind, t in res["table"].items():
        out.append(f"{kind:14} {t['applied']:>8} {t['skipped']:>8} {pct(t['recall']):>7} {pct(t['base_recall']):>7} "
                   f"{pct(t['agreement']):>7} {t['fixed_applied']:>6} {t['fixed_noisy']:>8} {t['fixed_diagnostics']:>6}")
    out.append("recall: hit on a moved bug line; unrewr.: the same cases unrewritten; agree: same result per pair; "
               "fixedFP: rewritten fixed variants with a diagnostic (diags: their count)")
    return "\n".join(out)
