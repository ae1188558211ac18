"""Read torch's own type stubs (torch/_C/_VariableFunctions.pyi, torch/_C/__init__.pyi): every
overload of a function or Tensor method with its parameters and return annotation."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Overload:
    name: str
    params: list[tuple[str, str]]  # (name, annotation text), positional and keyword, `self` dropped
    varargs: tuple[str, str] | None
    returns: str


def _overloads(fn: ast.FunctionDef, method: bool) -> Overload:
    a = fn.args
    ps = a.posonlyargs + a.args
    if method and ps:
        ps = ps[1:]
    params = [(p.arg, ast.unparse(p.annotation) if p.annotation else "") for p in ps + a.kwonlyargs]
    var = (a.vararg.arg, ast.unparse(a.vararg.annotation) if a.vararg.annotation else "") if a.vararg else None
    return Overload(fn.name, params, var, ast.unparse(fn.returns) if fn.returns else "")


def functions(path: Path) -> dict[str, list[Overload]]:
    out: dict[str, list[Overload]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append(_overloads(node, False))
    return out


def methods(path: Path, cls: str) -> dict[str, list[Overload]]:
    out: dict[str, list[Overload]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for f in node.body:
                if isinstance(f, ast.FunctionDef):
                    out.setdefault(f.name, []).append(_overloads(f, True))
    return out


def is_tensor_annotation(text: str) -> bool:
    return text in ("Tensor", "Self")


def mentions_tensor(text: str) -> bool:
    return "Tensor" in text or text == "Self"


def tensor_sequence(text: str) -> bool:
    return any(s in text for s in ("tuple[Tensor, ...]", "list[Tensor]", "Sequence[Tensor]"))
