"""Findings a file gets from the project files that import it.

`models.py` alone cannot tell that `train.py` moves the model and then calls `reset_head()`, or
feeds `Net.forward` a cuda batch: that is known only when `train.py` runs. So a checked file also
gets the findings that lie inside it from runs of its importers (the Python files next to it and
at the project's roots that import it), each run once per content and cached. Lines of the importer
are named `train.py:N` in messages; a fix is kept only when all its edits lie in the checked file.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from dataclasses import replace

from devflow.analysis.findings import Finding
from devflow.analysis.index import FileIndex
from devflow.analysis.program import (LINE_BASE, Project, file_number, fingerprint, is_installed, local_line, package_of,
                                      unit_of_line)

MAX_IMPORTERS = 40
MAX_IMPORTER_BYTES = 1_000_000
# importer path -> (stat key, project files its run read, their digests then, {file k: [Finding]}):
# valid while the importer and every file its run read are unchanged (program.fingerprint)
_RUNS: dict[str, tuple[tuple, tuple, tuple, dict]] = {}
_LINE = re.compile(r"\bline (\d+)\b")


def importers_of(path: str, project: Project) -> list[str]:
    """Scripts at the project's roots, and in the script folders right under them (`tools/`, `bin/`,
    `scripts/`: folders that are not packages), whose text imports `path`'s module: files that run
    something (a `__main__` guard or top-level calls / loops), not other library modules."""
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        stem = os.path.basename(os.path.dirname(path))
    me = os.path.abspath(path)
    out: list[str] = []
    folders = list(project.roots)
    folders += [sub for root in project.roots for sub in _script_folders(root) if sub not in folders]
    pkg, top = package_of(path)
    if pkg:  # `TTS/bin/train.py` for `TTS/vocoder/layers/losses.py`: the top package's own script folders
        top_pkg = os.path.join(top, pkg.split(".", 1)[0])
        folders += [sub for sub in [top_pkg, *_script_folders(top_pkg, packages=True)] if sub not in folders]
    for folder in folders:
        for cand, words, modules in _scripts_in(folder):
            if cand != me and cand not in out and (stem in words or stem in _one_hop_words(cand, modules)):
                out.append(cand)
                if len(out) >= MAX_IMPORTERS:
                    return out
    return out


MAX_HOP_MODULES = 16
_HOP: dict[str, tuple] = {}  # script -> (its stat key, the project modules it imports, their mtimes, their import words)
_WORDS: dict[str, tuple[tuple, frozenset]] = {}  # project module -> (its stat key, the words of its imports)


def _one_hop_words(script: str, modules: tuple) -> frozenset:
    """The words imported by the packages a script imports: `from condor_pytorch import loss_fn` runs the
    package's `__init__`, which imports `.losses`, so the script imports `losses.py` too. One hop, over
    at most MAX_HOP_MODULES of the script's imports; cached on the files' stats. (A module imported by
    another project module is not followed: its findings are placed there, at the call that leads in.)"""
    if not modules:
        return frozenset()
    try:
        st = os.stat(script)
    except OSError:
        return frozenset()
    skey = (st.st_size, st.st_mtime_ns)
    hit = _HOP.get(script)
    if hit is not None and hit[0] == skey:
        files, fkey, words = hit[1], hit[2], hit[3]
        try:
            if tuple(os.stat(f).st_mtime_ns for f in files) == fkey:
                return words
        except OSError:
            pass
    project = Project.for_file(script)
    if project is None:
        return frozenset()
    files = []
    for m in modules[:MAX_HOP_MODULES]:
        f = project.find(m)
        if f and os.path.basename(f) == "__init__.py" and not is_installed(f):
            files.append(os.path.abspath(f))
    try:
        fkey = tuple(os.stat(f).st_mtime_ns for f in files)
    except OSError:
        return frozenset()
    acc: set[str] = set()
    for f in files:
        acc |= _import_words(f)
    words = frozenset(acc)
    if len(_HOP) > 1000:
        _HOP.clear()
    _HOP[script] = (skey, tuple(files), fkey, words)
    return words


def _import_words(path: str) -> frozenset:
    try:
        st = os.stat(path)
        key = (st.st_size, st.st_mtime_ns)
        hit = _WORDS.get(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        if st.st_size > MAX_IMPORTER_BYTES:
            return frozenset()
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return frozenset()
    words: set[str] = set()
    for m in _IMPORT_LINE.finditer(text):
        for part in (m.group(1) or "", m.group(2) or "", m.group(3) or ""):
            words.update(re.findall(r"\w+", part))
    out = frozenset(words)
    if len(_WORDS) > 4000:
        _WORDS.clear()
    _WORDS[path] = (key, out)
    return out


MAX_SCRIPT_FOLDERS = 24
_FOLDERS: dict[tuple, tuple[int, list[str]]] = {}  # (root, packages) -> (its mtime, its script folders)


def _script_folders(root: str, packages: bool = False) -> list[str]:
    """The folders right under `root` that hold scripts rather than a package (no `__init__.py`; with
    `packages`, subpackages too), hidden folders, environments and installed code left out."""
    try:
        mtime = os.stat(root).st_mtime_ns
    except OSError:
        return []
    hit = _FOLDERS.get((root, packages))
    if hit is not None and hit[0] == mtime:
        return hit[1]
    found: list[str] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        entries = []
    for e in entries:
        if e.name.startswith((".", "_")) or e.name in ("node_modules", "venv", "env", "build", "dist"):
            continue
        try:
            if not e.is_dir() or is_installed(e.path) or os.path.exists(os.path.join(e.path, "pyvenv.cfg")) \
                    or (not packages and os.path.exists(os.path.join(e.path, "__init__.py"))):
                continue
        except OSError:
            continue
        found.append(e.path)
        if len(found) >= MAX_SCRIPT_FOLDERS:
            break
    if len(_FOLDERS) > 1000:
        _FOLDERS.clear()
    _FOLDERS[(root, packages)] = (mtime, found)
    return found


_SCRIPTS: dict[str, tuple[tuple, list]] = {}  # folder -> (its listing's stat key, [(script, imported words)])
_RUNS_CODE = re.compile(r"^(?:for|with|while|if __name__)\b|^[A-Za-z_][\w.]*\(", re.M)
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+([^\n#]+)|import\s+([^\n#]+))", re.M)


def _scripts_in(root: str) -> list:
    try:
        st = os.stat(root)
        names = sorted(os.listdir(root))
    except OSError:
        return []
    stats = []
    for n in names:
        if n.endswith(".py"):
            try:
                s = os.stat(os.path.join(root, n))
                stats.append((n, s.st_size, s.st_mtime_ns))
            except OSError:
                pass
    key = (st.st_mtime_ns, tuple(stats))
    hit = _SCRIPTS.get(root)
    if hit is not None and hit[0] == key:
        return hit[1]
    found = []
    for n, size, _ in stats:
        cand = os.path.join(root, n)
        if size > MAX_IMPORTER_BYTES or is_installed(cand):
            continue
        try:
            with open(cand, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        if not _RUNS_CODE.search(text):
            continue
        words: set[str] = set()
        modules: list[str] = []
        for m in _IMPORT_LINE.finditer(text):
            for part in (m.group(1) or "", m.group(2) or "", m.group(3) or ""):
                words.update(re.findall(r"\w+", part))
            if m.group(1) and not m.group(1).startswith("."):
                modules.append(m.group(1))
            elif m.group(3):
                modules.extend(a.split()[0] for a in m.group(3).split(",") if a.strip())
        found.append((cand, words, tuple(dict.fromkeys(modules))))
    if len(_SCRIPTS) > 1000:
        _SCRIPTS.clear()
    _SCRIPTS[root] = (key, found)
    return found


def findings_from_importers(path: str | None, source: str, project: Project | None,
                            inputs: list[str] | None = None) -> list[Finding]:
    """Findings inside `path` (whose text on disk is `source`) made by runs of its importers.
    `inputs` gets the files (saved text) these findings come from: the importers and what they read."""
    if not path or project is None or not os.path.isfile(path):
        return []
    importers = importers_of(path, project)
    if inputs is not None:
        inputs.extend(importers)
    if not importers:
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            on_disk = fh.read().lstrip("\ufeff")
    except (OSError, UnicodeDecodeError):
        return []
    if on_disk != source:
        return []  # unsaved edits: the importers' runs would see other lines
    k = file_number(path)
    out: list[Finding] = []
    for imp in importers:
        out.extend(_exports(imp).get(k, []))
        if inputs is not None and imp in _RUNS:
            inputs.extend(_RUNS[imp][1])
    return out


def _exports(importer: str) -> dict[int, list[Finding]]:
    try:
        st = os.stat(importer)
    except OSError:
        return {}
    key = (st.st_size, st.st_mtime_ns)
    hit = _RUNS.get(importer)
    if hit is not None and hit[0] == key and fingerprint(hit[1]) == hit[2]:
        return hit[3]
    result, deps = _run(importer)
    if len(_RUNS) > 200:
        _RUNS.clear()
    _RUNS[importer] = (key, deps, fingerprint(deps), result)
    return result


def _run(importer: str) -> tuple[dict[int, list[Finding]], tuple[str, ...]]:
    """The importer's findings by file number, and the project files its run read."""
    from devflow.analysis.interp import Interpreter  # the interpreter imports this package's siblings
    from devflow.engine import BUDGET_PER_LINE

    try:
        with open(importer, encoding="utf-8") as fh:
            source = fh.read().lstrip("\ufeff")
        tree = ast.parse(source)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, MemoryError, RecursionError):
        return {}, ()
    if "import" not in source:
        return {}, ()
    project = Project.for_file(importer)
    index = FileIndex(tree, package=package_of(importer)[0])
    interp = Interpreter(tree, source, index, budget=BUDGET_PER_LINE * (source.count("\n") + 1) + 5000, project=project)
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(old, 6000))
        interp.run()
    except Exception:  # noqa: BLE001 - an importer that cannot be run gives nothing
        return {}, tuple(project.files) if project is not None else ()
    finally:
        sys.setrecursionlimit(old)
    name = os.path.basename(importer)
    out: dict[int, list[Finding]] = {}
    seen: set = set()
    for made, kept in interp.exported:
        if kept.cancelled or made.cancelled:
            continue
        k = made.span.line // LINE_BASE
        key = (made.code, made.span)
        if key in seen:
            continue
        seen.add(key)
        out.setdefault(k, []).append(_localize(made, k, name))
    interp.release()
    return out, tuple(project.files) if project is not None else ()


