// Device Placement: debug-adapter tracker + view (owned by the runtime-report work).
// Placeholder export so the client builds before that lands.
import * as vscode from 'vscode';

export function registerPlacement(_context: vscode.ExtensionContext, _log: vscode.LogOutputChannel): vscode.Disposable[] {
  return [];
}
