// Starts, stops and restarts the devflow language server (`python -m devflow serve` over stdio)
// with vscode-languageclient. One server per window; every start/stop goes through one queue.

import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  Executable,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  State,
  TransportKind,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import type { CancellationLike, ServerControl } from './commands';
import { assessProbe, CrashCounter, FixAction, Interpreter, serverCommand, serverEnv, Verdict } from './interpreter';
import { probeInterpreter, resolveInterpreter } from './python';
import { ExtensionSettings, needsRestart, SECTION, toServerSettings } from './settings';
import type { ServerStatus } from './status';

/** Shows one problem to the user with buttons for the actions that fix it. */
export type Notify = (message: string, actions: FixAction[]) => void;

export interface ServerDeps {
  context: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
  status: ServerStatus;
  settings: () => ExtensionSettings;
  resource: () => vscode.Uri | undefined;
  notify: Notify;
}

/** Where the bundled server lives; a development checkout falls back to its server/ sources. */
export function bundledLibs(context: vscode.ExtensionContext): string | undefined {
  for (const rel of ['extension/bundled/libs', 'server']) {
    const dir = context.asAbsolutePath(rel);
    if (fs.existsSync(path.join(dir, 'devflow', '__init__.py'))) return dir;
  }
  return undefined;
}

export class ServerManager implements ServerControl, vscode.Disposable {
  private client?: LanguageClient;
  private queue: Promise<void> = Promise.resolve();
  private current?: ExtensionSettings;
  private readonly crashes = new CrashCounter();
  private lastProblem?: string;

  constructor(private readonly deps: ServerDeps) {}

  isRunning(): boolean {
    return this.client?.state === State.Running;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  restart(reason: string): Promise<void> {
    this.deps.log.info(`Restarting the server: ${reason}`);
    this.lastProblem = undefined; // a deliberate restart may show the same problem again
    this.crashes.reset();
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  /** Settings changed: restart when the process must change, else tell the running server. */
  settingsChanged(): Promise<void> {
    const next = this.deps.settings();
    const before = this.current;
    if (!before || needsRestart(before, next) || before.enable !== next.enable) return this.restart('settings changed');
    this.current = next;
    const client = this.client;
    if (!client || !this.isRunning()) return Promise.resolve();
    return client
      .sendNotification(DidChangeConfigurationNotification.type, { settings: toServerSettings(next).settings })
      .catch((err) => this.deps.log.error(`didChangeConfiguration failed: ${String(err)}`));
  }

  showLogs(): void {
    this.deps.log.show(true);
  }

  async executeServerCommand(command: string, args: unknown[], token?: CancellationLike, onProgress?: (message: string) => void): Promise<unknown> {
    const client = this.client;
    if (!client || !this.isRunning()) throw new Error('the server is not running');
    const workDoneToken = `devflow/${randomUUID()}`;
    const progress = onProgress
      ? client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
          if (value.kind === 'end') return;
          const v = value as WorkDoneProgressBegin | WorkDoneProgressReport;
          const pct = typeof v.percentage === 'number' ? ` (${v.percentage}%)` : '';
          if (v.message) onProgress(`${v.message}${pct}`);
        })
      : undefined;
    try {
      return await client.sendRequest(
        ExecuteCommandRequest.type,
        { command, arguments: args, workDoneToken },
        token as vscode.CancellationToken | undefined,
      );
    } finally {
      progress?.dispose();
    }
  }

  dispose(): void {
    void this.stop();
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const next = this.queue.then(step, step);
    this.queue = next.catch((err) => this.deps.log.error(`Server lifecycle step failed: ${String(err)}`));
    return this.queue;
  }

  private fail(message: string, actions: FixAction[]): void {
    this.deps.log.error(message);
    this.deps.status.setState('error', message);
    if (message !== this.lastProblem) {
      this.lastProblem = message; // one message per problem, not one per retry
      this.deps.notify(message, actions);
    }
  }

  private async doStart(): Promise<void> {
    const { context, log, status } = this.deps;
    const settings = this.deps.settings();
    this.current = settings;
    if (!settings.enable) {
      status.setState('disabled');
      log.info('devflow.enable is off: the server is not started.');
      return;
    }
    status.setState('starting', 'finding a Python interpreter');
    const interpreter = await resolveInterpreter(settings, this.deps.resource(), log);
    if (!interpreter) {
      return this.fail('Devflow needs Python 3.10 or newer to run its server, and none was found (no devflow.interpreter, no interpreter selected in the Python extension, no python3 on PATH).', ['selectInterpreter', 'openSettings']);
    }
    const libs = settings.importStrategy === 'useBundled' ? bundledLibs(context) : undefined;
    if (settings.importStrategy === 'useBundled' && !libs) {
      return this.fail('This copy of the Devflow extension has no bundled server. Set devflow.importStrategy to "fromEnvironment" and install devflow into your interpreter.', ['openSettings', 'showLogs']);
    }
    const cwd = this.deps.resource()?.fsPath;
    log.info(`Interpreter (${interpreter.source}): ${interpreter.command.join(' ')}; import strategy: ${settings.importStrategy}${libs ? ` (${libs})` : ''}`);
    const outcome = await probeInterpreter(interpreter, settings, libs, cwd);
    const verdict: Verdict = assessProbe(outcome);
    if (!verdict.ok) return this.fail(verdict.message, verdict.actions);
    if (outcome.result?.devflow) log.info(`devflow ${outcome.result.devflow.version} from ${outcome.result.devflow.file} on Python ${verdict.version}`);
    await this.launch(interpreter, settings, libs, cwd, verdict.version);
  }

  private async launch(interpreter: Interpreter, settings: ExtensionSettings, libs: string | undefined, cwd: string | undefined, version: string): Promise<void> {
    const { log, status } = this.deps;
    const cmd = serverCommand(interpreter, settings.args);
    const executable: Executable = {
      command: cmd.command,
      args: cmd.args,
      transport: TransportKind.stdio,
      options: { cwd, env: serverEnv(process.env, settings.importStrategy, libs) },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
        { notebook: '*', language: 'python' },
      ],
      initializationOptions: toServerSettings(settings),
      outputChannel: log,
      traceOutputChannel: log,
      revealOutputChannelOn: RevealOutputChannelOn.Never, // problems surface as one notification instead
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => {
          if (this.crashes.crashed(Date.now())) {
            log.warn('The server exited unexpectedly; restarting it.');
            return { action: CloseAction.Restart, handled: true };
          }
          this.fail('The devflow server keeps exiting, so it was not restarted. The log has its error output.', ['showLogs']);
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new LanguageClient(SECTION, 'Devflow', executable, clientOptions);
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) status.setState('running', `Python ${version}`);
      else if (e.newState === State.Starting) status.setState('starting');
      else if (this.client === client && !this.lastProblem) status.setState('stopped');
    });
    this.client = client;
    log.info(`Starting: ${cmd.command} ${cmd.args.join(' ')}`);
    try {
      await client.start();
      this.lastProblem = undefined;
      log.info('Server is running.');
    } catch (err) {
      this.client = undefined;
      await client.dispose().catch(() => undefined);
      this.fail(`The devflow server did not start: ${err instanceof Error ? err.message : String(err)}`, ['showLogs']);
    }
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      await client.stop(5000);
    } catch (err) {
      this.deps.log.warn(`Stopping the server: ${String(err)}`);
    }
    await client.dispose().catch(() => undefined);
    this.deps.status.setState('stopped');
  }
}
