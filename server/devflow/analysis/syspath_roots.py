"""`sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))` at the top of a script
(`test/ops/self_attention.py` importing `test_utils` from `test/`): the script puts a folder found from its own
location on the import path, so its top-level imports resolve there, whatever folder it is run from. The folder
is computed statically from `__file__` through os.path (dirname, join, abspath, realpath, normpath) and pathlib
(Path, .parent, .parents[n], .resolve(), `/`, str()), directly or through a name assigned before; anything else
(an environment variable, a configuration value) adds nothing. The calls count wherever they are (module level,
a `main()` that sets the path up before importing): they only say where imports may resolve."""

from __future__ import annotations

import ast
import os

_SAME = frozenset({"abspath", "realpath", "normpath", "expanduser"})
_PATH_CALLS = frozenset({"Path", "PurePath", "str", "fspath"})
_PATH_METHODS = frozenset({"resolve", "absolute", "expanduser"})


def file_relative_roots(path: str) -> list[str]:
    """The existing folders that `path`'s `sys.path.insert/append(...)` calls add, computed from the file's
    own location."""
    try:
        with open(path, "rb") as f:
            text = f.read(200_000).decode("utf-8", "replace")
    except OSError:
        return []
    if "sys.path" not in text or "__file__" not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    names: dict[str, str] = {}
    found: list[str] = []
    for st in _statements_in_order(tree):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            value = _folder(st.value, path, names)
            if value is not None:
                names[st.targets[0].id] = value
            else:
                names.pop(st.targets[0].id, None)
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            arg = _sys_path_argument(st.value)
            value = _folder(arg, path, names) if arg is not None else None
            if value is not None and os.path.isdir(value) and value not in found:
                found.append(value)
    return found


def _statements_in_order(tree):
    """Every name assignment and expression statement of the file, in source order."""
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.Expr))]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _sys_path_argument(call: ast.Call):
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr in ("insert", "append") and isinstance(f.value, ast.Attribute)
            and f.value.attr == "path" and isinstance(f.value.value, ast.Name) and f.value.value.id == "sys"):
        return None
    want = 2 if f.attr == "insert" else 1
    return call.args[want - 1] if len(call.args) == want else None


def _folder(node, path: str, names: dict[str, str]) -> str | None:
    """The absolute path `node` evaluates to, or None when it is not computed from `__file__`."""
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return os.path.abspath(path)
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _folder(node.value, path, names)
        return os.path.dirname(base) if base is not None and node.attr == "parent" else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents" \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        base = _folder(node.value.value, path, names)
        for _ in range(node.slice.value + 1 if base is not None else 0):
            base = os.path.dirname(base)
        return base
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
            and isinstance(node.right.value, str):
        base = _folder(node.left, path, names)
        return os.path.normpath(os.path.join(base, node.right.value)) if base is not None else None
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if isinstance(f, ast.Attribute) and name in _PATH_METHODS and not node.args:
        return _folder(f.value, path, names)  # `Path(__file__).resolve()`
    if not node.args:
        return None
    first = _folder(node.args[0], path, names)
    if first is None:
        return None
    if name == "dirname" and len(node.args) == 1:
        return os.path.dirname(first)
    if (name in _SAME or name in _PATH_CALLS) and len(node.args) == 1:
        return os.path.normpath(first)
    if name == "join" and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[1:]):
        return os.path.normpath(os.path.join(first, *(a.value for a in node.args[1:])))
    return None
