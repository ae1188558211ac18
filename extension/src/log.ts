// The extension's logs: "Devflow" (a log channel: the client, and the server's log messages and
// stderr) and "Devflow Trace" for devflow.trace.server. vscode-languageclient traces only while
// its trace channel's log level is "trace", so a trace sharing the "Devflow" channel would need
// that channel turned down to "trace" (and flooded). The trace channel is a plain output channel
// whose level follows devflow.trace.server instead, as ruff's separate trace channel does.

import * as vscode from 'vscode';

export function createLog(): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel('Devflow', { log: true });
}

const TRACE_SETTING = 'devflow.trace.server';

function traceLevel(): vscode.LogLevel {
  const v = vscode.workspace.getConfiguration().get<string>(TRACE_SETTING, 'off');
  return v === 'messages' || v === 'verbose' ? vscode.LogLevel.Trace : vscode.LogLevel.Off;
}

/** A LogOutputChannel over a plain "Devflow Trace" channel: its level is "trace" exactly while
 * devflow.trace.server is on, and it says so when the setting changes. */
class TraceChannel implements vscode.LogOutputChannel {
  private readonly channel = vscode.window.createOutputChannel('Devflow Trace');
  private readonly levelChanged = new vscode.EventEmitter<vscode.LogLevel>();
  private level = traceLevel();
  private readonly watch = vscode.workspace.onDidChangeConfiguration((e) => {
    if (!e.affectsConfiguration(TRACE_SETTING)) return;
    this.level = traceLevel();
    this.levelChanged.fire(this.level);
  });
  readonly name = this.channel.name;
  readonly onDidChangeLogLevel = this.levelChanged.event;

  get logLevel(): vscode.LogLevel {
    return this.level;
  }
  private line(kind: string, message: string | Error): void {
    if (this.level === vscode.LogLevel.Off) return;
    this.channel.appendLine(`${new Date().toISOString()} [${kind}] ${message instanceof Error ? message.stack ?? message.message : message}`);
  }
  trace(message: string): void {
    this.line('trace', message);
  }
  debug(message: string): void {
    this.line('debug', message);
  }
  info(message: string): void {
    this.line('info', message);
  }
  warn(message: string): void {
    this.line('warning', message);
  }
  error(error: string | Error): void {
    this.line('error', error);
  }
  append(value: string): void {
    this.channel.append(value);
  }
  appendLine(value: string): void {
    this.channel.appendLine(value);
  }
  replace(value: string): void {
    this.channel.replace(value);
  }
  clear(): void {
    this.channel.clear();
  }
  show(column?: vscode.ViewColumn | boolean, preserveFocus?: boolean): void {
    if (typeof column === 'boolean') this.channel.show(column);
    else this.channel.show(column, preserveFocus);
  }
  hide(): void {
    this.channel.hide();
  }
  dispose(): void {
    this.watch.dispose();
    this.levelChanged.dispose();
    this.channel.dispose();
  }
}

export function createTraceLog(): vscode.LogOutputChannel {
  return new TraceChannel();
}
