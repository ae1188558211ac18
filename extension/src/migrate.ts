// Moves the deprecated boolean devflow.lintOnChange to devflow.lint.run ("onType" | "onSave") at
// every level it was set (user, workspace, folder), once, and says so in the log.

import * as vscode from 'vscode';
import { SECTION } from './settings';

type Target = { target: vscode.ConfigurationTarget; scope?: vscode.Uri; key: 'globalValue' | 'workspaceValue' | 'workspaceFolderValue' };

export async function migrateSettings(log: vscode.LogOutputChannel): Promise<void> {
  if (!vscode.workspace.isTrusted) return; // never write into an untrusted workspace's settings
  const targets: Target[] = [
    { target: vscode.ConfigurationTarget.Global, key: 'globalValue' },
    { target: vscode.ConfigurationTarget.Workspace, key: 'workspaceValue' },
    ...(vscode.workspace.workspaceFolders ?? []).map((f) => ({ target: vscode.ConfigurationTarget.WorkspaceFolder, scope: f.uri, key: 'workspaceFolderValue' as const })),
  ];
  for (const t of targets) {
    if (t.target === vscode.ConfigurationTarget.Workspace && !vscode.workspace.workspaceFolders) continue;
    const config = vscode.workspace.getConfiguration(SECTION, t.scope);
    const old = config.inspect<boolean>('lintOnChange')?.[t.key];
    if (typeof old !== 'boolean') continue;
    try {
      if (config.inspect<string>('lint.run')?.[t.key] === undefined) await config.update('lint.run', old ? 'onType' : 'onSave', t.target);
      await config.update('lintOnChange', undefined, t.target);
      log.info(`Settings: devflow.lintOnChange (${old}) is now devflow.lint.run ("${old ? 'onType' : 'onSave'}").`);
    } catch (err) {
      log.warn(`Settings: could not migrate devflow.lintOnChange: ${String(err)}`);
    }
  }
}
