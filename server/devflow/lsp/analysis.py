"""One analysis run: snapshot + settings -> FileResult. Runs on a worker thread, never raises."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from devflow.lsp.documents import Snapshot
from devflow.lsp.project_config import ConfigCache
from devflow.lsp.settings import Settings
from devflow.model import FileResult

log = logging.getLogger("devflow.lsp")


@dataclass(frozen=True)
class Analysis:
    """A FileResult together with the exact snapshot it was computed from."""

    snapshot: Snapshot
    result: FileResult
    settings_generation: int
    seconds: float


def warm_up() -> None:
    """Import the engine (libcst and all) on a worker thread while the editor sets up, so that
    `initialize` is answered at once and the first analysis does not pay for it."""
    import devflow.api  # noqa: F401

    from devflow.lsp.gc_policy import Collector

    Collector.freeze()


def with_settings(config, settings: Settings):
    """The editor's --select / --ignore on top of the file's config, as on the command line."""
    if config is None or not (settings.select or settings.ignore):
        return config
    try:
        return config.with_overrides(select=list(settings.select) or None, ignore=list(settings.ignore) or None)
    except Exception as e:
        log.warning("devflow: ignoring the editor's select/ignore options: %s", e)
        return config


def _filter(diagnostics, config, path, settings: Settings):
    """select / ignore / severity again on top of check_source (idempotent), so that the editor's
    options and a reloaded config always apply."""
    out = []
    for d in diagnostics:
        if not settings.selects(d.code):
            continue
        if config is not None and hasattr(config, "is_enabled"):
            if not config.is_enabled(d.code, path):
                continue
            d = replace(d, severity=config.severity_for(d.code, d.severity))
        out.append(d)
    return out


def run(snapshot: Snapshot, settings: Settings, configs: ConfigCache, generation: int,
        retain: list | None = None, roots: tuple[str, ...] = ()) -> Analysis:
    start = time.perf_counter()
    try:
        from devflow import api

        config = with_settings(configs.for_path(snapshot.path, settings.config_path), settings)
        deadline = time.monotonic() + settings.time_budget_ms / 1000 if settings.time_budget_ms else None
        result = api.check_source(snapshot.source, snapshot.path, config, retain, deadline, roots)
        if not isinstance(result, FileResult):
            raise TypeError(f"check_source returned {type(result).__name__}, not FileResult")
        code = getattr(result, "error_code", None)  # not a field: replace() would drop it
        result = replace(result, diagnostics=_filter(result.diagnostics, config, snapshot.path, settings))
        # A cell that does not parse is told like a file devflow skipped: information, not a finding.
        api.with_cell_errors(result, snapshot.joined or snapshot.disk_joined, "info")
        if code is not None:
            result.error_code = code
    except Exception as e:  # the contract says never raises; the server must survive if it does
        log.exception("devflow: analysis of %s failed", snapshot.uri)
        result = FileResult(path=snapshot.path, error=f"devflow could not analyse this file ({type(e).__name__}: {e})")
        result.error_code = "E000"  # an internal error, as the CLI calls it
    return Analysis(snapshot, result, generation, time.perf_counter() - start)
