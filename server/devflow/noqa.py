"""`# noqa` suppressions, as in flake8 / ruff.

- `x = y  # noqa: DEV101` or `# noqa: DEV101, DEV203` (commas and/or spaces; `# noqa:DEV101`
  works too) suppresses those codes on that line; a prefix (`# noqa: DEV1`) suppresses a family.
- A bare `# noqa` suppresses every code on its line.
- `# devflow: noqa` on a line of its own suppresses the whole file; `# devflow: noqa: DEV6`
  only those codes in the whole file.

A diagnostic is matched on its *first* line (where the editor and the CLI show it). Comments are
found with `tokenize`, so a "# noqa" inside a string is not a suppression.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from devflow.lines import normalize, split_lines
from devflow.model import Diagnostic

_NOQA = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"^#\s*devflow\s*:\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$",
                        re.IGNORECASE)
ALL = frozenset({"*"})


def _codes(text: str | None) -> frozenset[str]:
    if not text:
        return ALL
    return frozenset(c.upper() for c in re.split(r"[\s,]+", text) if c)


@dataclass
class Suppressions:
    by_line: dict[int, frozenset[str]] = field(default_factory=dict)
    whole_file: frozenset[str] = frozenset()

    def suppresses(self, diagnostic: Diagnostic) -> bool:
        return self._hit(self.whole_file, diagnostic.code) or self._hit(
            self.by_line.get(diagnostic.span.line, frozenset()), diagnostic.code)

    @staticmethod
    def _hit(codes: frozenset[str], code: str) -> bool:
        return codes is ALL or "*" in codes or any(code.startswith(c) for c in codes)


def _comments(source: str):
    """(line, text) of every comment; falls back to a line scan when tokenize gives up."""
    source = normalize(source)  # StringIO.readline breaks only at "\n"; Python also at "\r"
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
        return
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for n, line in enumerate(split_lines(source), 1):
        i = line.find("#")
        if i >= 0:
            yield n, line[i:]


def parse(source: str) -> Suppressions:
    out = Suppressions()
    if "noqa" not in source.lower():  # the common case: nothing to tokenize
        return out
    whole: set[str] = set()
    for line, text in _comments(source):
        m = _FILE_NOQA.match(text)
        if m:
            whole |= _codes(m.group("codes"))
            continue
        m = _NOQA.search(text)
        if m:
            out.by_line[line] = out.by_line.get(line, frozenset()) | _codes(m.group("codes"))
    out.whole_file = frozenset(whole)
    return out


def filter_diagnostics(source: str, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """`diagnostics` less the suppressed ones (tokenizes only when a noqa comment may exist)."""
    if not diagnostics:
        return diagnostics
    sup = parse(source)
    if not sup.by_line and not sup.whole_file:
        return diagnostics
    return [d for d in diagnostics if not sup.suppresses(d)]
