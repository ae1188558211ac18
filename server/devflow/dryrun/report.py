"""The dry run's report: text (as `devflow check`), json, sarif. A finding whose line (or one of
its operands' origin lines) carries a static diagnostic gets that rule's explanation and fix."""

from __future__ import annotations

import json
import os

from devflow import __version__

_STATES = {
    "finished": "the script ran to its end",
    "exit": "the script exited with status {exit_code}",
    "stopped": "stopped early ({reason})",
    "timeout": "stopped early ({reason})",
    "error": "the script ended early with {exception} at {where}",
    "interrupted": "interrupted",
    "crashed": "the run crashed (exit status {exit_code}) before it could report",
}


def attach_static(findings: list[dict]) -> None:
    from devflow.engine import analyze

    by_path: dict[str, list] = {}
    for f in findings:
        lines = {f["line"]} | {o["line"] for op in f.get("operands", []) for o in op.get("origins", [])
                               if o["path"] == f["path"]}
        for path in {f["path"]} | {o["path"] for op in f.get("operands", []) for o in op.get("origins", [])}:
            if path not in by_path and os.path.isfile(path):
                try:
                    with open(path, encoding="utf-8") as fh:
                        by_path[path] = analyze(fh.read(), path).diagnostics
                except (OSError, UnicodeDecodeError):
                    by_path[path] = []
        diags = by_path.get(f["path"], [])
        same_line = [d for d in diags if d.span.line == f["line"]]
        related = [d for d in diags if d.span.line in lines]
        chosen = same_line or related
        if not chosen:
            for op in f.get("operands", []):
                for o in op.get("origins", []):
                    chosen += [d for d in by_path.get(o["path"], []) if d.span.line == o["line"]]
        if chosen:
            d = chosen[0]
            f["static"] = {"code": d.code, "message": d.message, "line": d.span.line,
                           "fix": None if d.fix is None else {
                               "title": d.fix.title, "applicability": d.fix.applicability,
                               "edits": [{"line": e.span.line, "column": e.span.col + 1, "end_line": e.span.end_line,
                                          "end_column": e.span.end_col + 1, "new_text": e.new_text}
                                         for e in d.fix.edits]}}


def related(f: dict) -> list[dict]:
    """Where each operand got its device (the newest creation / load / move, with the user's calls
    that led there, and the first creation), then the user's calls that led to the op."""
    out = []
    seen = set()

    def add(path, line, message):
        if (path, line, message) not in seen:
            seen.add((path, line, message))
            out.append({"path": path, "line": line, "message": message})

    for op in f.get("operands", []):
        origins = op.get("origins", [])
        if not origins:
            continue
        o = origins[0]
        if o["kind"] == "moved":
            add(o["path"], o["line"], f"{op['name']} last moved here (to {op['device']})")
        elif o["kind"] == "default device":
            add(o["path"], o["line"], f"the default device ({op['device']}) set here")
        elif o["kind"] == "loaded":
            add(o["path"], o["line"], f"{op['name']} loaded here on {op['device']}")
        else:
            add(o["path"], o["line"], f"{op['name']} created here on {op['device']}")
        for c in o.get("callers", []):
            add(c["path"], c["line"], f"{op['name']}: called from here")
        if len(origins) > 1 and origins[-1]["kind"] == "created":
            first = origins[-1]
            add(first["path"], first["line"], f"{op['name']} first created here")
            for c in first.get("callers", []):
                add(c["path"], c["line"], f"{op['name']} (first created): called from here")
    for note in f.get("notes", []):  # the finding's own places (where a DataParallel was built)
        add(note["path"], note["line"], note["message"])
    for frame in f.get("stack", [])[1:4]:
        add(frame["path"], frame["line"], f"the op ran in the call from here ({frame['function']})")
    return out


