"""The rule interface and the per-file context every rule reads."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.index import FileIndex
from devflow.rules.registry import RULES, RuleInfo


@dataclass
class Context:
    tree: ast.Module
    source: str
    index: FileIndex
    interp: object  # devflow.analysis.interp.Interpreter
    by_code: dict[str, list[Finding]] = field(default_factory=dict)

    def findings(self, code: str) -> list[Finding]:
        return [f for f in self.by_code.get(code, []) if not f.cancelled]

    def qual(self, node: ast.AST) -> str:
        d = FileIndex.dotted(node)
        return self.index.qualify(d) if d else ""

    def text(self, node: ast.AST) -> str:
        return self.interp.text(node)

    def nn_prefix(self) -> str:
        for alias, full in self.index.aliases.items():
            if full == "torch.nn":
                return alias
        return "torch.nn"


class Rule:
    """One rule: a code from the registry and `check(ctx)` returning findings with fix plans."""

    code = ""

    @property
    def info(self) -> RuleInfo:
        return RULES[self.code]

    def check(self, ctx: Context) -> list[Finding]:
        return ctx.findings(self.code)


def kw(call: ast.Call, name: str) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def span(node: ast.AST):
    from devflow.analysis.interp import span_of
    return span_of(node)


__all__ = ["Context", "Rule", "Finding", "FixPlan", "kw", "span"]
