"""A corpus case variant as ast trees whose bug statements carry tags that survive rewriting.

A bug line is tagged on the innermost statement that holds it (the header of a compound
statement, or any line of a simple one). Rewrites move tagged nodes around; `render` unparses
every file and finds where each tagged node landed by walking the re-parsed tree in step with
the rewritten one (an unparse/parse round trip keeps the tree's shape).
"""

from __future__ import annotations

import ast
import copy
import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path

TAG = "_mm_labels"  # set of original "file:line" labels on a statement node


class NotApplicable(Exception):
    """The rewrite does not apply to this case (counted as skipped, never faked)."""


@dataclass
class Project:
    entry: str  # "buggy.py" or "fixed.py": the script that is run
    trees: dict[str, ast.Module]  # base name -> tree
    labels: list[str] = field(default_factory=list)  # "file:line" of every bug line that was tagged
    extras: dict[str, str] = field(default_factory=dict)  # files copied unchanged (fixture.py)
    causes: set[str] = field(default_factory=set)  # labels of cause lines (the statements to move)
    sources: dict[str, str] = field(default_factory=dict)  # the unrewritten texts
    data: dict[str, str] = field(default_factory=dict)  # non-Python files copied unchanged (pyproject.toml)
    other_entries: list[str] = field(default_factory=list)  # files a file-level rewrite may use instead of `entry`

    def clone(self) -> "Project":
        return Project(self.entry, copy.deepcopy(self.trees), list(self.labels), dict(self.extras), set(self.causes),
                       dict(self.sources), dict(self.data), list(self.other_entries))

    def module_names(self) -> set[str]:
        """Names the project's files are imported by: each file's stem and every folder above it."""
        return {part for name in self.trees for part in name[:-3].split("/")}

    def top_level_modules(self) -> set[str]:
        """Names an absolute import can start with (a folder inside the case can shadow nothing else): those at
        the case's root, and those beside a script in a subfolder (Python puts a script's folder first on
        sys.path: `game_manager/game_manager.py` imports `machine_learning.x` from `game_manager/`)."""
        tops = {name[:-3].split("/")[0] for name in self.trees}
        for script, tree in self.trees.items():
            folder = script.rsplit("/", 1)[0] + "/" if "/" in script else ""
            if folder and _runs_as_script(tree):
                tops |= {name[len(folder):-3].split("/")[0] for name in self.trees if name.startswith(folder)}
        return tops

    @property
    def entry_tree(self) -> ast.Module:
        return self.trees[self.entry]


@dataclass
class Rendered:
    files: dict[str, str]  # base name -> source (project files and extras)
    spans: dict[str, list[tuple[str, int, int]]]  # label -> [(file, first line, last line)]


def _runs_as_script(tree: ast.Module) -> bool:
    """`if __name__ == "__main__":` at the top level."""
    return any(isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Name)
               and n.test.left.id == "__name__" for n in tree.body)


def header_end(node: ast.stmt) -> int:
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        return max(node.lineno, body[0].lineno - 1)
    return node.end_lineno or node.lineno


def innermost_stmt(tree: ast.Module, line: int) -> ast.stmt | None:
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno and (node.end_lineno or 0) <= (best.end_lineno or 0):
                best = node
    if best is not None and line > header_end(best) and getattr(best, "body", None):
        return None  # a blank or comment line inside a block
    return best


def tag(node: ast.AST, labels) -> None:
    getattr(node, TAG, None) or setattr(node, TAG, set())
    getattr(node, TAG).update(labels)


def tagged(tree: ast.AST) -> list[ast.stmt]:
    return [n for n in ast.walk(tree) if getattr(n, TAG, None)]


def _case_files(case_dir: Path, case: dict, variant: str) -> list[Path]:
    listed = (case.get("files") or {}).get(variant)
    if listed:
        return [case_dir / f for f in listed]
    return [case_dir / f"{variant}.py"]


