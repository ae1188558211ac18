"""Import statements whose module bodies change process-wide torch state.

Names imported from a project file are resolved lazily (units.py): a module body runs when one of its
names is first used, which is right for the names it binds. A body that sets process-wide state
(`torch.set_default_tensor_type('torch.cuda.FloatTensor')`, `torch.set_default_device`,
`torch.cuda.set_device` at module level) changes everything that runs after the *import statement*,
as Python runs the body there: RTFM's `train.py` sets the cuda tensor type and `main.py` builds its
shuffling DataLoaders right after `from train import train`, long before it calls `train`. So such an
import runs the body at the statement; other imports stay lazy.
"""

from __future__ import annotations

import ast

from devflow.analysis.index import FileIndex

# torch calls whose effect outlives the module body that makes them
GLOBAL_SETTERS = frozenset({"torch.set_default_tensor_type", "torch.set_default_device", "torch.cuda.set_device"})
MAX_CHAIN = 16  # project modules looked through for a setter behind one import (imports of imports)
_OWN_SETTER: dict[tuple[str, str], bool] = {}  # (path, digest) -> its body calls a GLOBAL_SETTERS call itself


def module_level_calls(tree: ast.Module):
    """Calls the module body makes itself (not those inside its functions and classes)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imported_modules(st: ast.stmt, index: FileIndex) -> list[str]:
    """The dotted modules an import statement names (`from . import x` relative to the file's package)."""
    if isinstance(st, ast.Import):
        return [a.name for a in st.names]
    if not isinstance(st, ast.ImportFrom):
        return []
    if st.level:
        base = index._relative_base(st.level)
        if base is None:
            return []
        mod = ".".join(p for p in (base, st.module or "") if p)
    else:
        mod = st.module or ""
    # `from pkg import sub`: `sub` may itself be a module
    return [mod] + [f"{mod}.{a.name}" for a in st.names if a.name != "*"] if mod else []


class ImportEffects:
    """`s_Import` / `s_ImportFrom`: run a project module's body at the import when it sets global state."""

    def s_Import(self, st, frame):
        self._run_imports_with_effects(st)
        return False

    def s_ImportFrom(self, st, frame):
        self._run_imports_with_effects(st)
        return False

    def _run_imports_with_effects(self, st) -> None:
        if self.project is None:
            return
        memo = self.__dict__.setdefault("_import_effects", {})  # module -> sets global state (once per run)
        for module in imported_modules(st, self.index):
            if module in self.units or self.project.find(module) is None:
                continue
            if module not in memo:
                memo[module] = self._sets_global_state(module, set())
            if memo[module]:
                self.import_unit(module)

    def _sets_global_state(self, module: str, seen: set) -> bool:
        """The module's body, or a project module it imports at module level, calls a GLOBAL_SETTERS call."""
        if module in seen or len(seen) >= MAX_CHAIN:
            return False
        seen.add(module)
        pf = self.project.load(module)
        if pf is None:
            return False
        key = (pf.path, pf.digest)
        if key not in _OWN_SETTER:
            _OWN_SETTER[key] = any((d := FileIndex.dotted(call.func)) and pf.index.qualify(d) in GLOBAL_SETTERS
                                   for call in module_level_calls(pf.tree))
        if _OWN_SETTER[key]:
            return True
        for st in pf.tree.body:
            for sub in imported_modules(st, pf.index):
                if self.project.find(sub) is not None and self._sets_global_state(sub, seen):
                    return True
        return False
