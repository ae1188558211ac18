"""The program: the project files a checked file imports, resolved, parsed once and cached.

`from models import Net`, `import utils`, `from .layers import Block` and packages resolve to files
under the project's roots (the checked file's directory, the directory above its top package, and
any root the caller adds, such as the editor's workspace folder). A resolved file is never imported
or executed; the interpreter runs its module body abstractly the first time a run needs it
(`interp.units`).

The program cache (pyright's program / source file model), shared by every run in the process:
- a file's text is the editor's unsaved text when the editor has it open (`set_overlay`), else
  what is on disk (read again only when its size or mtime changes);
- parsed once per content: the cache key is (path, hash of the text), so an edit that is undone,
  or a file switched back to an earlier text, finds its parse, index and derived facts again
  (`FileIndex.facts`: what the interpreter derives from the file's text alone);
- bounded: least recently used entries go past MAX_CACHED files or MAX_CACHED_CHARS of source;
- invalidated along imports: a run links a file's classes to base classes in the files it
  imports (`interp.units.link_bases`, on the shared index). When any project file's text changes,
  the program's epoch moves on and every cached file gets a fresh index (same tree) the next time
  a run loads it, so no link to a class of the old text survives;
- each run's `Project.files` lists the project files it read (the checked file depends on them):
  an editor re-checks an open file when one of them changes (`devflow.lsp`).

Each project file's syntax tree is renumbered so that its lines start at `k * LINE_BASE` (k >= 1,
one k per file for the life of the process): every span the interpreter makes says which file it
lies in (`unit_of_line`), with no change to the values and findings that carry spans.
"""

from __future__ import annotations

import ast
import gc
import hashlib
import os
import re
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field

from devflow.analysis.syspath_roots import file_relative_roots
from devflow.analysis.index import FileIndex
from devflow.analysis.walk import walk
from devflow.lines import split_lines

LINE_BASE = 10_000_000
MAX_FILE_BYTES = 2_000_000  # a generated or vendored giant is not worth following
MAX_CACHED = 4000  # files
MAX_CACHED_CHARS = 16_000_000  # of source text: ~600 MB of trees, indexes and lines (measured ~37 bytes a char)


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
    digest: str = ""  # hash of `source`: the cache key with the path
    epoch: int = 0  # the program's epoch its index was made in


_LOCK = threading.RLock()  # an editor server runs analyses on several threads
_PARSED: "OrderedDict[tuple[str, str], ProjectFile | None]" = OrderedDict()  # (path, digest) -> file; LRU
_PARSED_CHARS = [0]
_PARSED_TOTAL = [0]  # characters parsed since the process began (never goes down)
_DISK: dict[str, tuple[tuple, str]] = {}  # path -> ((size, mtime), digest of its text; "" unreadable)
_OVERLAY: dict[str, list] = {}  # path -> [editor text, digest or None]
_CURRENT: dict[str, str] = {}  # path -> digest of the text runs last read
_EPOCH = [0]
_BASES: dict[str, int] = {}  # path -> k, stable for the process
_BY_BASE: dict[int, ProjectFile] = {}


def set_overlay(path: str, text: str) -> None:
    """The editor has `path` open with this (maybe unsaved) text: runs read it instead of the disk."""
    with _LOCK:
        _OVERLAY[os.path.abspath(path)] = [text.lstrip("\ufeff"), None]


def drop_overlay(path: str) -> None:
    """The editor closed `path`: runs read the disk again."""
    with _LOCK:
        _OVERLAY.pop(os.path.abspath(path), None)


def clear_cache() -> None:
    """Forget every parsed file and overlay (tests; a run after this one reads and parses anew)."""
    with _LOCK:
        _PARSED.clear()
        _PARSED_CHARS[0] = 0
        _DISK.clear()
        _OVERLAY.clear()
        _CURRENT.clear()
        _EPOCH[0] += 1


