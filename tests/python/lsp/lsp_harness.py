"""End-to-end harness for the language server: a pytest-lsp client driving the real
`python -m devflow serve` process, with the capabilities of a real editor profile and a chosen
position encoding."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities
from pygls.protocol import default_converter
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient, register_lsp_features

ROOT = Path(__file__).resolve().parents[3]
PROFILES = ["visual-studio-code", "neovim", "emacs"]
ENCODINGS = ["utf-8", "utf-16", "utf-32"]
SERVER_CMD = [sys.executable, "-m", "devflow", "serve"]

CANONICAL = (ROOT / "tests" / "fixtures" / "canonical.py").read_text()
HEAD_LINE = 6  # 0-based line of `model.head = ...` in CANONICAL


# -- independent position arithmetic (the server has its own; these check it) ----------------
def units_to_index(line: str, units: int, encoding: str) -> int:
    if encoding == "utf-32":
        return units
    codec, width = ("utf-8", 1) if encoding == "utf-8" else ("utf-16-le", 2)
    return len(line.encode(codec)[: units * width].decode(codec))


def index_to_units(line: str, index: int, encoding: str) -> int:
    if encoding == "utf-32":
        return index
    codec, width = ("utf-8", 1) if encoding == "utf-8" else ("utf-16-le", 2)
    return len(line[:index].encode(codec)) // width


def offset(text: str, pos: types.Position, encoding: str) -> int:
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: pos.line])
    return start + units_to_index(lines[pos.line], pos.character, encoding)


def apply_text_edits(text: str, edits, encoding: str) -> str:
    spans = sorted(((offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e.new_text) for e in edits), reverse=True)
    for s, e, new in spans:
        text = text[:s] + new + text[e:]
    return text


def edits_for(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    if edit.document_changes:
        return [e for dc in edit.document_changes if dc.text_document.uri == uri for e in dc.edits]
    return list((edit.changes or {}).get(uri, []))


class Session:
    """One client + one server process."""

    def __init__(self, client, encoding: str, pull: bool):
        self.client = client
        self.encoding = encoding
        self.pull = pull
        self.published: list[types.PublishDiagnosticsParams] = []
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}

    # documents
    def open(self, uri: str, text: str, language: str = "python") -> None:
        self.texts[uri], self.versions[uri] = text, 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))

    def change(self, uri: str, edits: list[types.TextEdit]) -> int:
        """Incremental didChange with the given edits (applied in order)."""
        self.versions[uri] += 1
        for e in edits:
            self.texts[uri] = apply_text_edits(self.texts[uri], [e], self.encoding)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangePartial(range=e.range, text=e.new_text) for e in edits]))
        return self.versions[uri]

    def replace_all(self, uri: str, text: str) -> int:
        lines = self.texts[uri].split("\n")
        end = types.Position(len(lines) - 1, index_to_units(lines[-1], len(lines[-1]), self.encoding))
        return self.change(uri, [types.TextEdit(types.Range(types.Position(0, 0), end), text)])

    def apply(self, edit: types.WorkspaceEdit) -> None:
        """Apply a server's WorkspaceEdit as an editor does: one didChange per document."""
        uris = [dc.text_document.uri for dc in edit.document_changes] if edit.document_changes else list(edit.changes or {})
        for uri in dict.fromkeys(uris):
            new = apply_text_edits(self.texts[uri], edits_for(edit, uri), self.encoding)
            self.replace_all(uri, new)

    # diagnostics
    async def diagnostics(self, uri: str, timeout: float = 20.0) -> list[types.Diagnostic]:
        """The diagnostics of the current version: pulled, or the push for that version."""
        if self.pull:
            report = await self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri)))
            return list(report.items)
        want = self.versions.get(uri)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in reversed(self.published):
                if p.uri == uri:
                    if want is None or p.version == want:
                        return list(p.diagnostics)
                    break
            await asyncio.sleep(0.01)
        raise AssertionError(f"no diagnostics for {uri} version {want}; got {[(p.uri, p.version) for p in self.published]}")

    async def wait_published(self, uri: str, pred, timeout: float = 20.0) -> types.PublishDiagnosticsParams:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.published:
                if p.uri == uri and pred(p):
                    return p
            await asyncio.sleep(0.01)
        raise AssertionError(f"no matching publish for {uri}: {[(p.uri, p.version, len(p.diagnostics)) for p in self.published]}")

    async def code_actions(self, uri: str, rng: types.Range, diags, only=None):
        return await self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri), range=rng,
            context=types.CodeActionContext(diagnostics=diags, only=only))) or []


def _client() -> LanguageClient:
    """pytest-lsp's test client, minus its publishDiagnostics handler (sessions record all)."""
    client = LanguageClient(converter_factory=default_converter)
    register_lsp_features(client, {k: v for k, v in DEFAULT_CLIENT_FEATURES.items() if k != types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS})
    client.registrations = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams):
        client.registrations.extend(params.registrations)

    return client


@pytest_asyncio.fixture
async def start():
    """`await start(profile=..., encoding=..., settings=..., root=..., notebooks=...)` -> Session.
    `folders` (several workspace folders) replaces `root`; `init_options` replaces {"settings": settings};
    `scoped` maps a scope URI to what workspace/configuration answers for it."""
    sessions: list[Session] = []

    async def _start(profile="visual-studio-code", encoding="utf-16", settings=None, root: Path | None = None,
                     notebooks=False, args=(), env=None, configuration=None, folders: list[Path] | None = None,
                     init_options=None, scoped: dict | None = None) -> Session:
        caps = client_capabilities(profile)
        caps.general = types.GeneralClientCapabilities(position_encodings=[encoding])
        if notebooks:
            caps.notebook_document = types.NotebookDocumentClientCapabilities(
                synchronization=types.NotebookDocumentSyncClientCapabilities())
        server_env = {**os.environ, **(env or {})}
        config = ClientServerConfig(server_command=[*SERVER_CMD, *args], server_env=server_env, client_factory=_client)
        client = await config.start()
        session = Session(client, encoding, pull=False)
        if configuration is not None:
            client.set_configuration(configuration)
        for scope, item in (scoped or {}).items():
            client.set_configuration(item, scope_uri=scope)

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams):
            session.published.append(params)
            client.diagnostics[params.uri] = params.diagnostics

        roots = folders if folders is not None else [root] if root else []
        root = roots[0] if roots else None
        if init_options is None and settings is not None:
            init_options = {"settings": settings}
        result = await client.initialize_session(types.InitializeParams(
            capabilities=caps, root_uri=root.as_uri() if root else None,
            workspace_folders=[types.WorkspaceFolder(uri=r.as_uri(), name=r.name) for r in roots] or None,
            initialization_options=init_options))
        assert result.capabilities.position_encoding == encoding
        session.capabilities = result.capabilities
        session.pull = result.capabilities.diagnostic_provider is not None
        sessions.append(session)
        return session

    yield _start
    for s in sessions:
        try:
            await asyncio.wait_for(s.client.shutdown_session(), 10)
        finally:
            await s.client.stop()