def _localize(f: Finding, k: int, importer: str) -> Finding:
    def line_text(m: re.Match) -> str:
        n = int(m.group(1))
        if n < LINE_BASE:
            return f"{importer}:{n}"
        if n // LINE_BASE == k:
            return f"line {local_line(n)}"
        pf = unit_of_line(n)
        return f"{os.path.basename(pf.path)}:{local_line(n)}" if pf is not None else m.group(0)

    def span(s):
        return replace(s, line=local_line(s.line), end_line=local_line(s.end_line))

    def mine(s) -> bool:
        return s.line // LINE_BASE == k and s.end_line // LINE_BASE == k

    related = [(span(s), _LINE.sub(line_text, m)) for s, m in f.related if mine(s)]
    fix = None
    if f.fix is not None and mine(f.fix.span) and (f.fix.anchor is None or mine(f.fix.anchor)):
        fix = replace(f.fix, span=span(f.fix.span), anchor=span(f.fix.anchor) if f.fix.anchor else None)
    message = _LINE.sub(line_text, f.message) + f" (when `{importer}` runs)"
    return Finding(f.code, span(f.span), message, related, fix)


_MUTATED: dict[str, tuple[tuple, dict[str, set[str]]]] = {}  # importer -> (stat key, {module stem: names})


def mutated_by_importers(path: str | None, project: Project | None) -> set[str]:
    """Module-level names of `path` that an importer takes and may change after the import: calls a
    method of (`model.to(device)`, `model.load_state_dict(...)`), hands to a call, or rebinds
    (`helpers.model = ...`). A function of `path` the module never calls runs after that: checked
    alone, such a global is not known from `path`'s own code (the importer's run decides it)."""
    if not path or project is None:
        return set()
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        stem = os.path.basename(os.path.dirname(path))
    out: set[str] = set()
    for imp in importers_of(path, project):
        out |= _mutations(imp).get(stem, set())
    return out


