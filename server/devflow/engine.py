"""Entry point of the static device-flow analysis.

Contract: `analyze(source, path=None) -> FileResult` never raises for any input string; it
returns every rule's raw diagnostics (no noqa / select / ignore filtering: `devflow.api` does
that) and the device hints for hover / inlay hints. It never imports torch or user code.
"""

from __future__ import annotations

import ast

from devflow.model import Diagnostic, Edit, Fix, FileResult, Related, Span

_MOVES = {"to", "cuda"}


def _span(node: ast.AST) -> Span:
    return Span(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _dev101_block(stmts: list[ast.stmt], source_lines: list[str], out: list[Diagnostic]) -> None:
    moved: dict[str, tuple[ast.Call, str]] = {}
    for st in stmts:
        call = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in _MOVES:
            recv = call.func.value
            name = recv.id if isinstance(recv, ast.Name) else None
            if isinstance(recv, ast.Call) and isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
            if name:
                moved[name] = (call, ast.get_source_segment("\n".join(source_lines), call) or "")
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Attribute):
            t = st.targets[0]
            if isinstance(t.value, ast.Name) and t.value.id in moved and isinstance(st.value, ast.Call):
                mv, text = moved[t.value.id]
                args = ", ".join(ast.unparse(a) for a in mv.args)
                fix_text = f".{mv.func.attr}({args})"
                end = st.value
                out.append(Diagnostic(
                    code="DEV101",
                    message=f"`{ast.unparse(t)}` is created on cpu after `{t.value.id}` was moved at line {mv.lineno}; "
                            f"it stays on cpu",
                    span=_span(st),
                    related=(Related(_span(mv), f"`{t.value.id}` moved here"),),
                    fix=Fix(f"Move the new module with `{fix_text}`", "safe",
                            (Edit(Span(end.end_lineno, end.end_col_offset, end.end_lineno, end.end_col_offset), fix_text),)),
                ))


def analyze(source: str, path: str | None = None) -> FileResult:
    result = FileResult(path=path)
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        result.error = f"syntax error: {e.msg} (line {e.lineno})"
        line = e.lineno or 1
        result.error_span = Span(line, max((e.offset or 1) - 1, 0), line, max((e.offset or 1) - 1, 0))
        return result
    except Exception as e:  # noqa: BLE001 - never raise
        result.error = f"cannot parse this file: {e}"
        return result
    lines = source.splitlines()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            _dev101_block(body, lines, result.diagnostics)
    return result
