"""What the interpreter reports to the rules: a finding with its code, place, message and a fix plan."""

from __future__ import annotations

from dataclasses import dataclass, field

from devflow.model import Span


@dataclass(frozen=True)
class FixPlan:
    """A fix described abstractly; devflow.rules.fixes turns it into text edits (libcst where needed).

    kind: "append" (insert `text` at span end), "add_kwarg" (call at span gets `name=text`),
    "insert_before" (statement `text` before the statement at span, same indentation),
    "insert_after" (statement `text` after the statement at span), "replace" (span -> text),
    "assign" (expression statement at span becomes `name = <expr>`).
    """

    kind: str
    span: Span
    text: str = ""
    name: str = ""
    title: str = ""
    applicability: str = "unsafe"
    anchor: Span | None = None  # "lift": the statement after which `text` is inserted


@dataclass
class Finding:
    code: str
    span: Span
    message: str
    related: list = field(default_factory=list)  # (Span, message)
    fix: FixPlan | None = None
    cancelled: bool = False
