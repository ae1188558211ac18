"""`[tool.devflow]` for the files the server checks: the nearest pyproject.toml above a file
(or the one given by `--config`), loaded with `devflow.config.load_config` and cached until a
pyproject.toml changes."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("devflow.lsp")


def nearest_pyproject(path: str | None) -> Path | None:
    if not path:
        return None
    here = Path(path).resolve().parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


class ConfigCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_file: dict[Path | None, Any] = {}

    def clear(self) -> None:
        with self._lock:
            self._by_file.clear()

    def for_path(self, path: str | None, explicit: str | None = None) -> Any:
        """The Config for a file (None: devflow's defaults). Never raises: a broken
        pyproject.toml is logged and the defaults are used."""
        pyproject = Path(explicit) if explicit else nearest_pyproject(path)
        with self._lock:
            if pyproject in self._by_file:
                return self._by_file[pyproject]
        config = self._load(pyproject, path)
        with self._lock:
            self._by_file[pyproject] = config
        return config

    @staticmethod
    def _load(pyproject: Path | None, path: str | None) -> Any:
        try:
            from devflow.config import load_config
        except ImportError:  # the CLI part has not landed: engine defaults
            return None
        try:
            return load_config(str(pyproject) if pyproject else path)
        except Exception as e:  # a bad [tool.devflow] must not stop the linting
            log.warning("devflow: could not read [tool.devflow] from %s: %s; using the defaults", pyproject, e)
            return None
