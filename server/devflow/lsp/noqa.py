"""The edit behind "Ignore DEVnnn on this line": add `# noqa: DEVnnn`, or merge the code into
the line's existing `# noqa: ...` list."""

from __future__ import annotations

import re

from devflow.model import Edit, Span

_NOQA = re.compile(r"#\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,\s*[A-Za-z]+[0-9]+|\s+[A-Za-z]+[0-9]+)*))?", re.I)


def noqa_edit(line_text: str, line: int, code: str) -> Edit | None:
    """The edit on 1-based `line` (whose text is `line_text`) that silences `code` there; None
    when the line already has a bare `# noqa` or lists the code."""
    m = _NOQA.search(line_text)
    if m and m.group("codes") is None:
        return None  # a bare `# noqa` silences everything already
    if m:
        codes = re.split(r"[\s,]+", m.group("codes").strip())
        if code.upper() in (c.upper() for c in codes):
            return None
        end = m.end("codes")
        return Edit(Span(line, end, line, end), f", {code}")
    stripped = line_text.rstrip()
    end = len(stripped)
    # Replace trailing blanks so the result has exactly two spaces before the comment.
    return Edit(Span(line, end, line, len(line_text)), f"  # noqa: {code}" if stripped else f"# noqa: {code}")
