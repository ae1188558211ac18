"""Hover (a name's inferred device and why) and inlay hints (the device after an assignment),
from the engine's DeviceHints."""

from __future__ import annotations

from lsprotocol import types

from devflow.lsp.analysis import Analysis
from devflow.model import DeviceHint


def _contains(h: DeviceHint, line: int, col: int) -> bool:
    return (h.span.line, h.span.col) <= (line, col) <= (h.span.end_line, h.span.end_col)


def hint_at(analysis: Analysis, uri: str, position: types.Position, encoding: str) -> DeviceHint | None:
    """The innermost hint whose span holds the position."""
    where = analysis.snapshot.to_snapshot(uri, position, encoding)
    if where is None:
        return None
    found = [h for h in analysis.result.hints if _contains(h, *where)]
    if not found:
        return None
    return min(found, key=lambda h: ((h.span.end_line - h.span.line), h.span.end_col - h.span.col))


def hover(analysis: Analysis, uri: str, position: types.Position, encoding: str, markdown: bool) -> types.Hover | None:
    h = hint_at(analysis, uri, position, encoding)
    if h is None:
        return None
    loc = analysis.snapshot.location(h.span, encoding)
    if markdown:
        text = f"**devflow** · `{h.name}` ({h.kind}) is on **{h.device}**"
        if h.reason:
            text += f"\n\n{h.reason}"
        content = types.MarkupContent(kind=types.MarkupKind.Markdown, value=text)
    else:
        text = f"devflow: {h.name} ({h.kind}) is on {h.device}" + (f"\n{h.reason}" if h.reason else "")
        content = types.MarkupContent(kind=types.MarkupKind.PlainText, value=text.replace("`", ""))
    return types.Hover(contents=content, range=loc[1] if loc and loc[0] == uri else None)


def inlay_hints(analysis: Analysis, uri: str, rng: types.Range, encoding: str) -> list[types.InlayHint]:
    out = []
    for h in analysis.result.hints:
        if not h.is_assignment:
            continue
        loc = analysis.snapshot.location(h.span, encoding)
        if loc is None or loc[0] != uri:
            continue
        end = loc[1].end
        if not (rng.start.line <= end.line <= rng.end.line):
            continue
        out.append(types.InlayHint(
            position=end,
            label=f": {h.device.replace('`', '')}",
            kind=types.InlayHintKind.Type,
            padding_left=False,
            tooltip=h.reason or None,
        ))
    return out
