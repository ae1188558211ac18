// "Devflow: Dry Run Current File": runs `devflow dryrun` on the active Python file as a VS Code
// task (its terminal shows the script's output and progress), then shows the findings as
// diagnostics with source `devflow-dryrun`. It executes the user's code, so it runs only when the
// user asks (command, code lens) and never in an untrusted workspace. Findings stay until the next
// dry run of that file or an edit of their line. Parsing lives in findings.ts (pure).

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { applyChange, byPath, DRYRUN_SOURCE, DryRunDiagnostic, dryRunArgs, parseDryRunReport } from './findings';

export const DRY_RUN_COMMAND = 'devflow.dryRunCurrentFile';

export interface DryRunDeps {
  log: vscode.LogOutputChannel;
  /** `[python, ...args]` of the interpreter that runs the user's code, or undefined. */
  interpreter: () => Promise<string[] | undefined>;
  /** Environment for it (bundled devflow on PYTHONPATH when that is the strategy). */
  env: () => Record<string, string>;
}

const SEVERITY: Record<string, vscode.DiagnosticSeverity> = {
  error: vscode.DiagnosticSeverity.Error,
  warning: vscode.DiagnosticSeverity.Warning,
  information: vscode.DiagnosticSeverity.Information,
};

export function registerDryRun(deps: DryRunDeps): vscode.Disposable[] {
  const runner = new DryRunner(deps);
  return [
    runner,
    vscode.commands.registerCommand(DRY_RUN_COMMAND, (uri?: vscode.Uri) => runner.run(uri)),
    vscode.languages.registerCodeLensProvider({ language: 'python', scheme: 'file' }, new DryRunLens()),
    vscode.workspace.onDidChangeTextDocument((e) => runner.onEdit(e)),
  ];
}

/** One lens above `if __name__ == "__main__":` (or the first line): "Dry run with virtual GPU". */
class DryRunLens implements vscode.CodeLensProvider {
  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    if (!vscode.workspace.isTrusted) return [];
    const text = doc.getText();
    const m = /^if\s+__name__\s*==\s*['"]__main__['"]\s*:/m.exec(text);
    if (!m && !/\bimport\s+torch\b|\bfrom\s+torch\b/.test(text)) return [];
    const line = m ? doc.positionAt(m.index).line : 0;
    return [new vscode.CodeLens(new vscode.Range(line, 0, line, 0), {
      title: '$(debug-alt) Dry run (virtual GPU)',
      tooltip: 'Run this script with CUDA emulated and show every device mix it makes (runs your code)',
      command: DRY_RUN_COMMAND,
      arguments: [doc.uri],
    })];
  }
}

class DryRunner implements vscode.Disposable {
  private readonly collection = vscode.languages.createDiagnosticCollection(DRYRUN_SOURCE);
  private readonly held = new Map<string, DryRunDiagnostic[]>();
  private running = false;

  constructor(private readonly deps: DryRunDeps) {}

  dispose(): void {
    this.collection.dispose();
  }

  async run(uri?: vscode.Uri): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage('Devflow dry run executes your script, so it is off in an untrusted workspace. Trust the workspace to use it.');
      return;
    }
    const doc = uri ? await vscode.workspace.openTextDocument(uri) : vscode.window.activeTextEditor?.document;
    if (!doc || doc.languageId !== 'python' || doc.uri.scheme !== 'file') {
      void vscode.window.showInformationMessage('Devflow dry run: open a Python script (a file on disk) first.');
      return;
    }
    if (this.running) {
      void vscode.window.showInformationMessage('Devflow dry run: a run is already in progress.');
      return;
    }
    if (doc.isDirty && !(await doc.save())) return;
    const python = await this.deps.interpreter();
    if (!python) {
      void vscode.window.showErrorMessage('Devflow dry run needs a Python interpreter with PyTorch; none was found. Select one with "Python: Select Interpreter".');
      return;
    }
    const file = doc.uri.fsPath;
    const out = path.join(os.tmpdir(), `devflow-dryrun-${process.pid}-${Date.now()}.json`);
    const [command, ...pre] = python;
    const folder = vscode.workspace.getWorkspaceFolder(doc.uri);
    const task = new vscode.Task(
      { type: 'devflow-dryrun', file },
      folder ?? vscode.TaskScope.Workspace,
      `dry run ${path.basename(file)}`,
      'devflow',
      new vscode.ProcessExecution(command, [...pre, ...dryRunArgs(file, out)], { cwd: folder?.uri.fsPath ?? path.dirname(file), env: this.deps.env() }),
    );
    task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, panel: vscode.TaskPanelKind.Dedicated, clear: true };
    this.running = true;
    this.deps.log.info(`Dry run: ${command} ${[...pre, ...dryRunArgs(file, out)].join(' ')}`);
    try {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Devflow: dry run of ${path.basename(file)}`, cancellable: true },
        async (progress, token) => {
          progress.report({ message: 'running with a virtual GPU…' });
          const execution = await vscode.tasks.executeTask(task);
          token.onCancellationRequested(() => execution.terminate());
          const code = await new Promise<number | undefined>((resolve) => {
            const sub = vscode.tasks.onDidEndTaskProcess((e) => {
              if (e.execution === execution) {
                sub.dispose();
                resolve(e.exitCode);
              }
            });
          });
          this.publish(out, file, code);
        },
      );
    } finally {
      this.running = false;
      fs.rm(out, { force: true }, () => undefined);
    }
  }

  private publish(out: string, file: string, exitCode: number | undefined): void {
    let text: string;
    try {
      text = fs.readFileSync(out, 'utf8');
    } catch {
      void vscode.window.showErrorMessage(`Devflow dry run of ${path.basename(file)} gave no report (exit status ${exitCode ?? '?'}); see its terminal.`);
      return;
    }
    let result;
    try {
      result = parseDryRunReport(text);
    } catch (err) {
      void vscode.window.showErrorMessage(`Devflow dry run: unreadable report (${String(err)}).`);
      return;
    }
    // A new run replaces what the previous runs found.
    this.held.clear();
    this.collection.clear();
    for (const [p, diags] of byPath(result.diagnostics)) this.held.set(vscode.Uri.file(p).toString(), diags);
    this.refresh();
    const show = result.diagnostics.length > 0 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void show(`Devflow dry run of ${path.basename(file)}: ${result.status.summary}.`);
  }

  onEdit(e: vscode.TextDocumentChangeEvent): void {
    const key = e.document.uri.toString();
    let diags = this.held.get(key);
    if (!diags || e.contentChanges.length === 0) return;
    for (const c of e.contentChanges) {
      diags = applyChange(diags, { startLine: c.range.start.line, endLine: c.range.end.line, newLineCount: c.text.split('\n').length });
    }
    this.held.set(key, diags);
    this.refresh(key);
  }

  private refresh(only?: string): void {
    for (const [key, diags] of this.held) {
      if (only && key !== only) continue;
      this.collection.set(vscode.Uri.parse(key), diags.map(toDiagnostic));
    }
  }
}

function toDiagnostic(d: DryRunDiagnostic): vscode.Diagnostic {
  const diag = new vscode.Diagnostic(new vscode.Range(d.line, 0, d.line, Number.MAX_SAFE_INTEGER), d.message, SEVERITY[d.severity]);
  diag.source = DRYRUN_SOURCE;
  diag.code = d.url ? { value: d.code, target: vscode.Uri.parse(d.url) } : d.code;
  diag.relatedInformation = d.related.map((r) => new vscode.DiagnosticRelatedInformation(
    new vscode.Location(vscode.Uri.file(r.path), new vscode.Position(r.line, 0)), r.message));
  return diag;
}
