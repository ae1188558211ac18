"""Garbage collection for an editor server.

A full (generation 2) collection that fires in the middle of an analysis walks every object the
analysis has alive and cost 150-250 ms on a 500-line file: the p95 latency. So automatic
collection is off in the server process; the cycles analyses leave are collected once the editor
goes quiet (no new result for IDLE_S), since a collection that overlaps the next analysis (the
user still typing) holds the GIL against it and doubled p95 at 2,000 lines. While results keep
coming, every MAX_DEFERRED-th one collects anyway, or sooner once the analyses held add up to
MAX_RETAINED_LINES of source, so memory stays bounded. A slow periodic sweep
picks up whatever the protocol layer leaves. Measured in bench/lsp_latency.py.

An analysis leaves no cycles of its own (the engine breaks them), so what it leaves is freed by
reference counting alone; its syntax tree and interpreter (tens of thousands of objects, a few
ms to free) are handed over in `retained` and freed along with the collection, off the path
from an edit to its diagnostics. A forced collection frees them all at once: 25 at 2,000 lines
(100 ms, the bench's `max`), 5 at 10,000 lines (25 MB each: counted in results alone, 25 of
them held 680 MB and took 0.5 s to free in a bare process, 2.5-3.6 s in the server). Measured
and rejected: freeing each
run's leftovers right after its result (the next analysis, allocating into the holes of a tree
just freed, ran 20% slower than in the whole empty arenas a batch leaves: p50 56 -> 71 ms at
2,000 lines), and batches of 5 (max 165 -> 110 ms, but p95 62 -> 94 ms: one edit in five waits).

The program cache (analysis/program.py) keeps the project files the analyses import, parsed, for
the life of the server: up to ~600 MB in a large workspace, which every full collection walked
(1.3 s at 15 M characters of source). Once FREEZE_CHARS more have been parsed since the last
time, the survivors of a forced collection are moved out of the collector's sight (`gc.freeze()`,
as after the startup imports); they are still freed by reference counting when the cache lets
them go (a parsed file holds no reference cycle).
"""

from __future__ import annotations

import asyncio
import gc

from devflow.analysis import program

IDLE_S = 0.75
MAX_DEFERRED = 25
MAX_RETAINED_LINES = 50_000
PERIODIC_S = 30.0
FREEZE_CHARS = program.FREEZE_CHARS  # of newly parsed project files: the batch runs' threshold (program.freeze_parsed)


class Collector:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._deferred = 0
        self.retained: list[tuple[int, list]] = []  # (source lines, engine.analyze's `retain`), freed in _collect
        self.frozen_at = 0  # program.cache_stats()["parsed_total"] at the last freeze

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        gc.disable()
        loop.call_later(PERIODIC_S, self._periodic)

    @staticmethod
    def freeze() -> None:
        """After the startup imports: keep those objects out of every later collection."""
        gc.collect()
        gc.freeze()

    def keep(self, lines: int, leftovers: list) -> None:
        """Called on a worker thread when an analysis of `lines` lines is done (list.append is atomic)."""
        self.retained.append((lines, leftovers))

    def after_result(self) -> None:
        """An analysis finished (its garbage is now unreachable): collect when the editor is quiet."""
        if self._loop is None:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._deferred += 1
        if self._deferred >= MAX_DEFERRED or sum(n for n, _ in self.retained) >= MAX_RETAINED_LINES:
            self._collect()
        else:
            self._timer = self._loop.call_later(IDLE_S, self._collect)

    def _collect(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._deferred = 0
        self.retained.clear()
        gc.collect()
        parsed = program.cache_stats()["parsed_total"]
        if parsed - self.frozen_at >= FREEZE_CHARS:
            self.frozen_at = parsed
            gc.freeze()

    def _periodic(self) -> None:
        gc.collect(1)
        self._loop.call_later(PERIODIC_S, self._periodic)
