// Registers the `devflow-python` debug type: a configuration provider (F5 on a Python file works
// without launch.json), an adapter factory that runs `python -m debugpy.adapter` with the
// interpreter devflow already uses (offering to install debugpy when it is missing), and the
// "Devflow: Debug Current File" command. The pure parts live in config.ts.

import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import {
  adapterCommand,
  DEBUG_CURRENT_FILE_COMMAND,
  DEBUG_TYPE,
  DEBUGPY_PROBE,
  debuggeePython,
  DevflowLaunchConfig,
  INITIAL_CONFIGURATIONS,
  installCommand,
  resolveLaunchConfig,
} from './config';

/** The interpreter devflow uses (python.ts: setting, Python extension, PATH), as `[exe, ...args]`. */
export type InterpreterSource = () => Promise<string[] | undefined>;

const PROBE_TIMEOUT_MS = 30_000;
const INSTALL_TIMEOUT_MS = 300_000;

function run(command: string, args: string[], timeout: number): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout, windowsHide: true, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ ok: !err, out: `${String(stdout)}${String(stderr)}`.trim() });
    });
  });
}

export function registerDebug(log: vscode.LogOutputChannel, interpreter: InterpreterSource): vscode.Disposable[] {
  const provider: vscode.DebugConfigurationProvider = {
    provideDebugConfigurations: () => INITIAL_CONFIGURATIONS.map((c) => ({ ...c })),
    resolveDebugConfiguration(folder, config) {
      const doc = vscode.window.activeTextEditor?.document;
      const activeFile = doc && doc.uri.scheme === 'file' && doc.languageId === 'python' ? doc.uri.fsPath : undefined;
      const resolved = resolveLaunchConfig(config as Partial<DevflowLaunchConfig>, {
        activeFile,
        workspaceFolder: folder?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      });
      if ('error' in resolved) {
        void vscode.window.showErrorMessage(resolved.error);
        return undefined; // cancels the launch
      }
      return resolved.config;
    },
    async resolveDebugConfigurationWithSubstitutedVariables(_folder, config) {
      // debugpy launches the program with this interpreter; default to devflow's own.
      const python = debuggeePython(config as Partial<DevflowLaunchConfig>, await interpreter());
      if (!python) {
        void vscode.window.showErrorMessage('Devflow: no Python interpreter found to debug with. Set "python" in the configuration or devflow.interpreter.');
        return undefined;
      }
      return { ...config, python };
    },
  };

  const factory: vscode.DebugAdapterDescriptorFactory = {
    async createDebugAdapterDescriptor(session) {
      const python = debuggeePython(session.configuration as Partial<DevflowLaunchConfig>, await interpreter());
      if (!python) throw new Error('Devflow: no Python interpreter found to run the debug adapter.');
      if (!(await ensureDebugpy(python, log))) {
        throw new Error(`Devflow: debugpy is not installed in ${python.join(' ')}; install it (python -m pip install debugpy) to debug.`);
      }
      const { command, args } = adapterCommand(python);
      log.info(`Debug adapter: ${command} ${args.join(' ')}`);
      return new vscode.DebugAdapterExecutable(command, args);
    },
  };

  return [
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, provider),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, { provideDebugConfigurations: provider.provideDebugConfigurations }, vscode.DebugConfigurationProviderTriggerKind.Dynamic),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, factory),
    vscode.commands.registerCommand(DEBUG_CURRENT_FILE_COMMAND, async (uri?: vscode.Uri) => {
      const file = uri?.fsPath ?? vscode.window.activeTextEditor?.document.uri.fsPath;
      if (!file || !file.endsWith('.py')) {
        void vscode.window.showErrorMessage('Devflow: open a Python file to debug.');
        return false;
      }
      const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(file));
      return vscode.debug.startDebugging(folder, { ...INITIAL_CONFIGURATIONS[0], program: file });
    }),
  ];
}

/** True when debugpy imports in `python`; otherwise offers to pip-install it there. */
async function ensureDebugpy(python: string[], log: vscode.LogOutputChannel): Promise<boolean> {
  const [command, ...extra] = python;
  const probe = await run(command, [...extra, '-c', DEBUGPY_PROBE], PROBE_TIMEOUT_MS);
  if (probe.ok) {
    log.info(`debugpy ${probe.out} in ${python.join(' ')}`);
    return true;
  }
  log.warn(`debugpy is not importable in ${python.join(' ')}: ${probe.out.split('\n').pop()}`);
  const INSTALL = 'Install debugpy';
  const picked = await vscode.window.showWarningMessage(
    `Devflow needs debugpy in ${python.join(' ')} to debug. Install it with pip?`,
    { modal: false },
    INSTALL,
  );
  if (picked !== INSTALL) return false;
  const inst = installCommand(python);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Devflow: installing debugpy…' },
    () => run(inst.command, inst.args, INSTALL_TIMEOUT_MS),
  );
  log.info(`${inst.command} ${inst.args.join(' ')}:\n${result.out}`);
  if (!result.ok) {
    void vscode.window.showErrorMessage(`Devflow: installing debugpy failed: ${result.out.split('\n').slice(-2).join(' ')}`);
    return false;
  }
  return (await run(command, [...extra, '-c', DEBUGPY_PROBE], PROBE_TIMEOUT_MS)).ok;
}
