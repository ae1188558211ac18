"""Project files as the interpreter sees them: imported modules run once per run, names resolved
through them, and findings made inside them anchored where the checked file calls in.

A name imported from a project file (`from models import Net`, `utils.to_device`) resolves to the
value that file's module body binds, so calls follow into it like calls of the checked file. The
checked file's results only hold its own spans: a finding whose place lies in an imported file is
reported at the checked file's call that led there, its message naming the place inside.
"""

from __future__ import annotations

import ast
import os
import re

from devflow.analysis.findings import Finding
from devflow.analysis.index import library_module_qual
from devflow.analysis.interp.frames import Frame, class_member, span_of
from devflow.analysis.program import LINE_BASE, ProjectFile, local_line, unit_of_line
from devflow.analysis.values import UNKNOWN, Val

_FOREIGN_LINE = re.compile(r"\bline (\d{8,})\b")
MAX_STAR_SEARCH = 64  # star-imported modules searched for one name (see Units._reexported)


class Unit:
    """One file in a run: its index and its module frame (the names its module body binds)."""

    __slots__ = ("index", "module_frame", "file", "name")

    def __init__(self, index, module_frame: Frame, file: ProjectFile | None, name: str):
        self.index = index
        self.module_frame = module_frame
        self.file = file  # None: the checked file
        self.name = name  # "__main__" for the checked file, else the dotted module name


