"""The program: the project files a checked file imports, resolved, parsed once and cached.

`from models import Net`, `import utils`, `from .layers import Block` and packages resolve to files
under the project's roots (the checked file's directory, the directory above its top package, and
any root the caller adds, such as the editor's workspace folder). A resolved file is parsed and
indexed once per content (cache key: path, size, mtime) and never imported or executed; the
interpreter runs its module body abstractly the first time a run needs it (`interp.units`).

Each project file's syntax tree is renumbered so that its lines start at `k * LINE_BASE` (k >= 1,
one k per file for the life of the process): every span the interpreter makes says which file it
lies in (`unit_of_line`), with no change to the values and findings that carry spans.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from devflow.analysis.index import FileIndex
from devflow.analysis.walk import walk
from devflow.lines import split_lines

LINE_BASE = 10_000_000
MAX_FILE_BYTES = 2_000_000  # a generated or vendored giant is not worth following
MAX_CACHED = 400


@dataclass(eq=False)
class ProjectFile:
    """One parsed project file (shared by every run that imports it)."""

    path: str
    module: str  # dotted name it was imported as
    source: str
    tree: ast.Module
    index: FileIndex
    base: int  # its lines are base + line
    lines: list[str] = field(default_factory=list)


_CACHE: dict[str, tuple[tuple, ProjectFile | None]] = {}
_BASES: dict[str, int] = {}  # path -> k, stable for the process
_BY_BASE: dict[int, ProjectFile] = {}


def unit_of_line(line: int) -> ProjectFile | None:
    """The project file a (renumbered) line belongs to; None for the checked file itself."""
    if line < LINE_BASE:
        return None
    return _BY_BASE.get(line // LINE_BASE)


def local_line(line: int) -> int:
    return line % LINE_BASE


def package_of(path: str) -> tuple[str, str]:
    """(dotted package of the file, the root above its top package): `root/pkg/sub/m.py` with
    `pkg/__init__.py` and `pkg/sub/__init__.py` gives ("pkg.sub", "root")."""
    d = os.path.dirname(os.path.abspath(path))
    parts: list[str] = []
    while os.path.isfile(os.path.join(d, "__init__.py")):
        parts.append(os.path.basename(d))
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return ".".join(reversed(parts)), d


def is_installed(path: str) -> bool:
    """Installed packages are library code: modelled by the library knowledge, never followed."""
    parts = path.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts


class Project:
    """Where imports of a checked file resolve: an ordered list of root folders."""

    def __init__(self, roots: list[str] | tuple[str, ...] = ()):
        self.roots: list[str] = []
        for r in roots:
            self.add_root(r)
        self._resolved: dict[str, str | None] = {}

    def add_root(self, root: str) -> None:
        r = os.path.abspath(root)
        if r not in self.roots and os.path.isdir(r) and not is_installed(r):
            self.roots.append(r)

    @classmethod
    def for_file(cls, path: str | None, extra_roots: list[str] | tuple[str, ...] = ()) -> "Project | None":
        """The roots for a checked file: its folder, the folder above its top package, the caller's
        roots, and the project's root (the nearest folder up with pyproject.toml, setup.py, setup.cfg
        or .git), where `from mypkg.models import Net` in `scripts/train.py` resolves."""
        if not path or not os.path.isfile(path):
            return cls(extra_roots) if extra_roots else None
        _, top = package_of(path)
        here = os.path.dirname(os.path.abspath(path))
        marked = project_root(here)
        return cls([here, top, *extra_roots, *([marked] if marked else [])])

    def find(self, module: str) -> str | None:
        """The file of a dotted module name, or None (a library, or not found)."""
        if module in self._resolved:
            return self._resolved[module]
        found = None
        if module and module.split(".", 1)[0] not in ("torch", "builtins"):
            rel = module.replace(".", os.sep)
            for root in self.roots:
                for cand in (os.path.join(root, rel + ".py"), os.path.join(root, rel, "__init__.py")):
                    if os.path.isfile(cand):
                        found = cand
                        break
                if found:
                    break
        self._resolved[module] = found
        return found

    def load(self, module: str) -> ProjectFile | None:
        path = self.find(module)
        return load_file(path, module) if path else None


_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_ROOT_OF: dict[str, str | None] = {}


def project_root(folder: str, levels: int = 8) -> str | None:
    """The nearest folder at or above `folder` (up to `levels` up) that marks a project root."""
    if folder in _ROOT_OF:
        return _ROOT_OF[folder]
    found, d = None, folder
    for _ in range(levels):
        if any(os.path.exists(os.path.join(d, m)) for m in _MARKERS):
            found = d
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    if len(_ROOT_OF) > 10_000:
        _ROOT_OF.clear()
    _ROOT_OF[folder] = found
    return found


def load_file(path: str, module: str) -> ProjectFile | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_size, st.st_mtime_ns)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    pf = _parse(path, module, st.st_size)
    if len(_CACHE) >= MAX_CACHED:
        _CACHE.clear()
    _CACHE[path] = (key, pf)
    return pf


def file_number(path: str) -> int:
    """The file's k (its lines start at k * LINE_BASE), the same for the life of the process."""
    return _BASES.setdefault(os.path.abspath(path), len(_BASES) + 1)


def _shift_lines(tree: ast.AST, base: int) -> None:
    """`ast.increment_lineno`, several times faster (one flat walk, no generators)."""
    for n in walk(tree):
        if "lineno" in n._attributes:
            n.lineno += base
            end = getattr(n, "end_lineno", None)
            if end is not None:
                n.end_lineno = end + base


def _parse(path: str, module: str, size: int) -> ProjectFile | None:
    if size > MAX_FILE_BYTES:
        return None
    try:
        with open(path, "rb") as fh:
            source = fh.read().decode("utf-8-sig")
        tree = ast.parse(source)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    k = file_number(path)
    base = k * LINE_BASE
    _shift_lines(tree, base)
    package, _ = package_of(path)
    if os.path.basename(path) == "__init__.py":
        package = module
    index = FileIndex(tree, package=package or None)
    pf = ProjectFile(path, module, source, tree, index, base, split_lines(source))
    _BY_BASE[k] = pf
    return pf
