"""Extract each buggy (cause) statement into a helper, one or two calls deep: a method of the
same class when the statement sits in a method (so `self` and zero-arg `super()` keep working),
else a module-level function. The locals it reads become parameters, the names it binds are
returned and re-bound at the call site. The call sites keep the bug's label as well: a report
at the call that leads to the bug counts as a report on the moved line."""

from __future__ import annotations

import ast

from .project import TAG, NotApplicable, Project, tag
from .scopes import (FUNCS, all_identifiers, chain, function_locals, fresh, make_function, module_names,
                     parents, reads_and_writes, statement_list, uses_zero_arg_super)

SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)


def _receiver(fn: ast.AST, up: dict) -> str | None:
    """The first parameter of a plain method (not static / class method)."""
    if not isinstance(fn, FUNCS) or not isinstance(up.get(fn), ast.ClassDef):
        return None
    if any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list):
        return None
    params = fn.args.posonlyargs + fn.args.args
    return params[0].arg if params else None


def _call(func: str, receiver: str | None, params: list[str]) -> ast.expr:
    prefix = f"{receiver}." if receiver else ""
    return ast.parse(f"{prefix}{func}({', '.join(params)})", mode="eval").body


def _extract_one(tree: ast.Module, stmt: ast.stmt, depth: int, taken: set[str]) -> None:
    up = parents(tree)
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
        raise NotApplicable("a bare annotation")
    outer = chain(stmt, up)
    funcs = [p for p in outer if isinstance(p, FUNCS + (ast.Lambda,))]
    until_function = outer[: outer.index(funcs[0])] if funcs else outer
    if any(isinstance(p, ast.ClassDef) for p in until_function):
        raise NotApplicable("a class-body statement")
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)) for n in ast.walk(stmt)):
        raise NotApplicable("yield / await / global in the statement")
    reads, writes = reads_and_writes([stmt])
    bound: set[str] = set()
    for f in funcs:
        bound |= function_locals(f)
    if funcs:
        declared = {x for n in ast.walk(funcs[0]) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}
        if writes & declared:
            raise NotApplicable("the statement binds a global / nonlocal name")
    module = module_names(tree)
    receiver = _receiver(funcs[0], up) if funcs else None
    if uses_zero_arg_super([stmt]) and receiver is None:
        raise NotApplicable("zero-argument super() outside a method")
    params = sorted(((reads & bound) | (reads & writes & (bound | module))) - {receiver})
    returns = sorted(writes)
    if isinstance(stmt, ast.Return):
        if stmt.value is None:
            raise NotApplicable("a bare return")
        inner_body = [ast.Return(value=stmt.value)]
        setattr(inner_body[0], TAG, set(getattr(stmt, TAG)))
    else:
        inner_body = [stmt]
        if returns:
            inner_body.append(ast.parse(f"return {', '.join(returns)}").body[0])
    names = [fresh(("_helper" if receiver else "helper") + ("_inner" if depth == 2 else ""), taken)]
    if depth == 2:
        names.insert(0, fresh("_helper" if receiver else "helper", taken))
    self_params = [receiver] if receiver else []
    helpers = []
    for i, name in enumerate(names):
        if i + 1 < len(names):
            call = ast.Return(value=_call(names[i + 1], receiver, params))
            tag(call, getattr(stmt, TAG))
            body = [call]
        else:
            body = inner_body
        helpers.append(make_function(name, self_params + params, body))
    # the call site
    call = _call(names[0], receiver, params)
    if isinstance(stmt, ast.Return):
        site: ast.stmt = ast.Return(value=call)
    elif returns:
        target = ", ".join(returns)
        site = ast.parse(f"{target} = _").body[0]
        site.value = call
    else:
        site = ast.Expr(value=call)
    tag(site, getattr(stmt, TAG))
    _parent, _fld, seq = statement_list(stmt, up)
    seq[next(i for i, s in enumerate(seq) if s is stmt)] = site
    if receiver:
        method = funcs[0]
        cls_body = up[method].body
        at = next(i for i, s in enumerate(cls_body) if s is method) + 1
        cls_body[at:at] = helpers
    else:
        top = outer[-2] if len(outer) >= 2 else stmt  # the module-level statement around it
        at = next(i for i, s in enumerate(tree.body) if s is top or s is site)
        tree.body[at:at] = helpers


def extract(proj: Project, depth: int) -> Project:
    taken = all_identifiers(proj.trees.values())
    done, why = 0, []
    for tree in proj.trees.values():
        targets = [n for n in ast.walk(tree) if getattr(n, TAG, None) and getattr(n, TAG) & proj.causes]
        for stmt in targets:
            if not isinstance(stmt, SIMPLE):
                why.append(f"{type(stmt).__name__} is not a simple statement")
                continue
            try:
                _extract_one(tree, stmt, depth, taken)
                done += 1
            except NotApplicable as e:
                why.append(str(e))
    if not done:
        raise NotApplicable("; ".join(why) or "no cause statement")
    return proj
