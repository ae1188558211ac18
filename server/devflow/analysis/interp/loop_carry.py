"""Values a loop body binds reach the body's next pass.

A loop body runs once over the abstract state; a name it rebinds is read again at the top of the next
iteration (a decoding loop's `last_action = self.choose(...)`, a recurrent state re-made each step). When
the first pass rebinds a tensor name to a device that definitely differs from the one it had on entry, the
body runs a second time from the state the first pass left, so what the next iteration meets is checked.
Only then: a body whose names keep their devices gains nothing from a second pass and costs a walk. The
state after the loop stays that of one pass; the second pass only checks.
"""

from __future__ import annotations

import ast

from devflow.analysis.lattice import definitely_differ


def rebinds_device(before: dict, after: dict) -> bool:
    """A name bound to a tensor on entry is, after one pass, a tensor on a device that definitely differs."""
    for name, now in after.items():
        was = before.get(name)
        if was is None or was is now or was.kind != "tensor" or now.kind != "tensor":
            continue
        if definitely_differ(was.dev, now.dev):
            return True
    return False


def leaves_after_one_pass(body: list) -> bool:
    """The body ends in `break` / `return` / `raise`: the loop never reaches a second iteration."""
    return bool(body) and isinstance(body[-1], (ast.Break, ast.Return, ast.Raise))


class LoopCarry:
    """The second pass of a loop body whose first pass changed a tensor name's device."""

    def run_next_pass(self, st, frame, before: dict, rebind=None) -> None:
        if leaves_after_one_pass(st.body) or not rebinds_device(before, frame.env):
            return
        first = frame.env
        frame.env = dict(first)
        if rebind is not None:
            rebind()  # the loop target: the next element
        self.exec_block(st.body, frame)
        frame.env = first
