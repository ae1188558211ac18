"""Code actions: a quick fix per diagnostic (preferred when the fix is safe), "Ignore DEVnnn on
this line", and `source.fixAll.devflow` applying every safe fix at once."""

from __future__ import annotations

from lsprotocol import types

from devflow.edits import overlaps
from devflow.lsp.analysis import Analysis
from devflow.lsp.diagnostics import SOURCE
from devflow.lsp.documents import Snapshot
from devflow.lsp.noqa import noqa_edit
from devflow.model import Diagnostic, Edit

FIX_ALL = "source.fixAll.devflow"


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def workspace_edit(snapshot: Snapshot, edits: list[Edit], encoding: str, document_changes: bool) -> types.WorkspaceEdit | None:
    """A WorkspaceEdit for devflow edits (None if one of them crosses notebook cells)."""
    by_uri: dict[str, list[types.TextEdit]] = {}
    for e in edits:
        loc = snapshot.location(e.span, encoding)
        if loc is None:
            return None
        by_uri.setdefault(loc[0], []).append(types.TextEdit(range=loc[1], new_text=e.new_text))
    if document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=snapshot.version_of(uri)),
                    edits=text_edits,
                )
                for uri, text_edits in by_uri.items()
            ]
        )
    return types.WorkspaceEdit(changes=by_uri)


def _match(analysis: Analysis, uri: str, lsp_diag: types.Diagnostic, encoding: str) -> Diagnostic | None:
    """The devflow finding a client's diagnostic stands for."""
    if lsp_diag.source != SOURCE or not lsp_diag.code:
        return None
    found = analysis.result.diagnostics
    data = lsp_diag.data if isinstance(lsp_diag.data, dict) else {}
    index = data.get("index")
    if data.get("version") == analysis.snapshot.version and isinstance(index, int) and 0 <= index < len(found):
        if found[index].code == lsp_diag.code:
            return found[index]
    start = analysis.snapshot.to_snapshot(uri, lsp_diag.range.start, encoding)
    for d in found:
        if d.code == lsp_diag.code and start == (d.span.line, d.span.col):
            return d
    return None


def _in_range(analysis: Analysis, uri: str, rng: types.Range, encoding: str) -> list[Diagnostic]:
    snap = analysis.snapshot
    out = []
    for d in analysis.result.diagnostics:
        loc = snap.location(d.span, encoding)
        if loc and loc[0] == uri:
            r = loc[1]
            if (r.start.line, r.start.character) <= (rng.end.line, rng.end.character) and (rng.start.line, rng.start.character) <= (r.end.line, r.end.character):
                out.append(d)
    return out


def fix_all_edits(diagnostics: list[Diagnostic]) -> list[Edit]:
    """The edits of every safe fix, leaving out a fix that would overlap one already taken."""
    chosen: list[Edit] = []
    for d in sorted(diagnostics, key=lambda d: d.span):
        if not d.fix or d.fix.applicability != "safe":
            continue
        if any(overlaps(e.span, c.span) or e.span == c.span for e in d.fix.edits for c in chosen):
            continue
        chosen.extend(d.fix.edits)
    return chosen


def code_actions(
    analysis: Analysis, params: types.CodeActionParams, encoding: str, document_changes: bool
) -> list[types.CodeAction]:
    uri = params.text_document.uri
    only = list(params.context.only) if params.context.only else None
    snap = analysis.snapshot
    if params.context.diagnostics:
        pairs = [(ld, _match(analysis, uri, ld, encoding)) for ld in params.context.diagnostics]
        targets = [(ld, d) for ld, d in pairs if d is not None]
    else:  # clients that send no context: the findings under the cursor
        targets = [(None, d) for d in _in_range(analysis, uri, params.range, encoding)]

    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        for lsp_diag, d in targets:
            related = [lsp_diag] if lsp_diag else None
            if d.fix:
                edit = workspace_edit(snap, list(d.fix.edits), encoding, document_changes)
                if edit:
                    safe = d.fix.applicability == "safe"
                    actions.append(types.CodeAction(
                        title=d.fix.title if safe else f"{d.fix.title} (unsafe: review the change)",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=related,
                        is_preferred=safe,
                        edit=edit,
                    ))
        seen: set[tuple[int, str]] = set()
        for lsp_diag, d in targets:
            if (d.span.line, d.code) in seen or d.span.line > len(snap.lines):
                continue
            seen.add((d.span.line, d.code))
            e = noqa_edit(snap.lines[d.span.line - 1], d.span.line, d.code)
            edit = workspace_edit(snap, [e], encoding, document_changes) if e else None
            if edit:
                actions.append(types.CodeAction(
                    title=f"Ignore {d.code} on this line",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diag] if lsp_diag else None,
                    edit=edit,
                ))
    if only and _wanted(FIX_ALL, only) or (not only and any(d.fix and d.fix.applicability == "safe" for _, d in targets)):
        fix_all = fix_all_action(analysis, encoding, document_changes)
        if fix_all:
            actions.append(fix_all)
    return actions


def fix_all_action(analysis: Analysis, encoding: str, document_changes: bool) -> types.CodeAction | None:
    edits = fix_all_edits(analysis.result.diagnostics)
    if not edits:
        return None
    edit = workspace_edit(analysis.snapshot, edits, encoding, document_changes)
    if edit is None:
        return None
    return types.CodeAction(title="devflow: fix all safe device issues", kind=FIX_ALL, edit=edit)