def bug_labels(case: dict, entry: str) -> list[tuple[str, int]]:
    out = []
    for b in case.get("bug_lines", []):
        if isinstance(b, str) and ":" in b:
            f, _, n = b.rpartition(":")
            out.append((Path(f).name, int(n)))
        else:
            out.append((entry, int(b)))
    return out


def cause_labels(case: dict, entry: str) -> list[tuple[str, int]]:
    keep = {str(x) for x in case.get("cause_lines") or []}
    all_ = bug_labels(case, entry)
    if not keep:
        return all_
    return [(f, n) for (f, n), raw in zip(all_, case.get("bug_lines", [])) if str(raw) in keep] or all_


def map_lines(old: str, new: str, lines: list[int]) -> list[int]:
    """Lines of `old` to the matching lines of `new` (a changed line maps into its replacement)."""
    a, b = old.splitlines(), new.splitlines()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for ln in lines:
            if i1 < ln <= i2 and op in ("equal", "replace") and j2 > j1:
                out.append(j1 + 1 + min(ln - 1 - i1, j2 - j1 - 1))
    return sorted(set(out))


def load(case_dir: Path, variant: str) -> Project:
    """`variant` is "buggy" or "fixed". Fixed variants get the buggy bug lines mapped by diff,
    so that rewrites which follow the bug statement pick the corresponding fixed statement."""
    case = json.loads((case_dir / "case.json").read_text())
    paths = _case_files(case_dir, case, variant)
    entry = paths[0].name
    trees = {p.name: ast.parse(p.read_text(), p.name) for p in paths}
    extras = {p.name: p.read_text() for p in case_dir.iterdir()
              if p.suffix == ".py" and p.name not in ("buggy.py", "fixed.py") and p.name not in trees
              and p not in _case_files(case_dir, case, "buggy") + _case_files(case_dir, case, "fixed")}
    proj = Project(entry, trees, extras=extras, sources={p.name: p.read_text() for p in paths})
    causes = set(cause_labels(case, "buggy.py"))
    labels = [(f, ln, (f, ln) in causes) for f, ln in bug_labels(case, "buggy.py")]
    if variant == "fixed":
        bpaths = {p.name: p for p in _case_files(case_dir, case, "buggy")}
        fpaths = {p.name: p for p in paths}
        mapped = []
        for f, ln, is_cause in labels:
            src_f = "fixed.py" if f == "buggy.py" else f
            if f in bpaths and src_f in fpaths:
                for m in map_lines(bpaths[f].read_text(), fpaths[src_f].read_text(), [ln]):
                    mapped.append((src_f, m, is_cause))
        labels = mapped
    for f, ln, is_cause in labels:
        tree = trees.get(f)
        node = innermost_stmt(tree, ln) if tree else None
        if node is not None:
            label = f"{f}:{ln}"
            tag(node, [label])
            proj.labels.append(label)
            if is_cause:
                proj.causes.add(label)
    return proj


class RoundTripError(Exception):
    pass


def render(proj: Project) -> Rendered:
    files: dict[str, str] = {}
    spans: dict[str, list[tuple[str, int, int]]] = {}
    for name, tree in proj.trees.items():
        ast.fix_missing_locations(tree)
        text = ast.unparse(tree) + "\n"
        compile(text, name, "exec")  # every variant must stay valid Python
        again = ast.parse(text)
        for old, new in zip(ast.walk(tree), ast.walk(again)):
            if type(old) is not type(new):
                raise RoundTripError(f"{name}: {type(old).__name__} != {type(new).__name__}")
            for label in getattr(old, TAG, ()) or ():
                spans.setdefault(label, []).append((name, new.lineno, header_end(new)))
        files[name] = text
    files.update(proj.extras)
    files.update(proj.data)
    return Rendered(files, spans)


def original_spans(proj: Project) -> dict[str, list[tuple[str, int, int]]]:
    """The same span criterion on the unrewritten files (their own line numbers)."""
    spans: dict[str, list[tuple[str, int, int]]] = {}
    for name, tree in proj.trees.items():
        for node in tagged(tree):
            for label in getattr(node, TAG):
                spans.setdefault(label, []).append((name, node.lineno, header_end(node)))
    return spans
