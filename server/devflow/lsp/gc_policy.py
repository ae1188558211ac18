"""Garbage collection for an editor server.

A full (generation 2) collection that fires in the middle of an analysis walks every object the
analysis has alive and cost 150-250 ms on a 500-line file: the p95 latency. So automatic
collection is off in the server process; the cycles an analysis leaves are collected right after
its result is published (a few ms at 2,000 lines), bursts coalesced, plus a slow periodic sweep
for whatever the protocol layer leaves. Measured in bench/lsp_latency.py.
"""

from __future__ import annotations

import asyncio
import gc

AFTER_RESULT_S = 0.01
PERIODIC_S = 30.0


class Collector:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending = False

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        gc.disable()
        loop.call_later(PERIODIC_S, self._periodic)

    @staticmethod
    def freeze() -> None:
        """After the startup imports: keep those objects out of every later collection."""
        gc.collect()
        gc.freeze()

    def after_result(self) -> None:
        """An analysis finished (its garbage is now unreachable): collect soon, once per burst."""
        if self._loop is None or self._pending:
            return
        self._pending = True
        self._loop.call_later(AFTER_RESULT_S, self._collect)

    def _collect(self) -> None:
        self._pending = False
        gc.collect()

    def _periodic(self) -> None:
        gc.collect(1)
        self._loop.call_later(PERIODIC_S, self._periodic)
