"""`--format json`: one object with `diagnostics`, `errors` (files that could not be checked),
`files_checked` and a `summary`.

Each diagnostic: path, line, column, end_line, end_column (1-based columns), cell (1-based code
cell for a notebook, else null), code, severity, message, url (the rule's doc page), related
(each with the same position fields and a message), fix (null or {applicability, title, edits}
with edits in the same coordinates plus `new_text`).
"""

from __future__ import annotations

import json

from devflow import __version__
from devflow.api import PSEUDO_CODES, CheckedFile
from devflow.model import Diagnostic, Span
from devflow.output import Report, error_location, locate, message_of


def _rule_url(code: str) -> str | None:
    try:
        from devflow.rules import RULES, doc_url
    except Exception:
        return None
    return doc_url(code) if code in RULES else None


def _position(file: CheckedFile, span: Span) -> dict:
    loc = locate(file, span)
    return {"line": loc.line, "column": loc.column, "end_line": loc.end_line, "end_column": loc.end_column,
            "cell": loc.cell}


def diagnostic_json(file: CheckedFile, d: Diagnostic) -> dict:
    out = {"path": file.path, **_position(file, d.span), "code": d.code, "severity": d.severity,
           "message": message_of(file, d.message), "url": _rule_url(d.code),
           "related": [{**_position(file, r.span), "message": message_of(file, r.message)} for r in d.related],
           "fix": None}
    if d.fix is not None:
        out["fix"] = {
            "applicability": d.fix.applicability,
            "title": message_of(file, d.fix.title),
            "edits": [{**_position(file, e.span), "new_text": e.new_text} for e in d.fix.edits],
        }
    return out


def error_json(file: CheckedFile) -> dict:
    loc = error_location(file)
    code = file.error_code or "E902"
    return {"path": file.path, "line": loc.line, "column": loc.column, "end_line": loc.end_line,
            "end_column": loc.end_column, "cell": loc.cell, "code": code, "severity": "error",
            "message": message_of(file, file.result.error or ""), "description": PSEUDO_CODES.get(code), "fix": None}


def render_json(report: Report) -> str:
    doc = {
        "tool": "devflow",
        "version": __version__,
        "files_checked": report.files_checked,
        "diagnostics": [diagnostic_json(f, d) for f, d in report.findings()],
        "errors": [error_json(f) for f in report.errors()],
        "summary": {
            "diagnostics": len(report.findings()),
            "errors": len(report.errors()),
            "fixed": report.fixed,
            "fixed_by_file": {f.path: list(f.fixed_codes) for f in report.files if f.fixed_codes},
            "fixable": report.fixable(report.unsafe_fixes),
            "notes": [{"path": f.path, "message": n} for f in report.files for n in f.notes],
        },
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
