"""Split the training loop (the outermost loop that calls `.backward()` or `.step()`) into a
Trainer class: what the loop only reads becomes a field set in `__init__` and read as
`self.<field>` (an enclosing method's `self` becomes `self.owner`), what it reads and rebinds is
passed to `run()`, and what it binds and the code around reads is returned."""

from __future__ import annotations

import ast

from .project import NotApplicable, Project
from .scopes import (FUNCS, SCOPES, all_identifiers, chain, fresh, function_locals, has_any, make_function,
                     module_names, parents, reads_and_writes, statement_list, uses_zero_arg_super, walk_scope)

LOOPS = (ast.For, ast.While)
TRAIN_CALLS = {"backward", "step"}


def _trains(loop: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in TRAIN_CALLS
               for n in walk_scope(loop))


class _Fields(ast.NodeTransformer):
    def __init__(self, fields: dict[str, str]):
        self.fields = fields

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.fields:
            return ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=self.fields[node.id], ctx=ast.Load())
        return node

    def generic_visit(self, node):
        if isinstance(node, SCOPES) and not isinstance(node, ast.ClassDef):
            if isinstance(node, FUNCS + (ast.Lambda,)):
                hidden = function_locals(node)
            else:
                hidden = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            if hidden & set(self.fields):
                inner = _Fields({k: v for k, v in self.fields.items() if k not in hidden})
                for fld, val in ast.iter_fields(node):
                    if isinstance(val, list):
                        setattr(node, fld, [inner.visit(x) if isinstance(x, ast.AST) else x for x in val])
                    elif isinstance(val, ast.AST):
                        setattr(node, fld, inner.visit(val))
                return node
        return super().generic_visit(node)


def trainer(proj: Project) -> Project:
    tree = proj.entry_tree
    up = parents(tree)
    loops = [n for n in ast.walk(tree) if isinstance(n, LOOPS) and _trains(n)]
    loops = [lp for lp in loops if not any(isinstance(p, LOOPS) and p in loops for p in chain(lp, up))]
    if not loops:
        raise NotApplicable("no training loop (.backward() / .step())")
    loop = min(loops, key=lambda n: n.lineno)
    outer = chain(loop, up)
    funcs = [p for p in outer if isinstance(p, FUNCS)]
    if any(isinstance(p, ast.ClassDef) for p in (outer[: outer.index(funcs[0])] if funcs else outer)):
        raise NotApplicable("a loop in a class body")
    if has_any([loop], (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)):
        raise NotApplicable("the loop returns, yields or declares globals")
    if uses_zero_arg_super([loop]):
        raise NotApplicable("zero-argument super() in the loop")
    reads, writes = reads_and_writes([loop])
    bound: set[str] = set()
    for f in funcs:
        bound |= function_locals(f)
    if not funcs:
        bound = module_names(tree)
    in_loop = {id(n) for n in ast.walk(loop)}
    around = walk_scope(funcs[0]) if funcs else ast.walk(tree)
    after_loads = {n.id for n in around if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in in_loop}
    scope_nodes = walk_scope(funcs[0]) if funcs else walk_scope(tree)
    before = {n.id for n in scope_nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
              and id(n) not in in_loop and n.lineno < loop.lineno}
    if funcs:
        a = funcs[0].args
        before |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x}
        before |= bound - function_locals(funcs[0])  # enclosing functions' names
    else:
        before |= {s.name for s in tree.body if isinstance(s, FUNCS + (ast.ClassDef,))}
        before |= {(a.asname or a.name).split(".")[0] for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))
                   for a in s.names}
    bound &= before | {n for n in bound if n not in writes}
    kept = sorted((reads & bound) - writes)
    state = sorted(reads & writes & before)
    outs = sorted(writes & after_loads)
    taken = all_identifiers(proj.trees.values())
    fields = {n: (n if n != "self" else fresh("owner", set(kept) | taken)) for n in kept}
    loop = _Fields(fields).visit(loop)
    cls_name = fresh("Trainer", taken)
    init = make_function("__init__", ["self", *(fields[n] for n in kept)],
                         [ast.parse(f"self.{fields[n]} = {fields[n]}").body[0] for n in kept])
    run_body = [loop] + ([ast.parse(f"return {', '.join(outs)}").body[0]] if outs else [])
    run = make_function("run", ["self", *state], run_body)
    cls = ast.parse(f"class {cls_name}:\n    pass").body[0]
    cls.body = [init, run]
    obj = fresh("trainer", taken)
    make = ast.parse(f"{obj} = {cls_name}({', '.join(kept)})").body[0]
    call = ast.parse(f"{obj}.run({', '.join(state)})", mode="eval").body
    site = ast.Expr(value=call) if not outs else ast.parse(f"{', '.join(outs)} = _").body[0]
    if outs:
        site.value = call
    _parent, _fld, seq = statement_list(loop, up)
    at = next(i for i, s in enumerate(seq) if s is loop)
    seq[at:at + 1] = [make, site]
    top = outer[-2] if len(outer) >= 2 else make
    at = next(i for i, s in enumerate(tree.body) if s is top)
    tree.body[at:at] = [cls]
    return proj
