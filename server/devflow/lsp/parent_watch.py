"""Exit when the editor that started the server is gone (it crashed or was killed without a
`shutdown`), instead of lingering as an orphan: `initialize` gives the editor's process id."""

from __future__ import annotations

import asyncio
import logging
import os

log = logging.getLogger("devflow.lsp")
INTERVAL_S = 5.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists but not ours to signal (or not checkable here): assume alive
    return True


def watch(loop: asyncio.AbstractEventLoop, pid: int | None) -> None:
    if not pid or pid == os.getpid():
        return

    def check() -> None:
        if _alive(pid):
            loop.call_later(INTERVAL_S, check)
        else:
            log.warning("devflow: the editor (process %d) is gone; exiting", pid)
            os._exit(0)

    loop.call_later(INTERVAL_S, check)
