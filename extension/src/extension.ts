// Entry point: wires the log, status item, settings, server manager, commands and the runtime
// placement view together, and restarts the server when what runs it changes.

import * as os from 'node:os';
import * as vscode from 'vscode';
import { CommandHost, registerCommands } from './commands';
import { registerDebug } from './debug';
import { registerDryRun } from './dryrun';
import { dryRunEnv } from './dryrun/env';
import { registerClientCommands } from './clientCommands';
import type { FolderSettings } from './folders';
import type { FixAction } from './interpreter';
import { createLog, createTraceLog } from './log';
import { migrateSettings } from './migrate';
import { registerPlacement } from './placement';
import { hasPythonExtension, onPythonInterpreterChange, resolveInterpreter } from './python';
import { bundledLibs, ServerManager } from './server';
import { ExtensionSettings, readSettings, SECTION } from './settings';
import { ServerStatus } from './status';

let manager: ServerManager | undefined;

/** The settings as they apply to `resource`'s workspace folder (undefined: read without a resource:
 * the window settings, and the resource settings of files outside every folder). */
function settingsFor(resource: vscode.Uri | undefined): ExtensionSettings {
  return readSettings(vscode.workspace.getConfiguration(SECTION, resource), {
    trusted: vscode.workspace.isTrusted,
    workspaceFolder: (resource ?? vscode.workspace.workspaceFolders?.[0]?.uri)?.fsPath,
    home: os.homedir(),
    env: process.env,
  });
}

/** Every workspace folder's settings (multi-root workspaces): the server applies each folder's
 * resource settings to its files. */
function folderSettings(): FolderSettings[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => {
    const s = settingsFor(f.uri);
    return { uri: f.uri.toString(), path: f.uri.fsPath, enable: s.enable, exclude: s.exclude, settings: s };
  });
}

/** The folder the server runs in (its default cwd) and whose interpreter the Python extension
 * gives: the first one devflow is enabled for. */
function workspaceResource(): vscode.Uri | undefined {
  const folders = vscode.workspace.workspaceFolders ?? [];
  return (folders.find((f) => settingsFor(f.uri).enable) ?? folders[0])?.uri;
}

/** The window settings (interpreter, path, logLevel, ...: package.json scope "window") and the
 * global resource settings. */
function currentSettings(): ExtensionSettings {
  return settingsFor(undefined);
}

/** Without the Python extension, "Select Interpreter" lets the user pick a python executable. */
async function selectInterpreter(): Promise<void> {
  if (hasPythonExtension()) {
    await vscode.commands.executeCommand('python.setInterpreter');
    return;
  }
  const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Use this Python', title: 'Python interpreter for Devflow (3.10 or newer)' });
  if (!picked?.[0]) return;
  const target = vscode.workspace.isTrusted && vscode.workspace.workspaceFolders ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration(SECTION, workspaceResource()).update('interpreter', [picked[0].fsPath], target);
}

async function useBundled(): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION, workspaceResource());
  const where = config.inspect('importStrategy');
  const target = where?.workspaceFolderValue !== undefined
    ? vscode.ConfigurationTarget.WorkspaceFolder
    : where?.workspaceValue !== undefined
      ? vscode.ConfigurationTarget.Workspace
      : vscode.ConfigurationTarget.Global;
  await config.update('importStrategy', 'useBundled', target);
}

const ACTION_LABELS: Record<FixAction, string> = {
  selectInterpreter: 'Select Interpreter',
  useBundled: 'Use Bundled Server',
  openSettings: 'Open Settings',
  showLogs: 'Show Logs',
};

function notifier(log: vscode.LogOutputChannel) {
  return (message: string, actions: FixAction[]) => {
    const labels = actions.map((a) => ACTION_LABELS[a]);
    void vscode.window.showErrorMessage(message, ...labels).then(async (picked) => {
      const action = actions[labels.indexOf(picked ?? '')];
      if (action === 'selectInterpreter') await selectInterpreter();
      else if (action === 'useBundled') await useBundled();
      else if (action === 'openSettings') await vscode.commands.executeCommand('workbench.action.openSettings', 'devflow.');
      else if (action === 'showLogs') log.show(true);
    });
  };
}

function commandHost(): CommandHost {
  return {
    registerCommand: (id, run) => vscode.commands.registerCommand(id, run),
    executeCommand: (id, ...args) => vscode.commands.executeCommand(id, ...args),
    withProgress: (title, task) =>
      vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (progress, token) =>
        task((message) => progress.report({ message }), token),
      ),
    showInfo: (message) => void vscode.window.showInformationMessage(message),
    showError: (message, ...actions) => vscode.window.showErrorMessage(message, ...actions),
    activeDocumentUri: () => {
      const notebook = vscode.window.activeNotebookEditor?.notebook;
      if (notebook) return notebook.uri.toString();
      const doc = vscode.window.activeTextEditor?.document;
      return doc && doc.languageId === 'python' ? doc.uri.toString() : undefined;
    },
  };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const activatedAt = performance.now();
  const log = createLog();
  const trace = createTraceLog();
  const status = new ServerStatus();
  context.subscriptions.push(log, trace, status);
  log.info(`Devflow ${context.extension.packageJSON.version} activating (VS Code ${vscode.version}, workspace trusted: ${vscode.workspace.isTrusted}).`);

  manager = new ServerManager({
    context,
    log,
    status,
    settings: currentSettings,
    folders: folderSettings,
    resource: workspaceResource,
    notify: notifier(log),
    trace,
    activatedAt,
  });
  const server = manager;
  context.subscriptions.push(server, server.watchDiagnostics(), ...registerCommands(commandHost(), server, status), ...registerClientCommands(context, server));

  context.subscriptions.push(...registerDryRun({
    log,
    interpreter: async () => (await resolveInterpreter(currentSettings(), workspaceResource(), log))?.command,
    env: () => dryRunEnv(process.env, currentSettings().importStrategy, bundledLibs(context)),
  }));

  try {
    context.subscriptions.push(...registerDebug(log, async () => (await resolveInterpreter(currentSettings(), workspaceResource(), log))?.command));
  } catch (err) {
    log.error(`The devflow-python debug type failed to register: ${String(err)}`);
  }
  try {
    context.subscriptions.push(...registerPlacement(context, log));
  } catch (err) {
    log.error(`Device placement view failed to register: ${String(err)}`);
  }

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      // devflow.trace.server is read by vscode-languageclient itself, live.
      if (e.affectsConfiguration(SECTION) && !e.affectsConfiguration(`${SECTION}.trace.server`)) void server.settingsChanged();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server.restart('workspace trusted')),
    // vscode-languageclient sends workspace/didChangeWorkspaceFolders; the new folders' settings follow.
    vscode.workspace.onDidChangeWorkspaceFolders(() => void server.settingsChanged()),
  );
  void onPythonInterpreterChange(() => {
    if (currentSettings().interpreter.length === 0) void server.restart('the selected Python interpreter changed');
  }).then((d) => d && context.subscriptions.push(d));

  void migrateSettings(log);
  await server.start();
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
  manager = undefined;
}