def _status_line(status: dict) -> str:
    state = status.get("state", "finished")
    where = f"{status.get('path', '?')}:{status.get('line', '?')}"
    text = _STATES.get(state, state).format(exit_code=status.get("exit_code", "?"), reason=status.get("reason", ""),
                                            exception=status.get("exception", "?"), where=where)
    steps = status.get("steps", 0)
    skipped = status.get("skipped_steps", 0)
    more = f" ({skipped} more skipped past --max-steps)" if skipped else ""
    return f"{text}; {steps} optimizer step{'' if steps == 1 else 's'}{more}, {status.get('elapsed_s', 0):.1f} s"


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
        return rel if not rel.startswith("..") else path
    except ValueError:
        return path


def render(result: dict, fmt: str, target: str = "") -> str:
    findings = sorted(result["findings"], key=lambda f: (f["path"], f["line"], f["code"]))
    status = result.get("status", {})
    if fmt == "json":
        return json.dumps(_json(findings, status), indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(_sarif(findings, status), indent=2) + "\n"
    lines = []
    for f in findings:
        count = f" (x{f['count']})" if f["count"] > 1 else ""
        lines.append(f"{_rel(f['path'])}:{f['line']}:1: {f['code']} {f['message']}{count}")
        if f.get("op") and f["op"] not in ("", None):
            lines.append(f"    in {f['op']}")
        for r in related(f):
            lines.append(f"    {_rel(r['path'])}:{r['line']}: {r['message']}")
        st = f.get("static")
        if st:
            fix = f"; fix: {st['fix']['title']}" if st.get("fix") else ""
            lines.append(f"    static rule {st['code']} (line {st['line']}): {st['message']}{fix}")
    n = len(findings)
    lines.append(f"devflow dryrun {target}: {_status_line(status)}")
    lines.append(f"Found {n} device mix{'es' if n != 1 else ''}." if n else "No device mix found.")
    return "".join(line + "\n" for line in lines)


def _url(code: str) -> str | None:
    try:
        from devflow.rules import doc_url
        return doc_url(code)
    except Exception:  # noqa: BLE001
        return None


def _json(findings: list[dict], status: dict) -> dict:
    diags = []
    for f in findings:
        diags.append({
            "path": f["path"], "line": f["line"], "column": 1, "end_line": f["line"], "end_column": None,
            "code": f["code"], "severity": f.get("severity", "error"), "message": f["message"], "url": _url(f["code"]),
            "count": f["count"], "op": f.get("op"), "operands": f.get("operands", []), "stack": f.get("stack", []),
            "related": [{"path": r["path"], "line": r["line"], "column": 1, "message": r["message"]}
                        for r in related(f)],
            "static": f.get("static"),
            "fix": (f.get("static") or {}).get("fix"),
        })
    return {"tool": "devflow-dryrun", "version": __version__, "status": status, "diagnostics": diags,
            "summary": {"findings": len(diags), "events": sum(f["count"] for f in findings)}}


def _sarif(findings: list[dict], status: dict) -> dict:
    from devflow.dryrun.recorder import KINDS

    def loc(path, line):
        return {"physicalLocation": {"artifactLocation": {"uri": _uri(path)}, "region": {"startLine": line}}}

    results = []
    for f in findings:
        results.append({
            "ruleId": f["code"], "level": "warning" if f.get("severity") == "warning" else "error",
            "message": {"text": f["message"] + (f" (x{f['count']})" if f["count"] > 1 else "")},
            "locations": [loc(f["path"], f["line"])],
            "relatedLocations": [{**loc(r["path"], r["line"]), "message": {"text": r["message"]}}
                                 for r in related(f)],
            "properties": {"count": f["count"], "op": f.get("op"), "static": f.get("static")},
        })
    rules = [{"id": code, "shortDescription": {"text": text}, "helpUri": _url(code)} for code, text in KINDS.items()]
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "devflow-dryrun", "version": __version__, "rules": rules}},
                      "results": results, "invocations": [{"executionSuccessful": status.get("state") != "crashed",
                                                           "properties": status}]}]}


def _uri(path: str) -> str:
    from pathlib import Path
    try:
        return Path(path).resolve().as_uri()
    except ValueError:
        return path
