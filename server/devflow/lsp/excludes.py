"""`devflow.exclude`: globs of files whose problems are not reported, with the VS Code client's
semantics (extension/src/settings.ts `isExcluded`): `*` within a path segment, `**` any segments,
`?` one character; matched against the path relative to the file's workspace folder, or absolute
(a glob starting with `/`); a glob without a slash matches any trailing part (`build` excludes
every build/ folder)."""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=256)
def _regex(glob: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**", i):
            i += 2
            if glob.startswith("/", i):
                out.append("(?:.*/)?")  # `**/` is zero or more folders
                i += 1
            else:
                out.append(".*")
            continue
        out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def is_excluded(file: str, folder: str | None, globs: tuple[str, ...] | list[str]) -> bool:
    if not globs:
        return False
    norm = lambda p: p.replace("\\", "/")  # noqa: E731
    absolute = norm(file)
    root = norm(folder).rstrip("/") if folder else None
    rel = absolute[len(root) + 1:] if root and absolute.startswith(root + "/") else None
    parts = (rel if rel is not None else absolute.lstrip("/")).split("/")
    for glob in globs:
        g = norm(glob).rstrip("/")
        rx = _regex(g)
        if g.startswith("/"):
            if rx.match(absolute) or rx.match(absolute + "/"):
                return True
        elif "/" not in g:
            if any(rx.match("/".join(parts[i:])) or rx.match(parts[i]) for i in range(len(parts))):
                return True
        elif rel is not None and (rx.match(rel) or any(rx.match("/".join(parts[:i + 1])) for i in range(len(parts)))):
            return True
    return False
