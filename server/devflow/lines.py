"""Python's line model, shared by the engine, the fixes, noqa, notebooks and the language server.

Python (and the LSP) break lines only at `\\n`, `\\r\\n` and `\\r`. `str.splitlines()` also breaks
at `\\x0b`, `\\x0c`, `\\x1c`-`\\x1e`, `\\x85`, U+2028 and U+2029, which are ordinary characters
inside a Python comment or string (and `\\x0c` is whitespace): using it shifts every line number
below such a character. Use these helpers instead.
"""

from __future__ import annotations

import re
from itertools import accumulate

LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Where str.splitlines() breaks and Python does not. Without these (nearly every file), and for
# "\n"-only files, the C string methods give the same answer as LINE_BREAK: the fast paths below.
_SPLITLINES_ONLY = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(source: str) -> list[str]:
    """The lines of `source` without their breaks; a trailing break gives a last empty line, so
    line n (1-based) is `split_lines(source)[n - 1]` for every line an LSP client can address."""
    return source.split("\n") if "\r" not in source else LINE_BREAK.split(source)


def lines_with_ends(source: str) -> list[str]:
    """The lines of `source` with their breaks (`"".join(...) == source`); no empty last line."""
    if _SPLITLINES_ONLY.search(source) is None:
        return source.splitlines(keepends=True)
    out: list[str] = []
    start = 0
    for m in LINE_BREAK.finditer(source):
        out.append(source[start:m.end()])
        start = m.end()
    if start < len(source):
        out.append(source[start:])
    return out


def line_starts(source: str) -> list[int]:
    """String index where each line begins (line n at index n - 1)."""
    if "\r" not in source:
        return [0, *accumulate(len(line) + 1 for line in source.split("\n")[:-1])]
    return [0] + [m.end() for m in LINE_BREAK.finditer(source)]


def line_count(source: str) -> int:
    """How many lines an editor shows for `source` (a trailing break opens one more)."""
    if "\r" not in source:
        return source.count("\n") + 1
    return len(LINE_BREAK.findall(source)) + 1


def line_ending(source: str) -> str:
    """The file's line ending: its first line break, `\\n` for a file without one."""
    m = LINE_BREAK.search(source)
    return m.group() if m else "\n"


def normalize(source: str) -> str:
    """`source` with every line break as `\\n` (same line numbers and columns), for tools such as
    `tokenize` over `io.StringIO` that break only at `\\n`."""
    return LINE_BREAK.sub("\n", source) if "\r" in source else source