@contextmanager
def isolated():
    """Runs inside get a program cache of their own, empty at the start (the overlays are kept);
    the process's cache is back afterwards. For comparing results with and without the cache."""
    global _PARSED, _DISK, _CURRENT, _BY_BASE
    from devflow.analysis import importers  # it imports this module

    with _LOCK:
        saved = (_PARSED, _DISK, _CURRENT, _BY_BASE, _PARSED_CHARS[0], importers._RUNS)
        _PARSED, _DISK, _CURRENT, _BY_BASE = OrderedDict(), {}, {}, dict(_BY_BASE)
        _PARSED_CHARS[0] = 0
        importers._RUNS = {}
        _EPOCH[0] += 1
        try:
            yield
        finally:
            _PARSED, _DISK, _CURRENT, _BY_BASE, _PARSED_CHARS[0], importers._RUNS = saved
            _EPOCH[0] += 1


def fingerprint(paths) -> tuple[str, ...]:
    """The digests of these files' texts as a run would read them now (the editor's or the disk's):
    a result computed from them is still valid while this is unchanged."""
    with _LOCK:
        return tuple(_text_of(p)[1] for p in paths)


FREEZE_CHARS = 2_000_000  # of newly parsed project files between two freezes (~75 MB of objects)
_FROZEN_AT = [0]  # _PARSED_TOTAL at the last freeze_parsed()


def freeze_parsed(min_chars: int = FREEZE_CHARS) -> bool:
    """Between two runs of a batch (`devflow check`, the bench): once `min_chars` more of project
    files were parsed, collect, then move the survivors (the parsed files first of all) out of the
    cyclic collector's sight, as the editor server does (lsp/gc_policy.py). Every full collection
    walked the whole program cache otherwise: ~half of the CPU time of a project-mode run over
    transformers. A parsed file holds no reference cycle, so an evicted one is still freed by
    reference counting. Call it only when no run is under way (its live objects would be frozen
    too). True when it froze."""
    with _LOCK:
        if _PARSED_TOTAL[0] - _FROZEN_AT[0] < min_chars:
            return False
        _FROZEN_AT[0] = _PARSED_TOTAL[0]
    gc.collect()
    gc.freeze()
    return True


def cache_stats() -> dict:
    with _LOCK:
        return {"files": len(_PARSED), "chars": _PARSED_CHARS[0], "parsed_total": _PARSED_TOTAL[0],
                "overlays": len(_OVERLAY), "epoch": _EPOCH[0]}


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
        self.files: list[str] = []  # the project files this run read: what the checked file depends on
        self.here: str | None = None  # the checked file's folder

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
        repo = _repository_folder(here)
        repos = [*extra_roots, *([marked] if marked else []), *([repo] if repo else [])]
        project = cls([here, top, *repos, *_cwd_roots(path, here), *file_relative_roots(path), *_run_from_above(here, top),
                       *(sub for r in repos for sub in _packaged_subfolders(r)),
                       *(src for r in repos for src in _src_layout(r))])
        project.here = here
        return project

    def find(self, module: str) -> str | None:
        """The file of a dotted module name, or None (a library, or not found)."""
        if module in self._resolved:
            return self._resolved[module]
        found = None
        if module and module.split(".", 1)[0] not in ("torch", "builtins"):
            rel = module.replace(".", os.sep)
            for root in self.roots:
                for cand in (os.path.join(root, rel + ".py"), os.path.join(root, rel, "__init__.py")):
                    if cand in _OVERLAY or os.path.isfile(cand):  # open in the editor, maybe not saved yet
                        found = cand
                        break
                if found:
                    break
            if found is None:
                found = self._from_own_package(module)
        self._resolved[module] = found
        return found

    def _from_own_package(self, module: str) -> str | None:
        """`from src.config.train import cfg` in `src/train.py`, with no `__init__.py` (a namespace package):
        the script is a module of the package it names, run from the folder above (`python -m src.train`)."""
        first, rel = module.split(".", 1)[0], module.replace(".", os.sep)
        d = self.here
        for _ in range(6):
            if not d:
                return None
            parent = os.path.dirname(d)
            if os.path.basename(d) == first and not is_installed(parent):
                for cand in (os.path.join(parent, rel + ".py"), os.path.join(parent, rel, "__init__.py")):
                    if cand in _OVERLAY or os.path.isfile(cand):
                        return cand
            if parent == d:
                return None
            d = parent
        return None

    def load(self, module: str) -> ProjectFile | None:
        path = self.find(module)
        if not path:
            return None
        if path not in self.files:
            self.files.append(path)
        return load_file(path, module)


