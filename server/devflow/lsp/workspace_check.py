"""`devflow.checkWorkspace` and `devflow.checkFile`: check files on disk (open documents use
their editor text), publish each file's diagnostics, report work-done progress, stop when the
user cancels."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
import uuid
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types

from devflow.lsp import analysis
from devflow.lsp.discovery import discover
from devflow.lsp.disk_files import read_snapshot
from devflow.lsp.documents import uri_to_path
from devflow.lsp.scheduler import CLOSED
from devflow.model import FileResult

log = logging.getLogger("devflow.lsp")


def uris_from_args(args) -> list[str]:
    """Command arguments as a flat list of URIs: `[uri, ...]`, `[[uri, ...]]` or `[{"uri": ...}]`."""
    out: list[str] = []
    for a in args or ():
        if isinstance(a, str):
            out.append(a)
        elif isinstance(a, dict) and isinstance(a.get("uri"), str):
            out.append(a["uri"])
        elif isinstance(a, (list, tuple)):
            out.extend(uris_from_args(a))
    return out


def _open_target_for_path(ls, path: Path) -> str | None:
    for target in ls.open_targets():
        p = uri_to_path(target)
        if p and Path(p).resolve() == path.resolve():
            return target
    return None


async def _check_path(ls, path: Path) -> int:
    target = _open_target_for_path(ls, path)
    if target is not None:  # the editor's text, not the file on disk
        result = await ls.scheduler.latest(target)
        return ls.publish(result) if result else 0
    snapshot, error = read_snapshot(path)
    if error:
        failed = FileResult(path=str(path), error=error)
        failed.error_code = "E902"  # as `devflow check` reports it
        result = analysis.Analysis(snapshot, failed, ls.scheduler.generation, 0.0)
        log.info("devflow: %s: %s", path, error)
    else:
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(ls.executor, ls._run, snapshot, ls.scheduler.generation)
    return ls.publish(result, force=True)


async def check_one(ls, uri: str) -> int:
    target = ls.target_of(uri)
    snapshot = ls.snapshot_of(target) if ls.version_of(target) is not CLOSED else None
    if snapshot is not None:  # open: a fresh run on the editor's text, config re-read
        ls.configs.clear()
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(ls.executor, ls._run, snapshot, ls.scheduler.generation)
        count = sum(len(v) for v in ls.lsp_diagnostics(result).values())
        if ls.version_of(target) == snapshot.version:  # never publish for an older version
            ls.publish(result)
        return count
    path = uri_to_path(uri)
    if path is None:
        raise ValueError(f"devflow.checkFile: not a file URI or open document: {uri}")
    return await _check_path(ls, Path(path))


def _roots(ls, uris: list[str]) -> list[Path]:
    if uris:
        paths = [uri_to_path(u) for u in uris]
        return [Path(p) for p in paths if p]
    folders = [uri_to_path(f.uri) for f in ls.workspace.folders.values()]
    roots = [Path(p) for p in folders if p]
    if not roots and ls.workspace.root_path:
        roots = [Path(ls.workspace.root_path)]
    return roots


def _discover_per_folder(ls, roots: list[Path]) -> list[Path]:
    """The files under `roots`, each root discovered with its own workspace folder's `--config`;
    files of a folder with devflow.enable off, and devflow.exclude'd files, are left out."""
    by_config: dict[str | None, list[Path]] = {}
    for root in roots:
        by_config.setdefault(ls.workspace_settings.for_uri(root.as_uri()).config_path, []).append(root)
    files = [f for config, group in by_config.items() for f in discover(group, ls.configs, config)]
    ws = ls.workspace_settings
    return sorted(f for f in dict.fromkeys(files) if ws.for_uri(f.as_uri()).enable and not ws.excludes(f.as_uri()))


class _Progress:
    """Work-done progress on the token the client sent with the request, else on one the server
    creates (when the client supports that); `cancelled` turns true when the user cancels it."""

    def __init__(self, ls, client_token=None) -> None:
        self.ls = ls
        self.token = client_token
        self._last = 0.0

    async def begin(self, total: int) -> None:
        if self.token is None:
            if not self.ls.supports("window.work_done_progress"):
                return
            token = f"devflow-check-{uuid.uuid4().hex[:8]}"
            # Registered before the request goes out: a client may show the cancel button as soon as
            # it knows the token, and a cancel read in the same batch as the create response would
            # otherwise reach pygls before create_async registers the token, and be dropped.
            tokens = self.ls.work_done_progress.tokens
            tokens[token] = concurrent.futures.Future()
            try:
                await self.ls.protocol.send_request_async(
                    types.WINDOW_WORK_DONE_PROGRESS_CREATE, types.WorkDoneProgressCreateParams(token=token))
            except Exception as e:
                tokens.pop(token, None)
                log.debug("devflow: no progress (%s)", e)
                return
            self.token = token
        self.ls.work_done_progress.begin(self.token, types.WorkDoneProgressBegin(
            title="devflow: checking devices", cancellable=True, message=f"0/{total} files", percentage=0))

    @property
    def cancelled(self) -> bool:
        fut = self.ls.work_done_progress.tokens.get(self.token) if self.token else None
        return bool(fut and fut.cancelled())

    def report(self, done: int, total: int, force: bool = False) -> None:
        now = time.monotonic()
        if self.token and (force or now - self._last > 0.1):
            self._last = now
            self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=f"{done}/{total} files", percentage=int(100 * done / max(total, 1))))

    def end(self, message: str) -> None:
        if self.token:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)


async def check_workspace(ls, uris: list[str], token=None, request_cancelled=lambda: False) -> dict:
    roots = _roots(ls, uris)
    loop = asyncio.get_running_loop()
    files = await loop.run_in_executor(ls.executor, _discover_per_folder, ls, roots)
    progress = _Progress(ls, token)
    await progress.begin(len(files))
    found = done = 0
    cancelled = False
    try:
        for path in files:
            if progress.cancelled or request_cancelled():
                cancelled = True
                break
            try:
                found += await _check_path(ls, path)
            except Exception:
                log.exception("devflow: checking %s failed", path)
            done += 1
            progress.report(done, len(files))
    finally:
        progress.end(f"{done}/{len(files)} files, {found} diagnostics" + (" (cancelled)" if cancelled else ""))
    log.info("devflow: checked %d files under %s: %d diagnostics%s", done,
             ", ".join(unquote(str(r)) for r in roots), found, " (cancelled)" if cancelled else "")
    out = {"files": done, "diagnostics": found}
    if cancelled:
        out["cancelled"] = True
    return out
