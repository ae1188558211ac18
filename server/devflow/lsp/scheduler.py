"""Debounced, versioned analysis off the event loop.

Each target (a document or a notebook) has at most one analysis running on the worker pool. An
edit during a run marks the target for one more run with the newest text; a result whose
version (or settings generation) is no longer current is dropped, never published. A settings
change can invalidate every target or only some (one workspace folder's documents). Results are
also keyed by the document's open generation: a document closed and opened again starts a new
one, so a run of the old text is dropped even when the reopened text has the same version number.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

from devflow.lsp.analysis import Analysis
from devflow.lsp.documents import Snapshot

log = logging.getLogger("devflow.lsp")
CLOSED = object()  # version_of() for a target that is no longer open


@dataclass
class _State:
    """One open generation of a target: created at its first schedule after an open, dropped
    at close (`forget`); a run's result is published only while its state is still current."""

    timer: asyncio.TimerHandle | None = None
    running: asyncio.Future | None = None
    rerun: bool = False
    cache: Analysis | None = None
    floor: int = 0  # results stamped with an older generation than this are stale (per-target invalidation)
    # Bumped when a file this target's analysis read has changed (`stale`): a run started before
    # that is dropped like a superseded version, although the target's own version is the same.
    inputs: int = 0
    depends_on: frozenset = frozenset()  # the project files its last published analysis read
    depends_on_saved: frozenset = frozenset()  # files whose saved text it read (importers' runs)


class Scheduler:
    def __init__(
        self,
        executor: Executor,
        snapshot_of: Callable[[str], Snapshot | None],
        version_of: Callable[[str], object],
        run: Callable[[Snapshot, int], Analysis],
        on_result: Callable[[Analysis], None],
    ) -> None:
        self._executor = executor
        self._snapshot_of = snapshot_of
        self._version_of = version_of
        self._run = run
        self._on_result = on_result
        self._states: dict[str, _State] = {}
        self.generation = 0  # the stamp of new runs; bumped when settings or config change
        self._floor = 0  # results stamped below this are stale for every target

    def _state(self, target: str) -> _State:
        return self._states.setdefault(target, _State())

    def cached(self, target: str) -> Analysis | None:
        st = self._states.get(target)
        if st and st.cache and self._is_current(st.cache):
            return st.cache
        return None

    def _is_current(self, analysis: Analysis) -> bool:
        st = self._states.get(analysis.snapshot.uri)
        floor = max(self._floor, st.floor if st else 0)
        return (
            analysis.settings_generation >= floor
            and self._version_of(analysis.snapshot.uri) == analysis.snapshot.version
        )

    def schedule(self, target: str, delay_s: float) -> None:
        """Analyse `target` after `delay_s` seconds without a newer call for it (the debounce)."""
        st = self._state(target)
        if st.timer:
            st.timer.cancel()
        loop = asyncio.get_running_loop()
        if delay_s <= 0:
            st.timer = None
            self._start(target)
        else:
            st.timer = loop.call_later(delay_s, self._start, target)

    def invalidate(self, targets: list[str] | None = None) -> None:
        """Results computed so far are stale: of every target (None), or of `targets` only."""
        self.generation += 1
        if targets is None:
            self._floor = self.generation
            return
        for target in targets:
            self._state(target).floor = self.generation

    def reads(self, target: str, path: str, imports: bool = True, saved: bool = False) -> bool:
        """Whether `target`'s last analysis read `path`: as an imported project file (its editor or
        disk text), or its saved text (the runs of scripts that import `target`)."""
        st = self._states.get(target)
        if st is None:
            return False
        return (imports and path in st.depends_on) or (saved and path in st.depends_on_saved)

    def stale(self, target: str) -> None:
        """A file `target`'s analysis read has changed: its result is no longer current (pulls and
        hovers compute it again; a run in flight is dropped). The caller schedules the re-check."""
        st = self._states.get(target)
        if st is not None:
            st.inputs += 1
            st.cache = None

    def forget(self, target: str) -> None:
        st = self._states.pop(target, None)
        if st and st.timer:
            st.timer.cancel()

    def _start(self, target: str) -> None:
        st = self._state(target)
        st.timer = None
        if st.running is not None:
            st.rerun = True  # picked up when the current run ends; its result will be stale
            return
        snapshot = self._snapshot_of(target)
        if snapshot is None:
            self._states.pop(target, None)
            return
        loop = asyncio.get_running_loop()
        st.running = loop.run_in_executor(self._executor, self._run, snapshot, self.generation)
        inputs = st.inputs
        st.running.add_done_callback(lambda fut: self._done(target, st, fut, inputs))

    def _done(self, target: str, st: _State, fut: asyncio.Future, inputs: int = 0) -> None:
        st.running = None
        try:
            analysis = fut.result()
        except BaseException as e:  # run() never raises; a cancelled pool at shutdown might
            log.debug("devflow: analysis of %s did not finish: %r", target, e)
            return
        if self._states.get(target) is not st:  # closed (and maybe reopened) since the run began
            log.debug("devflow: dropped a result for %s from before it was closed", target)
        elif inputs != st.inputs:
            log.debug("devflow: dropped a result for %s: a file it imports changed during the run", target)
            st.rerun = True
        elif self._is_current(analysis):
            st.cache = analysis
            st.depends_on = frozenset(getattr(analysis.result, "depends_on", ()) or ())
            st.depends_on_saved = frozenset(getattr(analysis.result, "depends_on_saved", ()) or ())
            try:
                self._on_result(analysis)
            except Exception:
                log.exception("devflow: publishing diagnostics for %s failed", target)
        else:
            log.debug("devflow: dropped a superseded result for %s (version %s)", target, analysis.snapshot.version)
        if st.rerun and self._states.get(target) is st:
            st.rerun = False
            self._start(target)

    async def latest(self, target: str) -> Analysis | None:
        """The analysis of the current text of `target`, computed now if needed (pull
        diagnostics, code actions, hover). None if the target is not open."""
        for _ in range(20):
            if self._version_of(target) is CLOSED:
                return None
            st = self._state(target)
            if st.cache and self._is_current(st.cache):
                return st.cache
            if st.timer:
                st.timer.cancel()
                st.timer = None
            if st.running is None:
                self._start(target)
            running = st.running
            if running is None:
                return None
            try:
                await asyncio.shield(running)
            except Exception:
                pass
            await asyncio.sleep(0)  # let _done run first
        st = self._states.get(target)
        return st.cache if st is not None else None
