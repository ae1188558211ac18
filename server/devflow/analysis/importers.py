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
    `scripts/`: folders that are not packages) and in theirs (`examples/pytorch/`), whose text imports
    `path`'s module: files that run
    something (a `__main__` guard or top-level calls / loops), not other library modules."""
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        stem = os.path.basename(os.path.dirname(path))
    me = os.path.abspath(path)
    out: list[str] = []
    folders = list(project.roots)
    script_dirs = [sub for root in project.roots for sub in _script_folders(root) if sub not in folders]
    # one level further: `examples/pytorch/vicregl.py`, `scripts/train/run.py` (a script folder's own folders)
    script_dirs += [sub2 for sub in list(script_dirs) for sub2 in _script_folders(sub)
                    if sub2 not in folders and sub2 not in script_dirs][:MAX_SCRIPT_FOLDERS]
    folders += script_dirs
    pkg, top = package_of(path)
    if pkg:  # `TTS/bin/train.py` for `TTS/vocoder/layers/losses.py`: the top package's own script folders
        top_pkg = os.path.join(top, pkg.split(".", 1)[0])
        folders += [sub for sub in [top_pkg, *_script_folders(top_pkg, packages=True)] if sub not in folders]
    scripts = [(cand, words, entry) for folder in folders
               for cand, words, entry in _scripts_in(folder, script_folder=folder in script_dirs)]
    for cand, words, _ in scripts:
        if cand != me and stem in words and cand not in out:
            out.append(cand)
            if len(out) >= MAX_IMPORTERS:
                return out
    stats: dict = {}  # one stat per file for this question, however many scripts' walks name it
    # the first MAX_ENTRY_SCRIPTS entry scripts (roots first, then script folders, then the package's
    # own): a library whose every model folder holds a `convert_*.py` with a `__main__` guard (thousands
    # in transformers) would otherwise walk each one's imports for every file checked
    entries = [s for s in scripts if s[2]][:MAX_ENTRY_SCRIPTS]
    for cand, _, _ in entries:
        # `train.py` -> `models/warp_model.py` -> `models/base_gan.py` -> `modules/loss.py`: an entry script
        # (outside any package, or with a `__main__` guard) runs the file's code through the project
        # modules it imports
        if cand != me and cand not in out and _reaches(cand, me, project, stats):
            out.append(cand)
            if len(out) >= MAX_IMPORTERS:
                return out
    return out


MAX_IMPORT_DEPTH = 4  # modules between a script and a file it runs
MAX_ENTRY_SCRIPTS = 32  # entry scripts whose imports are walked for one file
MAX_IMPORT_WALK = 200  # project files looked at from one script
_MODULE_IMPORTS: dict[str, tuple[tuple, list]] = {}  # file -> (its stat key, modules it imports with their names)


_REACHED: dict[tuple, tuple[tuple, frozenset]] = {}  # (script, roots) -> (stat keys of the files walked, files reached)


def _reaches(script: str, target: str, project: Project, stats: dict | None = None) -> bool:
    """Whether `script` imports `target` through the project modules it imports (to MAX_IMPORT_DEPTH).
    `stats`: stat keys already taken for this question (shared by the scripts asked about)."""
    # the script's imports resolve as when it runs: from its own folder and project (not the checked
    # file's folder), which also keeps one walk per script whichever file asks
    project = _script_project(script) or project
    key = (script, tuple(project.roots))
    hit = _REACHED.get(key)
    if hit is not None and hit[0] == _stat_keys((p for p, _ in hit[0]), stats):
        return target in hit[1]
    seen, frontier = {script}, [script]
    for _ in range(MAX_IMPORT_DEPTH):
        nxt = []
        level = list(frontier)
        for f in level:  # grows while walked: a package's `__init__` joins the level that imports it
            for mod, names, top in _imported_modules(f):
                def find(module: str) -> str | None:
                    # a relative import resolves from its own package's folder, also where that package sits
                    # in a namespace package (`pyannote/audio/`, no `pyannote/__init__.py`) the roots do not name
                    return project.find(module) or (_find_under(top, module) if top else None)
                found = find(mod) if mod else None
                files = [found] if found is not None else []
                if names and (not mod or (found is not None and os.path.basename(found) == "__init__.py")):
                    # `from pkg import a, b`: a and b may be its submodules (a module's names are not)
                    files += [find(f"{mod}.{n}" if mod else n) for n in names]
                for file in files:
                    if file is None or file in seen or is_installed(file):
                        continue
                    seen.add(file)
                    # `from effdet import DetBenchTrain` runs effdet/bench.py: a package `__init__` that
                    # re-exports its submodules is no module between the script and the code it runs
                    (level if os.path.basename(file) == "__init__.py" else nxt).append(file)
            if len(seen) > MAX_IMPORT_WALK:
                break
        frontier = nxt if len(seen) <= MAX_IMPORT_WALK else []
    if len(_REACHED) > 2000:
        _REACHED.clear()
    _REACHED[key] = (_stat_keys(sorted(seen), stats), frozenset(os.path.abspath(p) for p in seen if p != script))
    return target in _REACHED[key][1]


_SCRIPT_PROJECTS: dict[str, Project | None] = {}


def _script_project(script: str) -> Project | None:
    """The project `script` runs in (Project.for_file), one per script so its lookups stay cached."""
    if script not in _SCRIPT_PROJECTS:
        if len(_SCRIPT_PROJECTS) > 2000:
            _SCRIPT_PROJECTS.clear()
        _SCRIPT_PROJECTS[script] = Project.for_file(script)
    return _SCRIPT_PROJECTS[script]


def _stat_keys(paths, memo: dict | None = None) -> tuple:
    out = []
    for p in paths:
        k = memo.get(p, False) if memo is not None else False
        if k is False:
            try:
                st = os.stat(p)
                k = (st.st_size, st.st_mtime_ns)
            except OSError:
                k = None
            if memo is not None:
                memo[p] = k
        out.append((p, k))
    return tuple(out)


def _find_under(top: str, module: str) -> str | None:
    rel = os.path.join(top, module.replace(".", os.sep))
    return next((c for c in (rel + ".py", os.path.join(rel, "__init__.py")) if os.path.isfile(c)), None)


def _imported_modules(path: str) -> list[tuple[str, tuple[str, ...], str | None]]:
    """The dotted modules a file's import lines name with the names imported from each (`from a.b import
    c`: ("a.b", ("c",), None), which may be a submodule a.b.c), relative ones made absolute from the file's
    package, with the folder that package's dotted names start from."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    key = (st.st_size, st.st_mtime_ns)
    hit = _MODULE_IMPORTS.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    out: list[tuple[str, tuple[str, ...], str | None]] = []
    if st.st_size <= MAX_IMPORTER_BYTES:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            text = ""
        pkg, top = package_of(path)  # the package relative imports start from (an `__init__.py`'s own)
        for m in _IMPORT_LINE.finditer(text):
            if m.group(3):
                out += [(n.split()[0], (), None) for n in m.group(3).split(",") if n.strip()]
                continue
            mod = m.group(1)
            dots = len(mod) - len(mod.lstrip("."))
            if dots:
                base = pkg.split(".") if pkg else []
                base = base[:len(base) - (dots - 1)] if dots - 1 <= len(base) else []
                mod = ".".join(base + ([mod.lstrip(".")] if mod.lstrip(".") else []))
            names = [n.split()[0] for n in m.group(2).replace("(", " ").replace(")", " ").split(",") if n.split()]
            out.append((mod, tuple(n for n in names if n != "*"), top if dots else None))
    if len(_MODULE_IMPORTS) > 5000:
        _MODULE_IMPORTS.clear()
    _MODULE_IMPORTS[path] = (key, out)
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


_SCRIPTS: dict[tuple, tuple[tuple, list]] = {}  # (folder, script folder?) -> (its listing's stat key, [(script, imported words, entry)])
_RUNS_CODE = re.compile(r"^(?:for|with|while|if __name__)\b|^[A-Za-z_][\w.]*\(", re.M)
_MAIN_GUARD = re.compile(r"^if __name__\s*==", re.M)
# `out = model(x)` at the top level of a file that defines nothing (a script of assignments only): it runs
# code too; in a file with definitions such lines (`logger = logging.getLogger()`) are a module's setup
_ASSIGNS_CALL = re.compile(r"^[A-Za-z_][\w., \t\[\]]*=[ \t]*[A-Za-z_][\w.]*\(", re.M)
_DEFINES = re.compile(r"^(?:async\s+def|def|class)\s", re.M)
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+([^\n#]+)|import\s+([^\n#]+))", re.M)


def _scripts_in(root: str, script_folder: bool = False) -> list:
    """The files of `root` that run code, with the words of their imports and whether they are entry
    scripts. In a script folder (`examples/`, `scripts/`: not a package, right under a root) a file of
    top-level assignments that call something runs them even when it also defines helpers; elsewhere
    such lines (`logger = logging.getLogger()`) may be a module's setup."""
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
    hit = _SCRIPTS.get((root, script_folder))
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
        if not (_RUNS_CODE.search(text) or (_ASSIGNS_CALL.search(text) and (script_folder or not _DEFINES.search(text)))):
            continue
        words: set[str] = set()
        for m in _IMPORT_LINE.finditer(text):
            for part in (m.group(1) or "", m.group(2) or "", m.group(3) or ""):
                words.update(re.findall(r"\w+", part))
        entry = not os.path.exists(os.path.join(root, "__init__.py")) or bool(_MAIN_GUARD.search(text))
        found.append((cand, words, entry))
    if len(_SCRIPTS) > 1000:
        _SCRIPTS.clear()
    _SCRIPTS[(root, script_folder)] = (key, found)
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
