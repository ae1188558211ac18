// Rule pages: the rule docs (docs/rules/*.md) ship inside the extension, and a diagnostic's code
// link opens the shipped page in VS Code's Markdown preview, online or offline. VS Code opens a
// diagnostic's code link without command rights (a `command:` link does nothing), so the link is
// the page's file; when that file opens in a text editor, it is swapped for the preview.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';

import { EDITOR_COMMANDS } from './commands';

export const SHOW_RULE_COMMAND = EDITOR_COMMANDS.showRule;
const RULE_LINK = /\/docs\/rules\/(DEV\d{3})\.md$/;

/** The shipped Markdown page of a rule, if there is one. */
export function rulePage(context: vscode.ExtensionContext, code: string): vscode.Uri | undefined {
  if (!/^DEV\d{3}$/.test(code)) return undefined;
  const file = context.asAbsolutePath(path.join('docs', 'rules', `${code}.md`));
  return fs.existsSync(file) ? vscode.Uri.file(file) : undefined;
}

/** Points a diagnostic's code link at the shipped page. Other links are left alone. */
export function localizeRuleLinks(context: vscode.ExtensionContext, diagnostics: vscode.Diagnostic[]): vscode.Diagnostic[] {
  for (const d of diagnostics) {
    const c = d.code;
    if (!c || typeof c !== 'object' || !c.target) continue;
    const m = RULE_LINK.exec(c.target.path);
    if (!m || !rulePage(context, m[1])) continue;
    d.code = { value: c.value, target: rulePage(context, m[1])! };
  }
  return diagnostics;
}

async function preview(page: vscode.Uri): Promise<void> {
  try {
    await vscode.commands.executeCommand('markdown.showPreview', page);
  } catch {
    await vscode.window.showTextDocument(page, { preview: true });
  }
}

/** devflow.showRule (a rule's page in the Markdown preview), and the swap of a rule page opened as
 * text (a diagnostic's link) for its preview. */
export function registerRuleDocs(context: vscode.ExtensionContext): vscode.Disposable[] {
  const rulesDir = path.join(context.asAbsolutePath('docs'), 'rules') + path.sep;
  const swap = vscode.window.onDidChangeActiveTextEditor(async (editor) => {
    const uri = editor?.document.uri;
    if (!uri || uri.scheme !== 'file' || !uri.fsPath.startsWith(rulesDir) || !uri.fsPath.endsWith('.md')) return;
    if (editor.document.isDirty) return;
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    await preview(uri);
  });
  return [swap, vscode.commands.registerCommand(SHOW_RULE_COMMAND, async (code?: unknown) => {
    const rule = typeof code === 'string' ? code.toUpperCase() : undefined;
    const page = rule ? rulePage(context, rule) : vscode.Uri.file(context.asAbsolutePath(path.join('docs', 'rules', 'README.md')));
    if (!page) {
      void vscode.window.showInformationMessage(`Devflow: no page for rule ${String(code)}.`);
      return;
    }
    await preview(page);
  })];
}
