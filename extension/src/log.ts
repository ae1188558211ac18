// The extension's log: one output channel ("Devflow") for the client and the server's stderr.

import * as vscode from 'vscode';

export function createLog(): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel('Devflow', { log: true });
}
