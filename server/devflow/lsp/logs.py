"""Server logs to the client's `window/logMessage` (its output panel); stdout is the LSP stream."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

_TYPES = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
    logging.DEBUG: types.MessageType.Log,
}
LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}


class ClientLogHandler(logging.Handler):
    """Forwards records to the client; safe to call from worker threads."""

    def __init__(self, server, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._server = server
        self._loop = loop
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = self.format(record)
            kind = next((t for lvl, t in _TYPES.items() if record.levelno >= lvl), types.MessageType.Log)
            params = types.LogMessageParams(type=kind, message=msg)
            self._loop.call_soon_threadsafe(self._server.window_log_message, params)
        except Exception:  # logging must never take the server down
            pass


def install(server, loop: asyncio.AbstractEventLoop, level: str) -> None:
    log = logging.getLogger("devflow")
    for h in list(log.handlers):
        if isinstance(h, ClientLogHandler):
            log.removeHandler(h)
    log.addHandler(ClientLogHandler(server, loop))
    log.setLevel(LEVELS.get(level, logging.INFO))
    log.propagate = False
