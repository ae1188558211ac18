// Starts, stops and restarts the devflow language server over stdio with vscode-languageclient:
// `python -I <extension>/extension/launcher/devflow_launch.py serve` (never `-m devflow` from the
// workspace folder), or a `devflow` executable named by devflow.path. One server per window;
// every start/stop goes through one queue.

import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  DiagnosticPullMode,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  Executable,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  RevealOutputChannelOn,
  State,
  TransportKind,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import type { CancellationLike, ServerControl } from './commands';
import { assessProbe, CrashCounter, executableCommand, FixAction, launcherCommand, LAUNCHER, serverEnv, Verdict } from './interpreter';
import { probeExecutable, probeInterpreter, resolveInterpreter } from './python';
import { documentSelector, FolderSettings, isReported, lintRunOf, serverPayload } from './folders';
import { ProbeCache, probeKey } from './probeCache';
import { localizeRuleLinks } from './ruleDocs';
import { ExtensionSettings, needsRestart, SECTION } from './settings';
import type { ServerStatus } from './status';

/** The `source` of the server's diagnostics. */
const DIAGNOSTIC_SOURCE = 'devflow';

/** What the running server is, for "Devflow: Show Debug Information". */
export interface LaunchInfo {
  command: string[];
  cwd?: string;
  interpreter?: string;
  interpreterSource?: string;
  python?: string;
  devflow?: string;
  devflowFile?: string;
  bundledLibs?: string;
  /** ms from activation: probe done, server running, first diagnostics. */
  timings: Record<string, number>;
}

/** Shows one problem to the user with buttons for the actions that fix it. */
export type Notify = (message: string, actions: FixAction[]) => void;

export interface ServerDeps {
  context: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
  status: ServerStatus;
  /** The settings read without a resource: the window settings, and the resource settings of
   * files outside every workspace folder. */
  settings: () => ExtensionSettings;
  /** Each workspace folder's settings (multi-root workspaces). */
  folders: () => FolderSettings[];
  resource: () => vscode.Uri | undefined;
  notify: Notify;
  /** "Devflow Trace": on while devflow.trace.server is (see log.ts). */
  trace: vscode.LogOutputChannel;
  /** performance.now() at activation, for the cold-start figures in the log. */
  activatedAt: number;
}

/** Where the bundled server lives; a development checkout falls back to its server/ sources. */
export function bundledLibs(context: vscode.ExtensionContext): string | undefined {
  for (const rel of ['extension/bundled/libs', 'server']) {
    const dir = context.asAbsolutePath(rel);
    if (fs.existsSync(path.join(dir, 'devflow', '__init__.py'))) return dir;
  }
  return undefined;
}

/** Whether devflow runs at all: some workspace folder has devflow.enable on (a folder's setting
 * beats the workspace's), or, with no folder open, the setting itself. */
function serverWanted(settings: ExtensionSettings | undefined, folders: FolderSettings[]): boolean {
  return folders.length > 0 ? folders.some((f) => f.enable) : !!settings?.enable;
}

export class ServerManager implements ServerControl, vscode.Disposable {
  private client?: LanguageClient;
  private queue: Promise<void> = Promise.resolve();
  private current?: ExtensionSettings;
  private readonly crashes = new CrashCounter();
  private lastProblem?: string;
  private folderSettings: FolderSettings[] = [];
  private launchInfo?: LaunchInfo;
  private firstDiagnostics = true;
  private readonly probes: ProbeCache;
  /** Set while the running server was started on a remembered probe (see probeCache.ts). */
  private unprobedKey?: string;

  constructor(private readonly deps: ServerDeps) {
    this.probes = new ProbeCache(deps.context.globalState);
  }

  /** For "Show Debug Information": the last launch, the state, the client's diagnostics. */
  debugInfo(): { state: string; launch?: LaunchInfo; settings?: ExtensionSettings; folders: { uri: string; path: string; enable: boolean; exclude: string[]; settings?: object }[] } {
    const state = !this.client ? 'not started' : this.client.state === State.Running ? 'running' : this.client.state === State.Starting ? 'starting' : 'stopped';
    // Each folder's effective settings as the server gets them (the per-folder part of the payload).
    const sent = new Map(this.payload().folders.map((f) => [f.uri, f.settings]));
    const folders = this.folderSettings.map((f) => ({ uri: f.uri, path: f.path, enable: f.enable, exclude: f.exclude, settings: sent.get(f.uri) }));
    return { state: this.lastProblem ? `${state} (${this.lastProblem})` : state, launch: this.launchInfo, settings: this.current, folders };
  }

