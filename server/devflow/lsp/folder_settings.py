"""Settings per workspace folder (multi-root workspaces), as ruff's native server keeps them.

The client sends the global settings plus one settings object per workspace folder; a document
uses the settings of the innermost folder holding it, and a document outside every folder (or an
untitled buffer) the global ones. Clients that do not send settings are asked with
`workspace/configuration`, one item without a scope and one per folder (scopeUri).

Payload (initializationOptions, didChangeConfiguration): {"settings": {...global...},
"folders": [{"uri": "file:///...", "settings": {...}}, ...]}; each object is read by
`settings.from_client` over the command-line settings, so a folder's object is complete (the
client merges user, workspace and folder values), not a difference from the global one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from devflow.lsp.documents import uri_to_path
from devflow.lsp.excludes import is_excluded
from devflow.lsp.settings import Settings, from_client


def _norm(path: str) -> str:
    return os.path.normcase(os.path.normpath(path))


@dataclass(frozen=True)
class FolderEntry:
    uri: str
    path: str  # normalised (normcase, normpath): compared by prefix
    settings: Settings


@dataclass(frozen=True)
class WorkspaceSettings:
    """The global settings and each folder's; immutable, replaced as a whole on a change."""

    default: Settings
    folders: tuple[FolderEntry, ...] = ()  # innermost (longest path) first

    @staticmethod
    def make(default: Settings, folders: Iterable[tuple[str, Settings]] = ()) -> WorkspaceSettings:
        entries = {}
        for uri, settings in folders:
            path = uri_to_path(uri)
            if path:
                entries[_norm(path)] = FolderEntry(uri, _norm(path), settings)
        ordered = sorted(entries.values(), key=lambda e: len(e.path), reverse=True)
        return WorkspaceSettings(default, tuple(ordered))

    def folder_of(self, uri: str | None) -> FolderEntry | None:
        """The innermost folder holding the file of `uri` (None: outside every folder)."""
        path = uri_to_path(uri) if uri else None
        if not path:
            return None
        path = _norm(path)
        for entry in self.folders:
            if path == entry.path or path.startswith(entry.path.rstrip(os.sep) + os.sep):
                return entry
        return None

    def excludes(self, uri: str | None) -> bool:
        """Whether devflow.exclude (of the file's folder, else the global one) leaves the file out."""
        path = uri_to_path(uri) if uri else None
        if not path:
            return False
        entry = self.folder_of(uri)
        settings = entry.settings if entry is not None else self.default
        return is_excluded(path, entry.path if entry is not None else None, settings.exclude)

    def for_uri(self, uri: str | None) -> Settings:
        """The settings that apply to a document, notebook or folder URI."""
        entry = self.folder_of(uri)
        return entry.settings if entry is not None else self.default

    def with_folders(self, folders: Iterable[tuple[str, Settings]]) -> WorkspaceSettings:
        return WorkspaceSettings.make(self.default, folders)

    def without(self, uris: Iterable[str]) -> WorkspaceSettings:
        """Removed workspace folders: their files fall back to an enclosing folder or the global settings."""
        gone = {_norm(p) for p in (uri_to_path(u) for u in uris) if p}
        return WorkspaceSettings(self.default, tuple(e for e in self.folders if e.path not in gone))

    def all(self) -> list[tuple[str | None, Settings]]:
        """(folder URI or None for the global settings, settings), for logs and debug output."""
        return [(None, self.default)] + [(e.uri, e.settings) for e in self.folders]


def is_payload(raw: Any) -> bool:
    """Whether `raw` is a settings payload the server understands (else it pulls)."""
    return isinstance(raw, dict) and (isinstance(raw.get("settings"), dict) or isinstance(raw.get("folders"), list))


def from_payload(raw: dict, cli: Settings, previous: WorkspaceSettings | None = None) -> WorkspaceSettings:
    """The client's payload (see the module docstring) over the command-line settings. A payload
    without "folders" (an older client) keeps no per-folder settings: everything uses the global ones."""
    default = from_client(raw.get("settings"), cli) if isinstance(raw.get("settings"), dict) else (
        previous.default if previous else cli)
    folders = []
    for item in raw.get("folders") or ():
        if isinstance(item, dict) and isinstance(item.get("uri"), str) and isinstance(item.get("settings"), dict):
            folders.append((item["uri"], from_client(item["settings"], cli)))
    return WorkspaceSettings.make(default, folders)


def from_configuration(default_raw: Any, folder_uris: list[str], folder_raws: list[Any], cli: Settings) -> WorkspaceSettings:
    """The answers of a `workspace/configuration` request: the unscoped item, then one per folder
    (a folder whose answer is not an object uses the global settings)."""
    default = from_client(default_raw, cli)
    folders = [(uri, from_client(raw, cli) if isinstance(raw, dict) else default)
               for uri, raw in zip(folder_uris, folder_raws)]
    return WorkspaceSettings.make(default, folders)
