"""The LSP messages the server answers, each a thin call into the module that does the work."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import unquote

from lsprotocol import types

from devflow.lsp import analysis, code_actions, hints, logs, parent_watch, program_sync, workspace_check
from devflow.lsp.folder_settings import from_configuration, from_payload, is_payload

log = logging.getLogger("devflow.lsp")
KNOWN_KEYS = {"enable", "severity", "args", "inlayHints", "lintOnChange", "debounceMs", "timeBudgetMs"}


def register(server) -> None:  # noqa: C901  (one small closure per message)
    from devflow.lsp.server import CHECK_FILE, CHECK_WORKSPACE, DevflowServer

    ls: DevflowServer = server

    # -- lifecycle ------------------------------------------------------------------------------
    @ls.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        ls.gc.install(ls.loop)
        parent_watch.watch(ls.loop, params.process_id)
        logs.install(ls, ls.loop, ls.cli_settings.log_level)
        opts = params.initialization_options
        if is_payload(opts):
            ls.workspace_settings = from_payload(opts, ls.cli_settings)
            ls.settings_pushed = True
        ls.pull_mode = ls.supports("text_document.diagnostic")
        if not ls.pull_mode:  # advertise pull diagnostics only to clients that pull
            ls.protocol.fm.features.pop(types.TEXT_DOCUMENT_DIAGNOSTIC, None)
        client = params.client_info.name if params.client_info else "unknown client"
        log.info("devflow %s: serving %s (%s positions, %s diagnostics)", ls.version, client,
                 ls.encoding, "pull" if ls.pull_mode else "push")

    @ls.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        ls.executor.submit(analysis.warm_up)
        if ls.supports("workspace.did_change_watched_files.dynamic_registration"):
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                    types.Registration(
                        id="devflow-pyproject-watcher",
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                            types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                            types.FileSystemWatcher(glob_pattern="**/*.py"),  # project files others import
                        ]),
                    )
                ]))
            except Exception as e:
                log.info("devflow: could not watch pyproject.toml files (%s); reload by saving settings", e)
        if not ls.settings_pushed and (pulled := await pull_configuration()) is not None:
            ls.settings_changed(pulled)

    async def pull_configuration():
        """workspace/configuration: the "devflow" section without a scope (global), then one item per
        workspace folder (scopeUri), as a client that does not send settings keeps them."""
        if not ls.supports("workspace.configuration"):
            return None
        folders = [f.uri for f in ls.workspace.folders.values()]
        items = [types.ConfigurationItem(section="devflow")]
        items += [types.ConfigurationItem(scope_uri=uri, section="devflow") for uri in folders]
        try:
            result = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
        except Exception as e:
            log.info("devflow: workspace/configuration failed: %s", e)
            return None
        if not result or not isinstance(result[0], dict):
            return None
        per_folder = list(result[1:]) + [None] * (len(folders) - len(result) + 1)
        return from_configuration(result[0], folders, per_folder, ls.cli_settings)

    @ls.feature(types.SHUTDOWN)
    def shutdown(params) -> None:
        ls.executor.shutdown(wait=False, cancel_futures=True)

    # -- text documents -------------------------------------------------------------------------
    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        if ls.is_python_document(params.text_document.uri):
            program_sync.opened(ls, params.text_document.uri)
            ls.on_edit(params.text_document.uri, "open")

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        if ls.is_python_document(params.text_document.uri):
            program_sync.changed(ls, params.text_document.uri)
            ls.on_edit(params.text_document.uri, "change")

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if unquote(uri).endswith("pyproject.toml"):
            config_files_changed()
        elif ls.is_python_document(uri):
            ls.on_edit(uri, "save")
            program_sync.saved(ls, uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.scheduler.forget(uri)
        ls.dirty.discard(uri)
        if not ls.pull_mode:
            ls.clear(uri)
        program_sync.closed(ls, uri)

    # -- notebooks ------------------------------------------------------------------------------
    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def nb_open(params: types.DidOpenNotebookDocumentParams) -> None:
        ls.on_edit(params.notebook_document.uri, "open")

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def nb_change(params: types.DidChangeNotebookDocumentParams) -> None:
        structure = params.change.cells.structure if params.change.cells else None
        if structure and structure.did_close and not ls.pull_mode:
            for cell in structure.did_close:  # removed cells: clear what they showed
                ls.clear(cell.uri)
        ls.on_edit(params.notebook_document.uri, "change")

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def nb_save(params: types.DidSaveNotebookDocumentParams) -> None:
        ls.on_edit(params.notebook_document.uri, "save")

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def nb_close(params: types.DidCloseNotebookDocumentParams) -> None:
        ls.scheduler.forget(params.notebook_document.uri)
        ls.dirty.discard(params.notebook_document.uri)
        if not ls.pull_mode:
            for cell in params.cell_text_documents:
                ls.clear(cell.uri)

    # -- pull diagnostics -----------------------------------------------------------------------
    @ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
        identifier="devflow", inter_file_dependencies=False, workspace_diagnostics=False))
    async def pull(params: types.DocumentDiagnosticParams):
        uri = params.text_document.uri
        target = ls.target_of(uri)
        if params.previous_result_id and target in ls.dirty and not ls.settings_for(target).lint_on_change:
            # devflow.lint.run "onSave": an edit does not check the file; what the client shows stays.
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=params.previous_result_id)
        result = await ls.scheduler.latest(target)
        if result is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        result_id = f"{result.snapshot.version}:{result.settings_generation}:{id(result)}"
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        items = ls.lsp_diagnostics(result).get(uri, [])
        return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=result_id)

    # -- code actions, hover, inlay hints -------------------------------------------------------
    @ls.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, code_actions.FIX_ALL], resolve_provider=False))
    async def code_action(params: types.CodeActionParams):
        result = await ls.scheduler.latest(ls.target_of(params.text_document.uri))
        if result is None or not ls.settings_for(params.text_document.uri).enable:
            return None
        return code_actions.code_actions(result, params, ls.encoding, ls.supports("workspace.workspace_edit.document_changes")) or None

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(params: types.HoverParams):
        result = await ls.scheduler.latest(ls.target_of(params.text_document.uri))
        if result is None or not ls.settings_for(params.text_document.uri).enable:
            return None
        formats = getattr(getattr(ls.client_capabilities.text_document, "hover", None), "content_format", None) or []
        markdown = not formats or types.MarkupKind.Markdown in formats
        return hints.hover(result, params.text_document.uri, params.position, ls.encoding, markdown)

    @ls.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    async def inlay_hint(params: types.InlayHintParams):
        settings = ls.settings_for(params.text_document.uri)
        if not settings.inlay_hints or not settings.enable:
            return []
        result = await ls.scheduler.latest(ls.target_of(params.text_document.uri))
        if result is None:
            return []
        return hints.inlay_hints(result, params.text_document.uri, params.range, ls.encoding)

    # -- configuration --------------------------------------------------------------------------
    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        if isinstance(raw, dict) and isinstance(raw.get("devflow"), dict):
            raw = raw["devflow"]
        if is_payload(raw):  # {"settings": global, "folders": [...]}, as initializationOptions
            ls.settings_pushed = True
            ls.settings_changed(from_payload(raw, ls.cli_settings, ls.workspace_settings))
        elif isinstance(raw, dict) and KNOWN_KEYS & raw.keys():
            # The bare settings object (no folders): it applies everywhere, so any folder's settings
            # from an earlier payload are dropped.
            ls.settings_pushed = True
            ls.settings_changed(from_payload({"settings": raw}, ls.cli_settings))
        elif (pulled := await pull_configuration()) is not None:
            ls.settings_changed(pulled)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        """pygls has updated ls.workspace.folders. A removed folder's files use an enclosing
        folder's or the global settings; an added folder's settings are pulled (a client that
        pushes settings sends a didChangeConfiguration for it). Imports resolve against the
        folders, so every open document is checked again."""
        removed = [f.uri for f in params.event.removed or ()]
        log.info("devflow: workspace folders: +%d -%d", len(params.event.added or ()), len(removed))
        pulled = None if ls.settings_pushed else await pull_configuration()
        ls.workspace_settings = pulled if pulled is not None else ls.workspace_settings.without(removed)
        ls.refresh_all()

    def config_files_changed() -> None:
        log.info("devflow: pyproject.toml changed; reloading [tool.devflow]")
        ls.configs.clear()
        ls.refresh_all()

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        if any(unquote(c.uri).endswith("pyproject.toml") for c in params.changes):
            config_files_changed()
        program_sync.changed_on_disk(ls, [c.uri for c in params.changes if unquote(c.uri).endswith(".py")])

    # -- commands -------------------------------------------------------------------------------
    @ls.command(CHECK_WORKSPACE)
    async def check_workspace(*args):
        msg_id, params = ls.protocol.take_command_params()
        token = params.work_done_token if params else None
        return await workspace_check.check_workspace(
            ls, workspace_check.uris_from_args(args), token, lambda: ls.protocol.request_cancelled(msg_id))

    @ls.command(CHECK_FILE)
    async def check_file(*args):
        ls.protocol.take_command_params()
        uris = workspace_check.uris_from_args(args)
        if not uris:
            raise ValueError("devflow.checkFile needs a document URI")
        return {"diagnostics": await workspace_check.check_one(ls, uris[0])}