  /** URIs of the workspace folders devflow is enabled for (all of them: an empty list). */
  enabledRoots(): string[] {
    const folders = this.folderSettings;
    if (folders.every((f) => f.enable)) return [];
    return folders.filter((f) => f.enable).map((f) => f.uri);
  }

  /** devflow's diagnostics as the Problems panel has them now (pushed and pulled alike). */
  diagnosticsCount(): { files: number; diagnostics: number } {
    let files = 0;
    let diagnostics = 0;
    for (const [, diags] of vscode.languages.getDiagnostics()) {
      const ours = diags.filter((d) => d.source === DIAGNOSTIC_SOURCE).length;
      if (ours) files++;
      diagnostics += ours;
    }
    return { files, diagnostics };
  }

  /** Recounts for the status item when diagnostics change (coalesced: one count per burst). */
  watchDiagnostics(): vscode.Disposable {
    let pending: NodeJS.Timeout | undefined;
    return vscode.languages.onDidChangeDiagnostics(() => {
      if (pending || !this.client) return;
      pending = setTimeout(() => {
        pending = undefined;
        if (this.client) this.deps.status.setProblems(this.diagnosticsCount());
      }, 50);
    });
  }

  private firstReport(uri: vscode.Uri): void {
    if (!this.firstDiagnostics) return;
    this.firstDiagnostics = false;
    this.deps.log.info(`First diagnostics ${this.mark('firstDiagnostics')} ms after activation (${uri.path.split('/').pop()}).`);
  }

  /** Drops the remembered probe the running server was started on; true if there was one. */
  private async forgetProbe(): Promise<boolean> {
    const key = this.unprobedKey;
    this.unprobedKey = undefined;
    if (!key) return false;
    await this.probes.forget(key);
    return true;
  }

  private mark(name: string): number {
    const ms = Math.round(performance.now() - this.deps.activatedAt);
    if (this.launchInfo) this.launchInfo.timings[name] = ms;
    return ms;
  }

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

  /** Settings or workspace folders changed: restart when the process must change (a window
   * setting, or which files are synced: devflow.enable of a folder), else send the running server
   * the new settings of every folder; it checks again only the documents whose settings changed. */
  settingsChanged(): Promise<void> {
    const next = this.deps.settings();
    const before = this.current;
    const folders = this.deps.folders();
    const running = (s: ExtensionSettings | undefined, f: FolderSettings[]) => serverWanted(s, f);
    const selectorChanged = JSON.stringify(documentSelector(folders)) !== JSON.stringify(documentSelector(this.folderSettings));
    if (!before || needsRestart(before, next) || running(before, this.folderSettings) !== running(next, folders) || selectorChanged) {
      return this.restart('settings changed');
    }
    this.current = next;
    this.folderSettings = folders;
    const client = this.client;
    if (!client || !this.isRunning()) return Promise.resolve();
    return client
      .sendNotification(DidChangeConfigurationNotification.type, this.payload())
      .catch((err) => this.deps.log.error(`didChangeConfiguration failed: ${String(err)}`));
  }

