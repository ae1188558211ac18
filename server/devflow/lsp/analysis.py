"""One analysis run: snapshot + settings -> FileResult. Runs on a worker thread, never raises."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from devflow import api
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


def run(snapshot: Snapshot, settings: Settings, configs: ConfigCache, generation: int) -> Analysis:
    start = time.perf_counter()
    try:
        config = configs.for_path(snapshot.path, settings.config_path)
        result = api.check_source(snapshot.source, snapshot.path, config)
        if not isinstance(result, FileResult):
            raise TypeError(f"check_source returned {type(result).__name__}, not FileResult")
        result = replace(result, diagnostics=[d for d in result.diagnostics if settings.selects(d.code)])
    except Exception as e:  # the contract says never raises; the server must survive if it does
        log.exception("devflow: analysis of %s failed", snapshot.uri)
        result = FileResult(path=snapshot.path, error=f"devflow could not analyse this file ({type(e).__name__}: {e})")
    return Analysis(snapshot, result, generation, time.perf_counter() - start)
