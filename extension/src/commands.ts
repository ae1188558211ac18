// The extension's commands and what each one does, wired through small interfaces so unit tests
// can drive them without VS Code (only `import type` from vscode here).

// "Check Devices in Current File" is devflow.checkCurrentFile: the server's own command is
// devflow.checkFile and vscode-languageclient registers the server's commands under their ids.
export const COMMANDS = {
  checkDevices: 'devflow.checkDevices',
  checkFile: 'devflow.checkCurrentFile',
  restartServer: 'devflow.restartServer',
  showLogs: 'devflow.showLogs',
} as const;

/** Commands that act in the editor itself (clientCommands.ts, ruleDocs.ts). */
export const EDITOR_COMMANDS = {
  fixAll: 'devflow.fixAll',
  showDebugInfo: 'devflow.showDebugInfo',
  openSample: 'devflow.openSample',
  showRule: 'devflow.showRule',
} as const;

/** Commands the server implements (workspace/executeCommand). */
export const SERVER_COMMANDS = {
  checkWorkspace: 'devflow.checkWorkspace',
  checkFile: 'devflow.checkFile',
} as const;

export interface Disposable {
  dispose(): unknown;
}

export interface CancellationLike {
  isCancellationRequested: boolean;
}

/** Editor-side services the commands use (a thin layer over vscode.window/commands). */
export interface CommandHost {
  registerCommand(id: string, run: (...args: unknown[]) => unknown): Disposable;
  executeCommand(id: string, ...args: unknown[]): Thenable<unknown>;
  /** A cancellable notification with progress; `report` updates its message. */
  withProgress<T>(title: string, task: (report: (message: string) => void, token: CancellationLike) => Promise<T>): Thenable<T>;
  showInfo(message: string): void;
  showError(message: string, ...actions: string[]): Thenable<string | undefined>;
  /** URI of the active Python document or notebook, if any. */
  activeDocumentUri(): string | undefined;
}

/** What the commands need from the server manager. */
export interface ServerControl {
  isRunning(): boolean;
  /** Sends workspace/executeCommand; `onProgress` gets the server's work-done progress messages. */
  executeServerCommand(command: string, args: unknown[], token?: CancellationLike, onProgress?: (message: string) => void): Promise<unknown>;
  restart(reason: string): Promise<void>;
  showLogs(): void;
  /** Workspace folder URIs devflow is enabled for; empty when it is enabled for all of them. */
  enabledRoots?(): string[];
}

export interface CheckSummary {
  files: number;
  diagnostics: number;
}

export interface StatusSink {
  setLastCheck(summary: CheckSummary): void;
}

function count(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (Array.isArray(v)) return v.length;
  return undefined;
}

/** The server's checkWorkspace/checkFile result: {"files", "diagnostics"} as counts (or lists). */
export function parseCheckResult(result: unknown, defaultFiles = 0): CheckSummary | undefined {
  if (!result || typeof result !== 'object') return undefined;
  const r = result as Record<string, unknown>;
  const files = count(r.files);
  const diagnostics = count(r.diagnostics);
  if (files === undefined && diagnostics === undefined) return undefined;
  return { files: files ?? defaultFiles, diagnostics: diagnostics ?? 0 };
}

export function describeCheck(s: CheckSummary): string {
  const files = `${s.files} file${s.files === 1 ? '' : 's'}`;
  const problems = s.diagnostics === 0 ? 'no device problems' : `${s.diagnostics} device problem${s.diagnostics === 1 ? '' : 's'}`;
  return `${problems} in ${files}`;
}

/** A cancelled request (by the user, or the server's RequestCancelled / ServerCancelled reply) is
 * not a failure: no error message, nothing logged as an error. */
export function isCancelled(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { name?: string; code?: number };
  return e.name === 'Canceled' || e.code === -32800 || e.code === -32802;
}

const SHOW_LOGS = 'Show Logs';
const RESTART = 'Restart Server';

export function registerCommands(host: CommandHost, server: ServerControl, status: StatusSink): Disposable[] {
  const notRunning = async () => {
    const pick = await host.showError('Devflow: the server is not running.', SHOW_LOGS, RESTART);
    if (pick === SHOW_LOGS) server.showLogs();
    if (pick === RESTART) await server.restart('requested after a failed command');
  };

  const failed = async (what: string, err: unknown) => {
    const pick = await host.showError(`Devflow: ${what} failed: ${err instanceof Error ? err.message : String(err)}`, SHOW_LOGS);
    if (pick === SHOW_LOGS) server.showLogs();
  };

  const checkDevices = async () => {
    if (!server.isRunning()) return notRunning();
    try {
      const result = await host.withProgress('Devflow: checking devices', (report, token) =>
        server.executeServerCommand(SERVER_COMMANDS.checkWorkspace, server.enabledRoots?.() ?? [], token, report),
      );
      const summary = parseCheckResult(result);
      if (summary) status.setLastCheck(summary);
      await host.executeCommand('workbench.actions.view.problems');
      if (summary) host.showInfo(`Devflow: ${describeCheck(summary)}.`);
      return summary;
    } catch (err) {
      if (isCancelled(err)) return undefined;
      return failed('Check Devices', err);
    }
  };

  const checkFile = async (uri?: unknown) => {
    const target = typeof uri === 'string' ? uri : uri && typeof uri === 'object' ? String(uri) : host.activeDocumentUri();
    if (!target) {
      host.showInfo('Devflow: open a Python file or notebook to check it.');
      return undefined;
    }
    if (!server.isRunning()) return notRunning();
    try {
      const result = await server.executeServerCommand(SERVER_COMMANDS.checkFile, [target]);
      const summary = parseCheckResult(result, 1); // the server answers {"diagnostics": n} for one file
      if (summary) {
        status.setLastCheck(summary);
        host.showInfo(`Devflow: ${describeCheck(summary)}.`);
      }
      return summary;
    } catch (err) {
      if (isCancelled(err)) return undefined;
      return failed('Check Devices in Current File', err);
    }
  };

  return [
    host.registerCommand(COMMANDS.checkDevices, checkDevices),
    host.registerCommand(COMMANDS.checkFile, checkFile),
    host.registerCommand(COMMANDS.restartServer, () => server.restart('requested by the user')),
    host.registerCommand(COMMANDS.showLogs, () => server.showLogs()),
  ];
}