  /** initializationOptions and didChangeConfiguration: the global settings and each folder's. */
  private payload() {
    return serverPayload(this.current ?? this.deps.settings(), this.folderSettings);
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
      if (this.deps.settings().showNotifications !== 'off') this.deps.notify(message, actions);
    }
  }

  private async doStart(): Promise<void> {
    const { context, log, status } = this.deps;
    const settings = this.deps.settings();
    this.current = settings;
    this.folderSettings = this.deps.folders();
    if (!serverWanted(settings, this.folderSettings)) {
      status.setState('disabled');
      log.info('devflow.enable is off: the server is not started.');
      return;
    }
    const cwd = settings.cwd ?? this.deps.resource()?.fsPath;
    // devflow.args are per folder: they go in the settings payload, not on the command line.
    const serverArgs = ['--log-level', settings.logLevel];
    this.launchInfo = { command: [], cwd, timings: {} };
    if (!settings.trusted) log.info('Restricted Mode: running the bundled server on a user-level or PATH interpreter; workspace settings that choose what runs are ignored.');
    if (settings.path.length > 0) {
      status.setState('starting', `checking ${settings.path[0]}`);
      const found = await probeExecutable(settings.path, cwd);
      if (!found.version) return this.fail(`Devflow could not run devflow.path "${settings.path[0]}": ${found.error}.`, ['openSettings', 'showLogs']);
      Object.assign(this.launchInfo, { devflow: found.version, interpreter: settings.path[0], interpreterSource: 'devflow.path' });
      this.mark('probed');
      return this.launch(executableCommand(settings.path, serverArgs), cwd, `devflow ${found.version}`);
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
    const launcher = context.asAbsolutePath(LAUNCHER);
    log.info(`Interpreter (${interpreter.source}): ${interpreter.command.join(' ')}; import strategy: ${settings.importStrategy}${libs ? ` (${libs})` : ''}`);
    const key = probeKey(interpreter.command, launcher, libs, settings.importStrategy);
    const remembered = this.probes.get(key);
    const outcome = remembered
      ? { interpreter, strategy: settings.importStrategy, result: remembered }
      : await probeInterpreter(interpreter, settings, launcher, libs, cwd);
    const verdict: Verdict = assessProbe(outcome);
    if (!verdict.ok) return this.fail(verdict.message, verdict.actions);
    if (!remembered) void this.probes.put(key, outcome.result!);
    this.unprobedKey = remembered ? key : undefined;
    const found = outcome.result?.devflow;
    if (found) log.info(`devflow ${found.version} from ${found.file} on Python ${verdict.version}`);
    Object.assign(this.launchInfo, {
      interpreter: outcome.result?.executable ?? interpreter.command[0],
      interpreterSource: interpreter.source,
      python: verdict.version,
      devflow: found?.version,
      devflowFile: found?.file,
      bundledLibs: libs,
    });
    log.info(`Probe ${remembered ? 'remembered from an earlier start' : 'done'} ${this.mark('probed')} ms after activation.`);
    await this.launch(launcherCommand(interpreter, launcher, libs, 'serve', serverArgs), cwd, `Python ${verdict.version}`);
  }

  /** Diagnostics pass through here, pushed (publishDiagnostics) or pulled (textDocument/diagnostic):
   * devflow.enable per folder and devflow.exclude drop them, rule links point at the shipped
   * pages, and the first ones are timed. */
  private middleware(): Middleware {
    const keep = (uri: string, diagnostics: vscode.Diagnostic[]) =>
      isReported(uri, this.folderSettings) ? localizeRuleLinks(this.deps.context, diagnostics) : [];
    return {
      handleDiagnostics: (uri, diagnostics, next) => {
        next(uri, keep(uri.toString(), diagnostics));
        this.firstReport(uri);
      },
      provideDiagnostics: async (document, previousResultId, token, next) => {
        const report = await next(document, previousResultId, token);
        const uri = document instanceof vscode.Uri ? document : document.uri;
        if (report && report.kind === 'full') {
          report.items = keep(uri.toString(), report.items);
          this.firstReport(uri);
        }
        return report;
      },
    };
  }

  private async launch(cmd: { command: string; args: string[] }, cwd: string | undefined, label: string): Promise<void> {
    const { log, status } = this.deps;
    if (this.launchInfo) this.launchInfo.command = [cmd.command, ...cmd.args];
    const executable: Executable = {
      command: cmd.command,
      args: cmd.args,
      transport: TransportKind.stdio,
      options: { cwd, env: serverEnv(process.env) },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: documentSelector(this.folderSettings) as LanguageClientOptions['documentSelector'],
      initializationOptions: this.payload(),
      // Pull on change only where devflow.lint.run is "onType", on save only where it is "onSave"
      // (the server also keeps an onSave document's last report until it is saved).
      diagnosticPullOptions: {
        onChange: true,
        onSave: true,
        filter: (document, mode) => {
          const run = lintRunOf(document.uri.toString(), this.folderSettings, this.current?.lintRun ?? 'onType');
          return (mode === DiagnosticPullMode.onType && run === 'onSave') || (mode === DiagnosticPullMode.onSave && run === 'onType');
        },
      },
      outputChannel: log,
      traceOutputChannel: this.deps.trace,
      revealOutputChannelOn: RevealOutputChannelOn.Never, // problems surface as one notification instead
      middleware: this.middleware(),
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => {
          void this.forgetProbe(); // the next start probes again
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
      if (e.newState === State.Running) status.setState('running', label);
      else if (e.newState === State.Starting) status.setState('starting');
      else if (this.client === client && !this.lastProblem) status.setState('stopped');
    });
    this.client = client;
    log.info(`Starting: ${cmd.command} ${cmd.args.join(' ')}${cwd ? ` (cwd ${cwd})` : ''}`);
    try {
      await client.start();
      this.lastProblem = undefined;
      log.info(`Server is running ${this.mark('running')} ms after activation.`);
    } catch (err) {
      this.client = undefined;
      await client.dispose().catch(() => undefined);
      if (await this.forgetProbe()) {
        log.info('The server did not start on a remembered probe; probing the interpreter again.');
        return this.doStart();
      }
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
    this.deps.status.setProblems(undefined);
  }
}
