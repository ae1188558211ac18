"""Operators on instances of the project's own classes run their special methods (Python's data model):
`a op= b` calls `type(a).__iop__(a, b)`, falling back to `a op b`; `a op b` calls `type(a).__op__(a, b)`,
then `type(b).__rop__(b, a)`. A wrapper class with `__imul__` / `__add__` (an exact fixed-point copy of a
tensor, a running statistic, a tensor bundle) moves its tensors in those methods like in any other."""

from __future__ import annotations

import ast

from devflow.analysis.values import Val
from devflow.analysis.interp.frames import FuncRef, method_kind, decorators

_NAMES = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
          ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and", ast.BitOr: "or",
          ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift"}


class Operators:
    """Dispatch of binary and augmented operators to a project class's special methods."""

    def project_operator(self, node, op: ast.operator, left: Val, right: Val, inplace: bool) -> Val | None:
        """The value of `left op right` (`left op= right` when `inplace`) when a project class defines
        the operator; None when neither operand is an instance of one that does."""
        name = _NAMES.get(type(op))
        if name is None:
            return None
        tries = ([(left, f"__i{name}__", right)] if inplace else []) + \
            [(left, f"__{name}__", right), (right, f"__r{name}__", left)]
        for me, method, other in tries:
            found = _method(me, method)
            if found is not None:
                fn, owner = found
                return self.call_function(FuncRef(fn, None, owner, method_kind(decorators(fn), "method")),
                                          [other], {}, me, node)
        return None


def _method(v: Val, name: str):
    """(function node, owner class) of `name` on the class of the project instance `v`, or None."""
    if v.kind not in ("obj", "module") or v.obj is None or v.obj.cls is None:
        return None
    return v.obj.cls.method(name)
