"""A time budget per file for the analysis, honoured through the interpreter's step budget.

The interpreter already stops following statements and calls once its step budget (an int it
decrements and compares with 0) runs out. `with_deadline` returns that budget as an int that also
reads as 0 once a `time.monotonic()` deadline has passed (looked at every 256 steps), so the
interpreter stops in time without knowing about clocks. An editor server uses it so that one
pathological file cannot hold a worker for tens of seconds; the result then says it is partial.
"""

from __future__ import annotations

import time

CHECK_EVERY = 256  # steps between two looks at the clock (a step is a statement or a call)


def with_deadline(steps: int, deadline: float | None) -> int:
    if deadline is None:
        return steps

    class Budget(int):
        __slots__ = ()

        def __sub__(self, n):
            left = int(self) - n
            if left // CHECK_EVERY != int(self) // CHECK_EVERY and time.monotonic() > deadline:
                return Budget(0)
            return Budget(left)

    return Budget(steps)


def passed(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline
