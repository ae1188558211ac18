"""`--format sarif`: SARIF 2.1.0 (the format GitHub code scanning and many IDEs import).

One run; `tool.driver.rules` lists every devflow rule (id, name, shortDescription, helpUri) plus
the pseudo-codes of files that could not be checked (E902, E999, E000), which are reported as
results too, so that a broken file is never silently skipped. Columns are code points
(`columnKind: unicodeCodePoints`) and 1-based; regions end exclusively, as SARIF specifies.
Paths under the current folder are relative to `%SRCROOT%` (given in `originalUriBaseIds`).
A notebook's regions are in the lines of its code cell, whose number is in `properties.cell`.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from devflow import __version__
from devflow.api import PSEUDO_CODES, CheckedFile
from devflow.model import Diagnostic, Span
from devflow.output import Location, Report, error_location, locate, message_of

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/devflow-dev/devflow"
_LEVELS = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}


def _rules() -> list[dict]:
    out = []
    try:
        from devflow.rules import RULES, doc_url
    except Exception:  # no rule table: results still carry their ruleId
        RULES, doc_url = {}, None
    for code, info in sorted(RULES.items()):
        rule = {"id": code, "name": getattr(info, "name", code),
                "shortDescription": {"text": getattr(info, "summary", code)},
                "helpUri": doc_url(code) if doc_url else INFORMATION_URI,
                "defaultConfiguration": {"level": _LEVELS.get(getattr(info, "severity", "error"), "error")},
                "properties": {"fix": getattr(info, "fix", None)}}
        family = None
        try:
            family = info.family
        except Exception:
            pass
        if family:
            rule["properties"]["family"] = family
            rule["fullDescription"] = {"text": f"{info.summary} ({family})"}
        out.append(rule)
    for code, text in PSEUDO_CODES.items():
        out.append({"id": code, "name": {"E000": "internal-error", "E902": "io-error", "E998": "newer-syntax", "E999": "syntax-error"}[code],
                    "shortDescription": {"text": text}, "helpUri": INFORMATION_URI,
                    "defaultConfiguration": {"level": "error"}})
    return out


def _artifact(path: str) -> dict:
    p = Path(path)
    absolute = p.resolve()
    try:
        rel = absolute.relative_to(Path.cwd().resolve())
        return {"uri": quote(rel.as_posix()), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        return {"uri": absolute.as_uri()}


def _region(loc: Location) -> dict:
    return {"startLine": loc.line, "startColumn": loc.column, "endLine": loc.end_line, "endColumn": loc.end_column}


def _physical(file: CheckedFile, span: Span) -> tuple[dict, int | None]:
    loc = locate(file, span)
    return {"artifactLocation": _artifact(file.path), "region": _region(loc)}, loc.cell


def _result(file: CheckedFile, d: Diagnostic, index: dict[str, int]) -> dict:
    physical, cell = _physical(file, d.span)
    result = {
        "ruleId": d.code,
        "level": _LEVELS.get(d.severity, "warning"),
        "message": {"text": message_of(file, d.message)},
        "locations": [{"physicalLocation": physical}],
    }
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    if d.related:
        result["relatedLocations"] = [
            {"id": i, "physicalLocation": _physical(file, r.span)[0], "message": {"text": message_of(file, r.message)}}
            for i, r in enumerate(d.related)
        ]
    if d.fix is not None:
        result["fixes"] = [{
            "description": {"text": f"{message_of(file, d.fix.title)} ({d.fix.applicability})"},
            "artifactChanges": [{
                "artifactLocation": _artifact(file.path),
                "replacements": [{"deletedRegion": _region(locate(file, e.span)),
                                  "insertedContent": {"text": e.new_text}} for e in d.fix.edits],
            }],
        }]
    props = {}
    if cell is not None:
        props["cell"] = cell
    if d.fix is not None:
        props["fixApplicability"] = d.fix.applicability
    if props:
        result["properties"] = props
    return result


def _error_result(file: CheckedFile, index: dict[str, int]) -> dict:
    code = file.error_code or "E902"
    loc = error_location(file)
    result = {
        "ruleId": code,
        "ruleIndex": index[code],
        "level": "error",
        "message": {"text": message_of(file, file.result.error or PSEUDO_CODES[code])},
        "locations": [{"physicalLocation": {"artifactLocation": _artifact(file.path), "region": _region(loc)}}],
    }
    if loc.cell is not None:
        result["properties"] = {"cell": loc.cell}
    return result


def sarif_document(report: Report) -> dict:
    rules = _rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = [_error_result(f, index) for f in report.errors()]
    results += [_result(f, d, index) for f, d in report.findings()]
    notifications = [
        {"level": "warning", "message": {"text": f"{f.path}: {note}"}}
        for f in report.files for note in (*f.notes, *f.result.rule_errors)
    ]
    cwd = Path.cwd().resolve().as_uri()
    invocation = {"executionSuccessful": True}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "devflow", "version": __version__, "semanticVersion": __version__,
                                "informationUri": INFORMATION_URI, "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": cwd if cwd.endswith("/") else cwd + "/"}},
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation],
            "results": results,
        }],
    }


def render_sarif(report: Report) -> str:
    return json.dumps(sarif_document(report), indent=2, ensure_ascii=False) + "\n"