def _mutations(importer: str) -> dict[str, set[str]]:
    try:
        st = os.stat(importer)
        key = (st.st_size, st.st_mtime_ns)
        hit = _MUTATED.get(importer)
        if hit is not None and hit[0] == key:
            return hit[1]
        with open(importer, encoding="utf-8", errors="replace") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    names: dict[str, tuple[str, str]] = {}  # local alias -> (module stem, its name there)
    modules: dict[str, str] = {}  # local alias of a module -> its stem
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            for a in n.names:
                names[a.asname or a.name] = (n.module.rsplit(".", 1)[-1], a.name)
        elif isinstance(n, ast.Import):
            for a in n.names:
                modules[a.asname or a.name] = a.name.rsplit(".", 1)[-1]

    def exported(e) -> tuple[str, str] | None:
        if isinstance(e, ast.Name):
            return names.get(e.id)
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in modules:
            return modules[e.value.id], e.attr
        return None

    out: dict[str, set[str]] = {}
    for n in ast.walk(tree):
        hits = []
        if isinstance(n, ast.Call):
            if isinstance(n.func, ast.Attribute):
                hits.append(exported(n.func.value))
            hits.extend(exported(a) for a in n.args)
            hits.extend(exported(k.value) for k in n.keywords)
        elif isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in modules:
                    hits.append((modules[t.value.id], t.attr))
        for h in hits:
            if h is not None:
                out.setdefault(h[0], set()).add(h[1])
    if len(_MUTATED) > 1000:
        _MUTATED.clear()
    _MUTATED[importer] = (key, out)
    return out
