"""The editor's open files as the program's text, and re-checks of the files that depend on them.

A project file open in the editor is read by every analysis with its current, maybe unsaved,
text (`analysis.program.set_overlay`), as pyright's program reads open buffers. Each analysis
says which project files it read (`FileResult.depends_on`): when one of them is edited, closed
(its text goes back to the disk's) or changes on disk, every open file whose last analysis read
it is checked again (its own text unchanged), and its new diagnostics are published (push), or the
client is asked to pull again (pull diagnostics). Findings that the scripts importing a file
place in it come from runs of their saved text (`FileResult.depends_on_saved`): such a file is
checked again when one of those scripts is saved or changes on disk, not at each keystroke.
"""

from __future__ import annotations

import logging
import os
from urllib.parse import unquote

from devflow.analysis import program
from devflow.lsp.documents import uri_to_path

log = logging.getLogger("devflow.lsp")


def _path(uri: str) -> str | None:
    path = uri_to_path(uri)
    return os.path.abspath(path) if path and path.endswith((".py", ".pyi")) else None


def opened(ls, uri: str) -> None:
    """A Python document was opened: its text replaces the disk's for every analysis."""
    path = _path(uri)
    doc = ls.workspace.text_documents.get(unquote(uri))
    if path is None or doc is None:
        return
    on_disk = _disk_text(path)
    program.set_overlay(path, doc.source)
    if on_disk != doc.source.lstrip("\ufeff"):
        recheck_dependents(ls, path, uri)


def changed(ls, uri: str) -> None:
    path = _path(uri)
    doc = ls.workspace.text_documents.get(unquote(uri))
    if path is None or doc is None:
        return
    program.set_overlay(path, doc.source)
    recheck_dependents(ls, path, uri)


def closed(ls, uri: str) -> None:
    """Closed (saved or not): analyses read the disk's text again."""
    path = _path(uri)
    if path is None:
        return
    program.drop_overlay(path)
    recheck_dependents(ls, path, uri)


def saved(ls, uri: str) -> None:
    """Saved: files that read its saved text (the scripts importing a file run from the disk) change."""
    path = _path(uri)
    if path is not None:
        recheck_dependents(ls, path, uri, saved=True)


def changed_on_disk(ls, uris: list[str]) -> None:
    """Files changed, created or deleted on disk (the client's file watcher). An open document
    keeps its editor text for imports; what reads saved text sees the change."""
    for uri in uris:
        path = _path(uri)
        if path is not None:
            recheck_dependents(ls, path, uri, saved=True, imports=unquote(uri) not in ls.workspace.text_documents)


def recheck_dependents(ls, path: str, uri: str, saved: bool = False, imports: bool = True) -> None:
    """Check again every open target (other than `uri`'s) whose last analysis read `path`: as an
    import (`imports`), or its saved text (`saved`)."""
    me = ls.target_of(uri) if unquote(uri) in ls.workspace.text_documents else uri
    due = [t for t in ls.open_targets() if t != me and ls.scheduler.reads(t, path, imports, saved)]
    if not due:
        return
    log.debug("devflow: %s changed; checking its dependents again: %s", path, ", ".join(due))
    for target in due:
        ls.scheduler.stale(target)
    if ls.pull_mode:
        if ls.supports("workspace.diagnostics.refresh_support"):
            ls.workspace_diagnostic_refresh(None)
        return
    delay = ls.settings.debounce_ms / 1000
    for target in due:
        ls.scheduler.schedule(target, delay)


def _disk_text(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
