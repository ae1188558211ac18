// Commands that act in the editor rather than through the server's executeCommand: Fix All,
// Show Debug Information, and the rule pages; plus the notebook fix-all code action kind.

import * as os from 'node:os';
import * as vscode from 'vscode';
import { EDITOR_COMMANDS } from './commands';
import { debugMarkdown } from './debugInfo';
import { fixAllCommand, registerNotebookFixAll } from './fixAll';
import { registerRuleDocs } from './ruleDocs';
import type { ServerManager } from './server';

const CLIENT_COMMANDS = EDITOR_COMMANDS;

/** The walkthrough's sample, as an untitled Python file the user can edit and fix freely. */
async function openSample(context: vscode.ExtensionContext): Promise<void> {
  const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(context.asAbsolutePath('extension/walkthrough/sample.py')));
  const doc = await vscode.workspace.openTextDocument({ language: 'python', content: new TextDecoder().decode(bytes) });
  await vscode.window.showTextDocument(doc, { preview: false });
}

async function showDebugInfo(context: vscode.ExtensionContext, server: ServerManager): Promise<string> {
  const info = server.debugInfo();
  const text = debugMarkdown({
    extensionVersion: String(context.extension.packageJSON.version),
    vscodeVersion: `${vscode.version} (${vscode.env.appName})`,
    platform: `${process.platform}-${process.arch} (${os.release()})`,
    trusted: vscode.workspace.isTrusted,
    state: info.state,
    launch: info.launch,
    settings: info.settings,
    folders: info.folders,
    diagnostics: server.diagnosticsCount(),
  });
  const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: text });
  await vscode.window.showTextDocument(doc, { preview: false });
  return text;
}

export function registerClientCommands(context: vscode.ExtensionContext, server: ServerManager): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand(CLIENT_COMMANDS.fixAll, () => fixAllCommand()),
    vscode.commands.registerCommand(CLIENT_COMMANDS.showDebugInfo, () => showDebugInfo(context, server)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.openSample, () => openSample(context)),
    ...registerRuleDocs(context),
    registerNotebookFixAll(),
  ];
}