class Units:
    """Imports of project files, and switching the current file while running code of another."""

    def init_units(self, project) -> None:
        self.project = project
        self.main_unit = Unit(self.index, self.module_frame, None, "__main__")
        self.unit = self.main_unit
        self.units: dict[str, Unit | None] = {}
        self._qual_vals: dict[str, Val | None] = {}
        self._ranges_by_index: dict[int, list] = {}
        # Findings placed in imported files, as made (a copy) and as kept here (cancelled later or not)
        self.exported: list[tuple[Finding, Finding]] = []
        if project is not None:
            self.link_bases(self.index)

    # ---- switching files
    def enter(self, unit: Unit):
        saved = (self.unit, self.index, self.module_frame)
        self.unit, self.index, self.module_frame = unit, unit.index, unit.module_frame
        return saved

    def leave(self, saved) -> None:
        self.unit, self.index, self.module_frame = saved

    def unit_of_index(self, index) -> Unit | None:
        if index is None or index is self.main_unit.index:
            return self.main_unit
        for u in self.units.values():
            if u is not None and u.index is index:
                return u
        return None

    # ---- imports
    def import_unit(self, module: str) -> Unit | None:
        if module in self.units:
            return self.units[module]
        self.units[module] = None  # a cycle sees the module as not (yet) known
        pf = self.project.load(module) if self.project is not None else None
        if pf is None:
            return None
        unit = Unit(pf.index, Frame(pf.tree, None, None), pf, module)
        self._frames.append(unit.module_frame)
        self.units[module] = unit
        self.link_bases(pf.index)
        # Python runs the body once at import: its calls are followed (`model = Net().to(device)` is
        # the built model at the importer), its `if __name__ == "__main__":` block is not (`__name__`
        # is the module's name here). An import from a function run on its own follows nothing.
        saved, saved_frame, saved_standalone = self.enter(unit), self.frame, self.standalone
        self.frame = unit.module_frame
        try:
            self.exec_block(pf.tree.body, unit.module_frame)
        finally:
            self.leave(saved)
            self.frame, self.standalone = saved_frame, saved_standalone
        return unit

    def link_bases(self, index) -> None:
        """Base classes imported from project files: methods are inherited, nn.Module-ness too."""
        changed = False
        for info in index.all_classes:
            imported: dict[str, object] = {}
            for b in info.bases:
                if not b or b in index.classes:
                    continue
                base = self.project_val(index.qualify(b))
                if base is not None and base.kind == "qual" and isinstance(base.const, str) and \
                        library_module_qual(base.const) and not info.is_module:
                    # a library nn.Module named through a project module (`from pkg import nn`, where pkg
                    # binds `nn = torch.nn`): the class is an nn.Module, so `.to()` moves its submodules
                    info.is_module = changed = True
                    continue
                if base is not None and base.kind == "class" and base.func is not info and \
                        base.func not in info.base_infos and hasattr(base.func, "method"):
                    info.base_infos.append(base.func)
                    imported[b] = base.func
                    if base.func.is_module and not info.is_module:
                        info.is_module = changed = True
            if imported:
                info.base_infos = bases_in_declared_order(info, index, imported)
        while changed:
            changed = False
            for info in index.all_classes:
                if not info.is_module and any(b.is_module for b in info.base_infos):
                    info.is_module = changed = True

    def project_val(self, q: str) -> Val | None:
        """The value a dotted name has when its module is a project file; None when it is not one
        (a library, or a module object: its qualified name stays a name)."""
        if self.project is None or "." not in q:
            return None
        hit = self._qual_vals.get(q, False)
        if hit is not False:
            return hit
        self._qual_vals[q] = UNKNOWN  # a cycle of re-exports resolves to unknown
        out = self._project_val(q)
        self._qual_vals[q] = out
        return out

    def _project_val(self, q: str) -> Val | None:
        parts = q.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:i])
            if self.project.find(mod) is None:
                continue
            unit = self.import_unit(mod)
            if unit is None:
                return UNKNOWN
            v = unit.module_frame.env.get(parts[i])
            if v is None:
                v = self._module_level_def(unit, parts[i])
            if v is None:
                v = self._reexported(unit, mod, parts[i], parts[i + 1:])
                if v is not None:
                    return v
            if v is None:
                if self.project.find(".".join(parts[:i + 1])) is not None:
                    return None  # a submodule: `pkg.models` stays a name
                return UNKNOWN
            for attr in parts[i + 1:]:
                if v.kind == "class":
                    v = class_member(v, attr)
                elif v.kind == "qual" and isinstance(v.const, str):
                    v = Val("qual", const=f"{v.const}.{attr}")  # `pkg.nn.Module`, pkg binding `nn = torch.nn`
                elif v.kind in ("module", "obj") and v.obj is not None:
                    v = v.obj.attrs.get(attr, UNKNOWN)
                else:
                    return UNKNOWN
            return v
        return None

    def _reexported(self, unit: Unit, mod: str, name: str, rest: list[str]) -> Val | None:
        """A name a package's `__init__` (or any module) imports from another module: the project
        module's value (`from .net import Net`, `from .net import *`), or the library's qualified name
        for an explicit import (`from torch.nn import Linear as Head`: `pkg.Head` is `torch.nn.Linear`)."""
        target = unit.index.aliases.get(name)
        explicit = [target] if target and target != f"{mod}.{name}" else []
        # A package that star-imports hundreds of modules (transformers' `models/__init__` under
        # TYPE_CHECKING: 548) would have one name looked up by loading all of them, in every file
        # that names it: past MAX_STAR_SEARCH such a name stays unknown.
        stars = unit.index.star_imports if len(unit.index.star_imports) <= MAX_STAR_SEARCH else []
        for src in explicit + [f"{star}.{name}" for star in stars]:
            if self.project.find(src.rsplit(".", 1)[0]) is None and self.project.find(src.split(".")[0]) is None:
                if src in explicit:  # a library name: the caller models it like a direct import
                    return Val("qual", const=".".join([src, *rest]))
                continue  # a library's star import: which names it binds is not known here
            v = self.project_val(".".join([src, *rest]))
            if v is not None and v is not UNKNOWN:
                return v
        return None

    def _module_level_def(self, unit: Unit, name: str) -> Val | None:
        """A class defined in the file but not bound on the path the module body took."""
        info = unit.index.classes.get(name)
        return Val("class", func=info) if info is not None else None

    # ---- places
    def ranges_of(self, index) -> list:
        r = self._ranges_by_index.get(id(index))
        if r is None:
            r = self._ranges_by_index[id(index)] = sorted(
                ((f.lineno, f.end_lineno or f.lineno, f) for f in index.functions), key=lambda x: (x[0], -x[1]))
        return r

    def foreign_line_bytes(self, n: int) -> bytes | None:
        pf = unit_of_line(n)
        if pf is None:
            return None
        i = local_line(n)
        return pf.lines[i - 1].encode("utf-8") if 0 < i <= len(pf.lines) else None

    def place(self, line: int) -> str:
        pf = unit_of_line(line)
        if pf is None:
            return f"line {line}"
        return f"{os.path.basename(pf.path)}:{local_line(line)}"

    def localize(self, text: str) -> str:
        return _FOREIGN_LINE.sub(lambda m: self.place(int(m.group(1))), text) if "line " in text else text

    def anchor_foreign(self, f: Finding) -> bool:
        """Re-place, in place, a finding that lies in an imported file at the checked file's call
        that led there (or where the values meet in the checked file). False: no such place."""
        site = None
        fr = self.frame
        st = fr.stmt_stack[-1] if fr is not None and fr.stmt_stack else None
        if st is not None and getattr(st, "lineno", LINE_BASE) < LINE_BASE:
            # raised while the checked file's own statement runs (a move that strands an optimizer state
            # loaded in a helper module): that statement, whichever function of the file it sits in
            end = getattr(st, "end_lineno", None) or st.lineno
            site = next((s for s, _ in f.related if st.lineno <= s.line <= end), span_of(st))
            fr = None
        while fr is not None:
            call = fr.call_node
            if call is not None and getattr(call, "lineno", LINE_BASE) < LINE_BASE:
                site = span_of(call)
                break
            fr = fr.parent
        if site is None:
            site = next((s for s, _ in f.related if s.line < LINE_BASE), None)
        if site is None:
            return False
        where = self.place(f.span.line)
        f.message = f"{self.localize(f.message)} (at {where})"
        f.span = site
        f.related = [(s, self.localize(m)) for s, m in f.related if s.line < LINE_BASE]
        f.fix = None  # its edits would land in the other file
        return True

    def localize_finding(self, f: Finding) -> None:
        """A finding in the checked file whose message or related places name an imported file."""
        if not any(s.line >= LINE_BASE for s, _ in f.related) and not _FOREIGN_LINE.search(f.message):
            return
        f.related = [(s, self.localize(m)) for s, m in f.related if s.line < LINE_BASE]
        f.message = self.localize(f.message)
        if f.fix is not None and (f.fix.span.line >= LINE_BASE or (f.fix.anchor is not None and f.fix.anchor.line >= LINE_BASE)):
            f.fix = None


def is_foreign(node: ast.AST) -> bool:
    return getattr(node, "lineno", 0) >= LINE_BASE


def bases_in_declared_order(info, index, imported: dict) -> list:
    """`class C(A, B)` with A imported and B defined beside C: Python looks attributes (and the next
    `super().__init__`) up in the order the bases are written, so same-file and imported bases are
    kept in that order, not same-file ones first."""
    ordered: list = []
    for b in info.bases:
        cand = imported.get(b) or (index.classes.get(b) if b else None)
        if cand is not None and cand is not info and cand in info.base_infos and cand not in ordered:
            ordered.append(cand)
    return ordered + [c for c in info.base_infos if c not in ordered]
