// The language status item (the {} in the status bar for Python): server state + last check.

import * as vscode from 'vscode';
import type { CheckSummary, StatusSink } from './commands';
import { COMMANDS } from './commands';
import { ServerState, statusView } from './statusView';

export class ServerStatus implements StatusSink, vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private state: ServerState = 'starting';
  private note?: string;
  private lastCheck?: CheckSummary;
  private live?: CheckSummary;

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem('devflow.status', [
      { language: 'python' },
      { notebookType: 'jupyter-notebook' },
    ]);
    this.item.name = 'Devflow';
    this.item.command = { title: 'Show Logs', command: COMMANDS.showLogs };
    this.render();
  }

  setState(state: ServerState, note?: string): void {
    this.state = state;
    this.note = note;
    this.render();
  }

  setLastCheck(summary: CheckSummary): void {
    this.lastCheck = summary;
    this.render();
  }

  /** The diagnostics devflow shows now (undefined: none received since the server started). */
  setProblems(live: CheckSummary | undefined): void {
    if (live && this.live && live.files === this.live.files && live.diagnostics === this.live.diagnostics) return;
    this.live = live;
    this.render();
  }

  private render(): void {
    const v = statusView(this.state, this.lastCheck, this.note, this.live);
    this.item.text = v.text;
    this.item.detail = v.detail;
    this.item.busy = v.busy;
    this.item.severity = v.severity as vscode.LanguageStatusSeverity;
  }

  dispose(): void {
    this.item.dispose();
  }
}
