"""Turning a fix plan into text edits that keep the user's formatting.

Edits are computed only for files that have findings. Adding a keyword argument goes through
libcst (commas, comments and line breaks inside the call are kept); insertions of whole
statements copy the indentation of the statement they follow.
"""

from __future__ import annotations

import ast

from devflow.analysis.findings import FixPlan
from devflow.lines import LINE_BREAK, line_ending, lines_with_ends
from devflow.model import Edit, Fix, Span


class SourceText:
    def __init__(self, source: str):
        self.source = source
        self.lines = lines_with_ends(source)  # Python's line breaks only (not str.splitlines')
        self.newline = line_ending(source)  # inserted lines use the file's own line ending

    def line(self, n: int) -> str:
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def segment(self, span: Span) -> str:
        if span.line == span.end_line:
            return self.line(span.line)[span.col:span.end_col]
        parts = [self.line(span.line)[span.col:]]
        parts += [self.line(n) for n in range(span.line + 1, span.end_line)]
        parts.append(self.line(span.end_line)[:span.end_col])
        return "".join(parts)

    def indent(self, n: int) -> str:
        text = self.line(n)
        return text[: len(text) - len(text.lstrip(" \t"))]


def _block(text: str, indent: str) -> str:
    return "".join(indent + ln + "\n" for ln in text.split("\n"))


def add_kwarg(src: SourceText, span: Span, name: str, value: str) -> Edit | None:
    import libcst as cst  # only files with findings pay for libcst

    seg = src.segment(span)
    try:
        call = cst.parse_expression(seg)
        val = cst.parse_expression(value)
    except Exception:  # noqa: BLE001 - no fix rather than a wrong one
        return None
    if not isinstance(call, cst.Call) or any(a.keyword and a.keyword.value == name for a in call.args):
        return None
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    elif args and isinstance(args[-1].comma, cst.Comma):
        ws = args[-1].comma.whitespace_after
        if isinstance(ws, cst.SimpleWhitespace) and ws.value == "":
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    if any(a.star for a in args):
        # keyword arguments must come before **kwargs
        pos = next(i for i, a in enumerate(args) if a.star == "**") if any(a.star == "**" for a in args) else len(args)
    else:
        pos = len(args)
    new_arg = cst.Arg(keyword=cst.Name(name), value=val, equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if pos < len(args):
        new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.insert(pos, new_arg)
    new = cst.Module([]).code_for_node(call.with_changes(args=args))
    return Edit(span, new)


def wrap_call_end(src: SourceText, span: Span, text: str) -> Edit:
    return Edit(Span(span.end_line, span.end_col, span.end_line, span.end_col), text)


def _moves_a_temporary(text: str) -> bool:
    """`Net().to(device)` as a statement: moves a new object nobody holds; never a fix."""
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return False
    for st in tree.body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute):
            recv = st.value.func.value
            while isinstance(recv, (ast.Attribute, ast.Subscript)):
                recv = recv.value
            if not isinstance(recv, ast.Name):
                return True
    return False


def build_fix(src: SourceText, plan: FixPlan | None) -> Fix | None:
    if plan is None:
        return None
    if plan.kind in ("insert_before", "insert_after") and _moves_a_temporary(plan.text):
        return None
    edits: list[Edit] = []
    sp = plan.span
    if plan.kind == "append":
        edits.append(wrap_call_end(src, sp, plan.text))
    elif plan.kind == "add_kwarg":
        e = add_kwarg(src, sp, plan.name, plan.text)
        if e is None:
            return None
        edits.append(e)
    elif plan.kind == "insert_before":
        edits.append(Edit(Span(sp.line, 0, sp.line, 0), _block(plan.text, src.indent(sp.line))))
    elif plan.kind == "insert_after":
        indent = src.indent(sp.line)
        if sp.end_line >= len(src.lines):
            last = src.line(sp.end_line)
            if last.endswith(("\n", "\r")):
                edits.append(Edit(Span(sp.end_line + 1, 0, sp.end_line + 1, 0), _block(plan.text, indent)))
            else:
                end = len(last)
                edits.append(Edit(Span(sp.end_line, end, sp.end_line, end), "\n" + _block(plan.text, indent).rstrip("\n")))
        else:
            edits.append(Edit(Span(sp.end_line + 1, 0, sp.end_line + 1, 0), _block(plan.text, indent)))
    elif plan.kind == "assign":
        edits.append(Edit(Span(sp.line, sp.col, sp.line, sp.col), f"{plan.name} = "))
    elif plan.kind in ("replace", "remove_move"):
        if plan.kind == "remove_move":
            edits.append(Edit(sp, plan.text))
        else:
            edits.append(Edit(sp, plan.text))
    elif plan.kind == "lift" and plan.anchor is not None:
        edits.append(Edit(sp, f"self.{plan.name}"))
        a = plan.anchor
        edits.append(Edit(Span(a.end_line + 1, 0, a.end_line + 1, 0), _block(plan.text, src.indent(a.line))))
    else:
        return None
    if src.newline != "\n":
        edits = [Edit(e.span, LINE_BREAK.sub(src.newline, e.new_text)) for e in edits]
    return Fix(plan.title or "Apply the fix", plan.applicability, tuple(edits))
