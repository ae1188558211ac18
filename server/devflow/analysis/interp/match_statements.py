"""A `match` statement runs the body of the first case whose pattern matches its subject (and whose guard
holds), or none. It is run as the `if` / `elif` chain it amounts to, so a subject known to be one constant
decides the case and an unknown one makes every case a path: FLAMO's Biquad builds its stability map in
`match self.filter_type: case "lowpass" | "highpass": self.map = lambda x: torch.clamp(...)`, which was not run
at all. A value pattern (`case "lowpass"`, `case Kind.A`) tests `subject == value`, `None` / `True` / `False`
test identity, `p | q` either; a wildcard or a bare capture (`case _`, `case other`) always matches (a capture
binds the subject first). Class, sequence and mapping patterns are tests the analysis does not decide (their
captures stay unbound). The chain is built once per statement and kept on the interpreter of the check."""

from __future__ import annotations

import ast

_UNDECIDED = "__devflow_match_pattern__"  # a name bound nowhere: its test is neither true nor false


def match_as_ifs(st: ast.Match, cache: dict) -> list:
    """The statements equivalent to `st`: an `if` / `elif` chain over its cases (built once per statement)."""
    got = cache.get(id(st))
    if got is not None and got[0] is st:
        return got[1]
    chain: list = []
    for case in reversed(st.cases):
        test, binds = _pattern_test(case.pattern, st.subject)
        body = [ast.copy_location(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=st.subject), case.pattern)
                for n in binds] + list(case.body)
        if case.guard is not None:
            test = case.guard if test is None else ast.BoolOp(op=ast.And(), values=[test, case.guard])
        if test is None:  # always matches: the cases after it never run
            chain = body
        else:
            chain = [ast.copy_location(ast.If(test=test, body=body, orelse=chain), case.pattern)]
    for n in ast.walk(ast.Module(body=chain, type_ignores=[])):
        if isinstance(n, (ast.expr, ast.stmt)) and not hasattr(n, "lineno"):
            ast.copy_location(n, st)
    cache[id(st)] = (st, chain)
    return chain


def _pattern_test(p: ast.pattern, subject: ast.expr) -> tuple[ast.expr | None, list[str]]:
    """The test of pattern `p` on `subject` (None: always matches) and the names it binds to the subject."""
    if isinstance(p, ast.MatchAs) and p.pattern is None:
        return None, ([p.name] if p.name else [])
    if isinstance(p, ast.MatchValue):
        return ast.Compare(left=subject, ops=[ast.Eq()], comparators=[p.value]), []
    if isinstance(p, ast.MatchSingleton):
        return ast.Compare(left=subject, ops=[ast.Is()], comparators=[ast.Constant(value=p.value)]), []
    if isinstance(p, ast.MatchOr):
        tests = [_pattern_test(q, subject) for q in p.patterns]
        if all(t is not None and not b for t, b in tests):
            return ast.BoolOp(op=ast.Or(), values=[t for t, _ in tests]), []
    return ast.Name(id=_UNDECIDED, ctx=ast.Load()), []
