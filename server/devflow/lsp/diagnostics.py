"""devflow findings as LSP diagnostics, grouped by the document they land on."""

from __future__ import annotations

import logging

from lsprotocol import types

from devflow.lsp.analysis import Analysis
from devflow.lsp.settings import Settings
from devflow.model import Diagnostic, Span

log = logging.getLogger("devflow.lsp")
SOURCE = "devflow"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def error_code(result) -> str:
    """The CLI's pseudo-code of a file-level problem (E999 syntax, E902 unreadable, E000 internal)."""
    code = getattr(result, "error_code", None)
    if code:
        return code
    try:
        from devflow.api import error_code as api_error_code
        return api_error_code(result) or "E999"
    except Exception:
        return "E999"


PARTIAL = "partial"  # the code of the "checked in part" notice (not a rule: nothing to fix)


def partial_message(settings: Settings) -> str:
    budget = f"{settings.time_budget_ms / 1000:g} s" if settings.time_budget_ms else "none"
    return (f"devflow checked this file only in part: its analysis reached the time budget per file "
            f"({budget}), so later code and some rules were not checked and findings may be missing. "
            f"Raise the devflow.timeBudgetMs setting, or run `devflow check` on the command line "
            f"(no time budget).")


def doc_url(code: str) -> str | None:
    try:
        from devflow.rules import doc_url as rule_doc_url
    except ImportError:
        return None
    try:
        return rule_doc_url(code)
    except Exception:
        return None


def to_lsp(analysis: Analysis, settings: Settings, encoding: str) -> dict[str, list[types.Diagnostic]]:
    """Diagnostics per document uri (every document of the snapshot gets a list, maybe empty)."""
    snap = analysis.snapshot
    out: dict[str, list[types.Diagnostic]] = {uri: [] for uri in snap.doc_uris()}
    if not settings.enable:
        return out
    result = analysis.result
    if result.error:
        span = result.error_span or Span(1, 0, 1, 0)
        loc = snap.location(span, encoding) or snap.location(Span(1, 0, 1, 0), encoding)
        if loc:
            out.setdefault(loc[0], []).append(
                types.Diagnostic(
                    range=loc[1],
                    message=f"devflow skipped this file: {result.error}",
                    severity=types.DiagnosticSeverity.Information,
                    code=error_code(result),
                    source=SOURCE,
                )
            )
    if getattr(result, "partial", False) and not result.error:
        loc = snap.location(Span(1, 0, 1, 0), encoding)
        if loc:
            out.setdefault(loc[0], []).append(types.Diagnostic(
                range=loc[1], message=partial_message(settings),
                severity=types.DiagnosticSeverity.Information, code=PARTIAL, source=SOURCE))
    for index, d in enumerate(result.diagnostics):
        converted = _convert(d, index, analysis, settings, encoding)
        if converted:
            out.setdefault(converted[0], []).append(converted[1])
    return out


def _convert(d: Diagnostic, index: int, analysis: Analysis, settings: Settings, encoding: str):
    snap = analysis.snapshot
    loc = snap.location(d.span, encoding)
    if loc is None:
        log.debug("devflow: %s at line %d spans two cells; reported on its first line", d.code, d.span.line)
        loc = snap.location(Span(d.span.line, d.span.col, d.span.line, 10**9), encoding)
        if loc is None:
            return None
    uri, rng = loc
    related = []
    for r in d.related:
        rloc = snap.location(r.span, encoding)
        if rloc:
            related.append(types.DiagnosticRelatedInformation(types.Location(rloc[0], rloc[1]), r.message))
    url = doc_url(d.code)
    return uri, types.Diagnostic(
        range=rng,
        message=d.message,
        severity=_SEVERITY.get(settings.severity_of(d.code, d.severity), types.DiagnosticSeverity.Error),
        code=d.code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        related_information=related or None,
        # Lets a code action find the finding (and its fix) this diagnostic came from.
        data={"index": index, "version": snap.version, "fix": d.fix.applicability if d.fix else None},
    )


def count(diagnostics: dict[str, list[types.Diagnostic]]) -> int:
    return sum(len(v) for v in diagnostics.values())
