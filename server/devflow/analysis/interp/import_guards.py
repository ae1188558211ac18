"""`try: import torch ... except ImportError: torch = None` (RLlib's `try_import_torch`, libraries that make torch
optional): the program analyzed is a PyTorch program, so importing torch succeeds and a handler that catches only
the import's failure never runs; its fallbacks (`return None, None`) are not joined with the real modules."""

from __future__ import annotations

import ast

_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


def torch_import_guard(st: ast.Try) -> bool:
    """Whether `st` only guards imports of torch: every import in its body is of torch (or a torch submodule),
    nothing in it raises, and every handler catches only ImportError / ModuleNotFoundError."""
    if not st.handlers or not all(_catches_import_errors_only(h) for h in st.handlers):
        return False
    nodes = [n for s in st.body for n in ast.walk(s)]
    if any(isinstance(n, ast.Raise) for n in nodes):
        return False
    imports = [n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))]
    return bool(imports) and all(_imports_torch_only(n) for n in imports)


def _catches_import_errors_only(h: ast.ExceptHandler) -> bool:
    types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    return bool(types) and all(isinstance(t, ast.Name) and t.id in _IMPORT_ERRORS for t in types)


def _imports_torch_only(n: ast.AST) -> bool:
    if isinstance(n, ast.ImportFrom):
        return n.level == 0 and n.module is not None and _is_torch(n.module)
    return all(_is_torch(a.name) for a in n.names)


def _is_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")
