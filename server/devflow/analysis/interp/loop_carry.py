"""Values a loop body binds reach the body's next pass.

A loop body runs once over the abstract state; a name it rebinds is read again at the top of the next
iteration (a decoding loop's `last_action = self.choose(...)`, a recurrent state re-made each step), and so
is an attribute it stores (`self.last = ...`, the object being the same on every iteration). When the first
pass rebinds a tensor name or attribute to a device that definitely differs from the one it had on entry,
the body runs a second time from the state the first pass left, so what the next iteration meets is checked.
Only then: a body whose names keep their devices gains nothing from a second pass and costs a walk. The
state after the loop stays that of one pass; the second pass only checks.
"""

from __future__ import annotations

import ast

from devflow.analysis.lattice import definitely_differ

def rebinds_device(before: dict, after: dict) -> bool:
    """A name (or attribute) bound to a tensor on entry is, after one pass, a tensor on a device that
    definitely differs."""
    for key, now in after.items():
        was = before.get(key)
        if was is None or now is None or was is now or was.kind != "tensor" or now.kind != "tensor":
            continue
        if definitely_differ(was.dev, now.dev):
            return True
    return False


def stored_attributes(st) -> list[tuple[str, str]]:
    """`name.attr` targets the loop body assigns (not in nested functions or classes). Not cached: a table keyed
    by node would hold every edit's tree alive in the language server, and the tree is never written to."""
    out, stack = [], list(st.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and (t.value.id, t.attr) not in out:
                out.append((t.value.id, t.attr))
        stack.extend(ast.iter_child_nodes(n))
    return out


def attribute_values(pairs, env: dict) -> dict:
    """The current values of `name.attr` for objects the names hold (None where not known)."""
    out = {}
    for name, attr in pairs:
        v = env.get(name)
        if v is not None and v.kind in ("obj", "module") and v.obj is not None:
            out[(name, attr)] = v.obj.attrs.get(attr)
    return out


def leaves_after_one_pass(body: list) -> bool:
    """The body ends in `break` / `return` / `raise`: the loop never reaches a second iteration."""
    return bool(body) and isinstance(body[-1], (ast.Break, ast.Return, ast.Raise))


def at_most_one_element(node, it) -> bool:
    """A `for` over at most one element: a list / tuple known item by item with one or none, or `range(...)`
    of constant bounds that counts at most one."""
    if it is not None and it.kind == "obj" and it.obj is not None and it.obj.kind in ("list", "tuple") \
            and it.elem is None and len(it.obj.items) <= 1:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" and not node.keywords \
            and 1 <= len(node.args) <= 3 and all(isinstance(a, ast.Constant) and type(a.value) is int for a in node.args):
        bounds = [a.value for a in node.args]
        return (bounds[-1] != 0 if len(bounds) == 3 else True) and len(range(*bounds)) <= 1
    return False


class LoopCarry:
    """The second pass of a loop body whose first pass changed a tensor name's (or attribute's) device."""

    def loop_entry(self, st, before: dict) -> tuple[dict, dict]:
        """The state a loop starts from: its names (`before`, a copy of the frame's), and the attributes
        its body stores."""
        return before, attribute_values(stored_attributes(st), before)

    def run_next_pass(self, st, frame, entry: tuple[dict, dict], rebind=None, it=None) -> None:
        """`it`: what a `for` iterates over (its node is `st.iter`)."""
        before, attrs = entry
        if leaves_after_one_pass(st.body) or (isinstance(st, (ast.For, ast.AsyncFor)) and at_most_one_element(st.iter, it)):
            return
        if not rebinds_device(before, frame.env) and \
                not (attrs and rebinds_device(attrs, attribute_values(list(attrs), frame.env))):
            return
        first = frame.env
        frame.env = dict(first)
        if rebind is not None:
            rebind()  # the loop target: the next element
        self.exec_block(st.body, frame)
        frame.env = first
