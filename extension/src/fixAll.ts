// "Devflow: Fix All" and the notebook fix-all kind: both apply the server's
// `source.fixAll.devflow` code action (every safe fix of the document or notebook at once).
// `notebook.source.fixAll.devflow` lets "notebook.codeActionsOnSave": {"notebook.source.fixAll": ...}
// run it on a whole notebook.

import * as vscode from 'vscode';

export const FIX_ALL_KIND = vscode.CodeActionKind.SourceFixAll.append('devflow');
export const NOTEBOOK_FIX_ALL_KIND = vscode.CodeActionKind.Notebook.append(FIX_ALL_KIND.value);

/** The server's fix-all action for a document (its edit may touch every cell of a notebook). */
async function serverFixAll(doc: vscode.TextDocument): Promise<vscode.CodeAction | undefined> {
  const range = new vscode.Range(0, 0, doc.lineCount, 0);
  const actions = await vscode.commands.executeCommand<(vscode.CodeAction | vscode.Command)[]>(
    'vscode.executeCodeActionProvider', doc.uri, range, FIX_ALL_KIND.value);
  return actions?.find((a): a is vscode.CodeAction => 'kind' in a && !!a.kind && FIX_ALL_KIND.contains(a.kind) && !!a.edit);
}

function pythonCells(notebook: vscode.NotebookDocument): vscode.TextDocument[] {
  return notebook.getCells().filter((c) => c.kind === vscode.NotebookCellKind.Code && c.document.languageId === 'python').map((c) => c.document);
}

/** Applies every safe fix in the active Python file or notebook; says so when there is none. */
export async function fixAllCommand(): Promise<boolean> {
  const notebook = vscode.window.activeNotebookEditor?.notebook;
  const doc = vscode.window.activeTextEditor?.document;
  const targets = notebook ? pythonCells(notebook).slice(0, 1) : doc && doc.languageId === 'python' ? [doc] : [];
  if (targets.length === 0) {
    void vscode.window.showInformationMessage('Devflow: open a Python file or notebook to fix it.');
    return false;
  }
  const action = await serverFixAll(targets[0]);
  if (!action?.edit) {
    void vscode.window.showInformationMessage('Devflow: no safe fixes to apply here.');
    return false;
  }
  return vscode.workspace.applyEdit(action.edit);
}

/** `notebook.source.fixAll.devflow`: asked for on a notebook's cell, answers for the notebook. */
export function registerNotebookFixAll(): vscode.Disposable {
  return vscode.languages.registerCodeActionsProvider(
    { notebookType: '*', language: 'python' },
    {
      async provideCodeActions(document, _range, context) {
        if (!context.only || !NOTEBOOK_FIX_ALL_KIND.intersects(context.only)) return [];
        const action = await serverFixAll(document);
        if (!action?.edit) return [];
        const out = new vscode.CodeAction('devflow: fix all safe device issues in the notebook', NOTEBOOK_FIX_ALL_KIND);
        out.edit = action.edit;
        return [out];
      },
    },
    { providedCodeActionKinds: [NOTEBOOK_FIX_ALL_KIND] },
  );
}
