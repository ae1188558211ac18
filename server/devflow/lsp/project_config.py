"""`[tool.devflow]` for the files the server checks: the nearest pyproject.toml with that table
above a file (or the `--config` file), read by `devflow.config.load_config`, cached per folder
until a pyproject.toml changes. A broken table is reported once and the defaults are used."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("devflow.lsp")


class ConfigCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_folder: dict[str, tuple[Any, float | None]] = {}  # folder -> (Config, its file's mtime)
        self._errors: list[str] = []
        self._reported: set[str] = set()

    def clear(self) -> None:
        with self._lock:
            self._by_folder.clear()
            self._reported.clear()

    def take_errors(self) -> list[str]:
        """Config problems not yet shown to the user."""
        with self._lock:
            errors, self._errors = self._errors, []
        return errors

    def for_path(self, path: str | None, explicit: str | None = None) -> Any:
        """The Config for a file (None: the engine's defaults, or no config module). Never raises."""
        key = explicit or (str(Path(path).parent) if path else "")
        with self._lock:
            cached = self._by_folder.get(key)
        if cached is not None and cached[1] == _mtime(getattr(cached[0], "source", None)):
            return cached[0]
        # Not cached, or its pyproject.toml changed on disk: clients that cannot watch files
        # (no didChangeWatchedFiles registration) still get the new settings on the next check.
        config = self._load(explicit or path)
        with self._lock:
            self._by_folder[key] = (config, _mtime(getattr(config, "source", None)))
        return config

    def _load(self, start: str | None) -> Any:
        try:
            from devflow.config import load_config
        except ImportError:
            return None
        if start is None:
            return None  # an untitled buffer: the defaults
        try:
            return load_config(start)
        except Exception as e:  # a bad [tool.devflow] must not stop the linting
            msg = f"devflow: [tool.devflow] is not usable, using the defaults: {e}"
            log.warning("%s", msg)
            with self._lock:
                if msg not in self._reported:
                    self._reported.add(msg)
                    self._errors.append(msg)
            return None


def _mtime(path: str | None) -> float | None:
    if not path:
        return None
    try:
        return Path(path).stat().st_mtime_ns
    except OSError:
        return -1


def nearest_pyproject(path: str | None) -> Path | None:
    if not path:
        return None
    here = Path(path).resolve().parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None