_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_ROOT_OF: dict[str, str | None] = {}


_CWD_ON_PATH = re.compile(r"""sys\.path\.(?:append|insert)\(\s*(?:0\s*,\s*)?(?:r?["']\.\.?/?["']|os\.getcwd\(\))\s*\)""")


def _cwd_roots(path: str, here: str) -> list[str]:
    """`sys.path.append('.')` in `tools/train.py`: the script imports from the folder it is run in,
    which is not its own but the one above it (`python tools/train.py` from the repository), tried
    after the others."""
    try:
        with open(path, "rb") as f:
            head = f.read(20000).decode("utf-8", "replace")
    except OSError:
        return []
    if "sys.path" not in head or not _CWD_ON_PATH.search(head):
        return []
    up = os.path.dirname(here)
    return [up] if up and up != here else []


_REPO_FILES = ("README.md", "README.rst", "README.txt", "README", "requirements.txt", "LICENSE", "environment.yml",
               "environment.yaml", *_MARKERS)


def _run_from_above(here: str, top: str) -> list[str]:
    """`scripts/evaluate.py` (scripts/ not a package) doing `import utils` where `utils/` sits beside
    scripts/ in a repository's root folder (its README, requirements or licence there): the script is
    run from that root (`python -m scripts.evaluate`, the usual README line), so the root is on
    sys.path even when no VCS or packaging file marks it. Tried last, for imports found nowhere closer."""
    if top != here:
        return []
    up = os.path.dirname(here)
    if not up or up == here or not any(os.path.exists(os.path.join(up, f)) for f in _REPO_FILES):
        return []
    return [up]


_PACKAGING = ("pyproject.toml", "setup.py", "setup.cfg")


_SUBFOLDERS_OF: dict[str, list[str]] = {}
_REPOSITORY_OF: dict[str, str | None] = {}


def _packaged_subfolders(root: str) -> list[str]:
    """`python/` holding its own pyproject.toml beside the repository's `test/` (sglang): the package is
    installed from that folder (`pip install -e python`), so `import sglang` anywhere in the repository
    resolves there. Tried last. Cached per folder, as `project_root` is (every checked file asks)."""
    if root in _SUBFOLDERS_OF:
        return _SUBFOLDERS_OF[root]
    try:
        names = sorted(os.listdir(root))
    except OSError:
        names = []
    found = [os.path.join(root, n) for n in names if not n.startswith(".") and
             any(os.path.isfile(os.path.join(root, n, f)) for f in _PACKAGING)]
    if len(_SUBFOLDERS_OF) > 10_000:
        _SUBFOLDERS_OF.clear()
    _SUBFOLDERS_OF[root] = found
    return found


def _src_layout(root: str) -> list[str]:
    """`src/transformers/` beside the setup.py / pyproject.toml that packages it (the src layout:
    `package_dir={"": "src"}`): the package is installed from there, so `import transformers` anywhere in
    the repository resolves to `src/transformers`. `src` itself a package (its `__init__.py`) is no such
    folder: it is imported as `src`. Tried last. Cached per folder, as `_packaged_subfolders` is."""
    if root in _SRC_OF:
        return _SRC_OF[root]
    src = os.path.join(root, "src")
    found = [src] if os.path.isdir(src) and not os.path.isfile(os.path.join(src, "__init__.py")) and \
        any(os.path.isfile(os.path.join(root, f)) for f in _PACKAGING) else []
    if len(_SRC_OF) > 10_000:
        _SRC_OF.clear()
    _SRC_OF[root] = found
    return found


