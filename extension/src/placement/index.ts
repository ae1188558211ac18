// Device Placement in VS Code: a debug-adapter tracker for debugpy / python sessions that, on a
// cross-device exception, evaluates the placement probe in the stopped frame, then shows the
// "Device Placement" webview and a diagnostic on the failing line. The logic lives in pure modules
// (trackerCore.ts, html.ts, report.ts); this file is the thin `vscode` wrapper.

import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { renderPlacementHtml } from './html';
import { culpritDiagnostic, PlacementReport } from './report';
import { PlacementSink, PlacementTrackerCore, ReportContext } from './trackerCore';

export const SHOW_PLACEMENT_COMMAND = 'devflow.showPlacement';
// devflow's own type (debug/config.ts), and Microsoft's Python Debugger types when that extension is there.
const DEBUG_TYPES = ['devflow-python', 'debugpy', 'python'];

export function registerPlacement(_context: vscode.ExtensionContext, log: vscode.LogOutputChannel): vscode.Disposable[] {
  const view = new PlacementView(log);
  const sink: PlacementSink = {
    onReport: (report, ctx) => view.show(report, ctx),
    log: (level, message) => log[level](message),
  };
  const factory: vscode.DebugAdapterTrackerFactory = {
    createDebugAdapterTracker(session) {
      const core = new PlacementTrackerCore(session, sink);
      return { onDidSendMessage: (m) => void core.onDidSendMessage(m) };
    },
  };
  return [
    view,
    ...DEBUG_TYPES.map((t) => vscode.debug.registerDebugAdapterTrackerFactory(t, factory)),
    vscode.commands.registerCommand(SHOW_PLACEMENT_COMMAND, () => view.reopen()),
    vscode.debug.onDidStartDebugSession(() => view.clearDiagnostics()),
  ];
}

class PlacementView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private last: { report: PlacementReport; ctx: ReportContext } | undefined;
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('devflow-placement');

  constructor(private readonly log: vscode.LogOutputChannel) {}

  show(report: PlacementReport, ctx: ReportContext) {
    this.last = { report, ctx };
    this.setDiagnostic(report);
    this.render(true);
  }

  reopen() {
    if (!this.last) {
      void vscode.window.showInformationMessage(
        'Devflow: no device placement report yet. Debug a PyTorch program (debugpy) until it stops on a cross-device error, or run it with `devflow run`.',
      );
      return;
    }
    this.render(false);
  }

  clearDiagnostics() {
    this.diagnostics.clear();
  }

  private render(preserveFocus: boolean) {
    if (!this.last) return;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        'devflow.placement',
        'Device Placement',
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus },
        { enableScripts: true, enableFindWidget: true, retainContextWhenHidden: false, localResourceRoots: [] },
      );
      this.panel.onDidDispose(() => (this.panel = undefined));
      this.panel.webview.onDidReceiveMessage((m) => void this.open(m));
    } else {
      this.panel.reveal(vscode.ViewColumn.Beside, preserveFocus);
    }
    const nonce = crypto.randomBytes(16).toString('base64');
    this.panel.title = `Device Placement: ${this.last.ctx.sessionName}`;
    this.panel.webview.html = renderPlacementHtml(this.last.report, { nonce, cspSource: this.panel.webview.cspSource });
  }

  private setDiagnostic(report: PlacementReport) {
    this.diagnostics.clear();
    const d = culpritDiagnostic(report);
    if (!d) return;
    const uri = vscode.Uri.file(d.file);
    const line = Math.max(0, d.line - 1);
    const diag = new vscode.Diagnostic(new vscode.Range(line, 0, line, Number.MAX_SAFE_INTEGER), d.message, vscode.DiagnosticSeverity.Error);
    diag.source = 'devflow';
    diag.code = { value: 'device placement', target: vscode.Uri.parse(`command:${SHOW_PLACEMENT_COMMAND}`) };
    this.diagnostics.set(uri, [diag]);
  }

  private async open(m: unknown) {
    const msg = m as { type?: string; file?: string; line?: number };
    if (msg?.type !== 'open' || !msg.file) return;
    try {
      const line = Math.max(0, (msg.line ?? 1) - 1);
      await vscode.window.showTextDocument(vscode.Uri.file(msg.file), {
        viewColumn: vscode.ViewColumn.One,
        selection: new vscode.Range(line, 0, line, 0),
      });
    } catch (err) {
      this.log.warn(`Device Placement: cannot open ${msg.file}: ${String(err)}`);
    }
  }

  dispose() {
    this.panel?.dispose();
    this.diagnostics.dispose();
  }
}
