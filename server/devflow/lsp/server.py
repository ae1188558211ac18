"""`devflow serve`: the language server. This module wires LSP messages to the small modules
that do the work (documents, scheduler, diagnostics, code_actions, hints, workspace_check)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from devflow.lines import line_count
from devflow.lsp import analysis, diagnostics, framing, logs, settings as settings_mod
from devflow.lsp.gc_policy import Collector
from devflow.lsp.documents import Snapshot, notebook_snapshot, text_snapshot, uri_to_path
from devflow.lsp.folder_settings import WorkspaceSettings
from devflow.lsp.project_config import ConfigCache
from devflow.lsp.protocol import DevflowProtocol
from devflow.lsp.scheduler import CLOSED, Scheduler
from devflow.lsp.settings import Settings

log = logging.getLogger("devflow.lsp")
VERSION = "0.1.0"
PYTHON_LANGUAGES = {"python", None, ""}
CHECK_WORKSPACE = "devflow.checkWorkspace"
CHECK_FILE = "devflow.checkFile"


class DevflowServer(LanguageServer):
    def __init__(self, cli_settings: Settings) -> None:
        super().__init__(
            "devflow",
            VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(
                    cells=[types.NotebookCellLanguage(language="python")], notebook="*")],
                save=True,
            ),
            protocol_cls=DevflowProtocol,
        )
        self.cli_settings = cli_settings
        # The global settings and each workspace folder's (see folder_settings.py).
        self.workspace_settings = WorkspaceSettings(cli_settings)
        # Whether the client sends settings (initializationOptions / didChangeConfiguration); if
        # not, they are pulled with workspace/configuration (again when folders change).
        self.settings_pushed = False
        self.dirty: set[str] = set()  # targets edited since they were opened or saved
        self.configs = ConfigCache()
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="devflow-analysis")
        self.scheduler = Scheduler(self.executor, self.snapshot_of, self.version_of, self._run, self.publish)
        self.pull_mode = False
        self.pushed: set[str] = set()  # documents we published non-empty diagnostics to
        self._reported_rule_errors: set[tuple[str, str]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.gc = Collector()

    def start_io(self, stdin=None, stdout=None) -> None:
        """LSP over stdio, read with devflow's framing (it recovers from a broken header)."""
        from pygls.io_ import StdoutWriter

        stdin = stdin or sys.stdin.buffer
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            chunks: asyncio.Queue[bytes] = asyncio.Queue()
            # A daemon thread: a read blocked on stdin must not keep the process alive at exit.
            threading.Thread(target=_read_stdin, args=(stdin, loop, chunks), daemon=True, name="devflow-stdin").start()
            await framing.serve(framing.FramedReader(chunks.get), self.protocol, self._stop_event,
                                self.report_server_error)

        try:
            asyncio.run(serve())
        except BrokenPipeError:
            log.error("devflow: the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def report_server_error(self, error: Exception, source) -> None:
        """pygls would pop up "Error in server" for any failed notification (a didChange for a
        document never opened, a malformed message): log it instead, the session goes on."""
        log.error("devflow: %s: %s", getattr(source, "__name__", source), error)

    # -- capabilities -------------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return getattr(enc, "value", enc) or "utf-16"

    def supports(self, path: str) -> bool:
        """Whether the client has the capability at dotted `path` (snake_case attributes)."""
        node = self.client_capabilities
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                return False
        return bool(node)

    # -- documents and targets ----------------------------------------------------------------
    def target_of(self, uri: str) -> str:
        """The analysis target of a document: the notebook holding a cell, else the document."""
        nb = self.workspace.get_notebook_document(cell_uri=uri)
        return nb.uri if nb is not None else uri

    def is_python_document(self, uri: str) -> bool:
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is None:
            return False
        lang = doc.language_id
        return lang == "python" or (not lang and uri.endswith((".py", ".pyi")))

    def snapshot_of(self, target: str) -> Snapshot | None:
        ws = self.workspace
        nb = ws.notebook_documents.get(unquote(target))
        if nb is not None:
            texts, versions = {}, {}
            for cell in nb.cells:
                doc = ws.text_documents.get(unquote(cell.document))
                if doc is not None and doc.language_id in PYTHON_LANGUAGES:
                    texts[cell.document] = doc.source
                    versions[cell.document] = doc.version
            return notebook_snapshot(nb, texts, versions)
        doc = ws.text_documents.get(unquote(target))
        if doc is None or not self.is_python_document(target):
            return None
        return text_snapshot(doc.uri, doc.version, doc.source)

    def version_of(self, target: str):
        ws = self.workspace
        nb = ws.notebook_documents.get(unquote(target))
        if nb is not None:
            return nb.version
        doc = ws.text_documents.get(unquote(target))
        return doc.version if doc is not None else CLOSED

    def open_targets(self) -> list[str]:
        ws = self.workspace
        cells = {unquote(c.document) for nb in ws.notebook_documents.values() for c in nb.cells}
        texts = [d.uri for key, d in ws.text_documents.items() if key not in cells and self.is_python_document(d.uri)]
        return texts + [nb.uri for nb in ws.notebook_documents.values()]

    # -- settings -----------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """The global settings: files outside every workspace folder, and window-wide options."""
        return self.workspace_settings.default

    def settings_for(self, uri: str | None) -> Settings:
        """The settings of the workspace folder holding a document, notebook or cell (innermost
        folder wins), else the global ones."""
        return self.workspace_settings.for_uri(self.target_of(uri) if uri else None)

    # -- analysis -----------------------------------------------------------------------------
    def project_roots(self) -> tuple[str, ...]:
        """The workspace folders: imports of project files resolve there (besides the file's own folder)."""
        try:
            return tuple(p for p in (uri_to_path(f.uri) for f in self.workspace.folders.values()) if p)
        except Exception:  # noqa: BLE001 - no workspace yet
            return ()

    def _run(self, snapshot: Snapshot, generation: int) -> analysis.Analysis:
        leftovers: list = []
        result = analysis.run(snapshot, self.workspace_settings.for_uri(snapshot.uri), self.configs, generation, leftovers,
                              self.project_roots())
        self.gc.keep(line_count(snapshot.source), leftovers)
        for err in result.result.rule_errors:
            if (snapshot.uri, err) not in self._reported_rule_errors:
                self._reported_rule_errors.add((snapshot.uri, err))
                log.warning("devflow: a rule failed on %s and was skipped: %s", snapshot.uri, err)
        for msg in self.configs.take_errors():  # the user must fix their pyproject.toml
            self.loop.call_soon_threadsafe(self.window_show_message, types.ShowMessageParams(
                type=types.MessageType.Warning, message=msg))
        if result.result.error:
            log.info("devflow: %s: %s", snapshot.uri, result.result.error)
        log.debug("devflow: analysed %s v%s in %.1f ms", snapshot.uri, snapshot.version, result.seconds * 1000)
        return result

    def lsp_diagnostics(self, result: analysis.Analysis) -> dict[str, list[types.Diagnostic]]:
        if self.workspace_settings.excludes(result.snapshot.uri):  # devflow.exclude: nothing reported
            return {uri: [] for uri in result.snapshot.doc_uris()}
        return diagnostics.to_lsp(result, self.workspace_settings.for_uri(result.snapshot.uri), self.encoding)

    def publish(self, result: analysis.Analysis, force: bool = False) -> int:
        """Push the diagnostics of a current analysis (in pull mode only with `force`: files
        that are not open). Returns how many were published."""
        try:
            if self.pull_mode and not force:  # the client pulls; just count what it will get
                ws = self.workspace_settings
                if not ws.for_uri(result.snapshot.uri).enable or ws.excludes(result.snapshot.uri):
                    return 0
                return len(result.result.diagnostics) + (1 if result.result.error else 0)
            by_uri = self.lsp_diagnostics(result)
            for uri, items in by_uri.items():
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri=uri, diagnostics=items, version=result.snapshot.version_of(uri)))
                (self.pushed.add if items else self.pushed.discard)(unquote(uri))
            return diagnostics.count(by_uri)
        finally:  # the diagnostics are written (synchronously) first: freeing and collecting must not delay them
            self.gc.after_result()

    def clear(self, uri: str) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        self.pushed.discard(unquote(uri))

    def on_edit(self, uri: str, kind: str) -> None:
        """Schedule an analysis after an open / change / save of a document."""
        target = self.target_of(uri)
        (self.dirty.add if kind == "change" else self.dirty.discard)(target)
        if self.pull_mode:
            if kind == "open" and unquote(uri) in self.pushed:
                self.clear(uri)  # pulled diagnostics replace what checkWorkspace pushed
            return
        settings = self.settings_for(target)
        if kind == "change" and not settings.lint_on_change:
            return  # devflow.lint.run "onSave" for this document's folder
        delay = settings.debounce_ms / 1000 if kind == "change" else 0
        self.scheduler.schedule(target, delay)

    def settings_changed(self, new: WorkspaceSettings) -> None:
        """New settings (global and per folder): open documents whose effective settings changed,
        and only those, are analysed again."""
        old, self.workspace_settings = self.workspace_settings, new
        if old.default.log_level != new.default.log_level:
            logs.install(self, asyncio.get_running_loop(), new.default.log_level)
        for folder, s in new.all():
            if s.unknown_args:
                log.warning("devflow: ignoring unknown options in the 'args' setting%s: %s",
                            f" of {unquote(folder)}" if folder else "", " ".join(s.unknown_args))
        changed = [t for t in self.open_targets() if old.for_uri(t) != new.for_uri(t)]
        if not changed:
            return
        log.info("devflow: settings changed for %d open document(s); checking them again", len(changed))
        self.dirty.difference_update(changed)  # checked again even where lint.run is onSave: the settings changed
        self.refresh(changed)
        hints = lambda ws: [ws.for_uri(t).inlay_hints for t in changed]  # noqa: E731
        if hints(old) != hints(new) and self.supports("workspace.inlay_hint.refresh_support"):
            self.workspace_inlay_hint_refresh(None)

    def refresh_all(self) -> None:
        """[tool.devflow] changed: every open document is analysed again."""
        self.refresh(None)

    def refresh(self, targets: list[str] | None) -> None:
        """Analyse these open targets (None: all) again. Pull clients are asked to pull again; the
        targets whose analysis is still current answer "unchanged" without a new run."""
        self.scheduler.invalidate(targets)
        if self.pull_mode:
            if self.supports("workspace.diagnostics.refresh_support"):
                self.workspace_diagnostic_refresh(None)
            return
        for target in self.open_targets() if targets is None else targets:
            self.scheduler.schedule(target, 0)