_SRC_OF: dict[str, list[str]] = {}


def _repository_folder(here: str, levels: int = 6) -> str | None:
    """The nearest folder at or above a script's that looks like a repository's root (its README,
    requirements, licence or packaging file). Cached per folder."""
    if here in _REPOSITORY_OF:
        return _REPOSITORY_OF[here]
    found, d = None, here
    for _ in range(levels):
        if any(os.path.exists(os.path.join(d, f)) for f in _REPO_FILES):
            found = d
            break
        parent = os.path.dirname(d)
        if not parent or parent == d:
            break
        d = parent
    if len(_REPOSITORY_OF) > 10_000:
        _REPOSITORY_OF.clear()
    _REPOSITORY_OF[here] = found
    return found


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
    """The parsed file at `path` (its editor text if open, else the disk's), from the program cache."""
    with _LOCK:
        text, digest = _text_of(path)
        if not digest:
            return None
        if _CURRENT.get(path, digest) != digest:
            _EPOCH[0] += 1  # a project file changed: links made against its old classes are void
        _CURRENT[path] = digest
        key = (path, digest)
        if key in _PARSED:
            _PARSED.move_to_end(key)
            pf = _PARSED[key]
            if pf is not None and pf.epoch != _EPOCH[0]:
                pf = _PARSED[key] = _relinked(pf)
        else:
            if text is None:
                text = _read(path)
            pf = _parse(path, module, text, digest) if text is not None else None
            _PARSED[key] = pf
            _PARSED_CHARS[0] += len(pf.source) if pf is not None else 0
            _PARSED_TOTAL[0] += len(pf.source) if pf is not None else 0
            _evict()
        if pf is not None:
            _BY_BASE[pf.base // LINE_BASE] = pf  # this text is the one runs now read
        return pf


def _text_of(path: str) -> tuple[str | None, str]:
    """(text or None if not read here, digest) of the file as runs must see it; digest "" when it
    cannot be read. A file on disk is read again only when its size or mtime changed."""
    over = _OVERLAY.get(path)
    if over is not None:
        if len(over[0]) > MAX_FILE_BYTES:
            return None, ""
        if over[1] is None:
            over[1] = _digest(over[0])
        return over[0], over[1]
    try:
        st = os.stat(path)
    except OSError:
        return None, ""
    if st.st_size > MAX_FILE_BYTES:
        return None, ""
    stamp = (st.st_size, st.st_mtime_ns)
    hit = _DISK.get(path)
    if hit is not None and hit[0] == stamp:
        return None, hit[1]
    text = _read(path)
    digest = _digest(text) if text is not None else ""
    if len(_DISK) > 10 * MAX_CACHED:
        _DISK.clear()
    _DISK[path] = (stamp, digest)
    return text, digest


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _evict() -> None:
    while len(_PARSED) > 1 and (len(_PARSED) > MAX_CACHED or _PARSED_CHARS[0] > MAX_CACHED_CHARS):
        _, old = _PARSED.popitem(last=False)
        if old is not None:
            _PARSED_CHARS[0] -= len(old.source)


def _relinked(pf: ProjectFile) -> ProjectFile:
    """The same parse with a fresh index: the old one may hold links to classes of a changed file."""
    index = FileIndex(pf.tree, package=pf.index.package)
    return ProjectFile(pf.path, pf.module, pf.source, pf.tree, index, pf.base, pf.lines, pf.digest, _EPOCH[0])


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


def _parse(path: str, module: str, source: str, digest: str) -> ProjectFile | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    k = file_number(path)
    base = k * LINE_BASE
    _shift_lines(tree, base)
    package, _ = package_of(path)
    if os.path.basename(path) == "__init__.py":
        package = module
    index = FileIndex(tree, package=package or None)
    return ProjectFile(path, module, source, tree, index, base, split_lines(source), digest, _EPOCH[0])