def _read_stdin(stdin, loop: asyncio.AbstractEventLoop, chunks: asyncio.Queue) -> None:
    # os.read on the descriptor: a daemon thread blocked inside a buffered reader's lock makes
    # the interpreter abort at exit ("could not acquire lock for <stdin>").
    try:
        fd = stdin.fileno()
        read = lambda n: os.read(fd, n)  # noqa: E731
    except (AttributeError, OSError, ValueError):
        read = getattr(stdin, "read1", stdin.read)
    while True:
        try:
            chunk = read(65536)
        except (OSError, ValueError):
            chunk = b""
        try:
            loop.call_soon_threadsafe(chunks.put_nowait, chunk)
        except RuntimeError:  # the loop is closed: the server is gone
            return
        if not chunk:
            return


def _register_features(server: DevflowServer) -> None:
    from devflow.lsp import handlers  # imported late: it needs this module's names

    handlers.register(server)


def create_server(argv: list[str] | None = None) -> DevflowServer:
    cli = settings_mod.parse_args(list(argv or []))
    server = DevflowServer(cli)
    _register_features(server)
    return server


def main(argv: list[str] | None = None) -> int:
    """Entry point of `devflow serve` (and `python -m devflow.lsp`): LSP over stdio."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        server = create_server(argv)
    except SystemExit as e:  # argparse: --help or a bad option
        return int(e.code or 0)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="devflow serve: %(levelname)s %(message)s")
    server.start_io()
    code = server.protocol.exit_code  # 1 after `exit` without `shutdown` (LSP spec)
    return 0 if code is None else code
