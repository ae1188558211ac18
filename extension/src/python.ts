// The Python interpreter that runs the server: asks the Python extension (when installed) for its
// selected environment, tells us when that changes, and probes an interpreter before use.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import {
  chooseInterpreter,
  findOnPath,
  Interpreter,
  launcherCommand,
  parseProbe,
  ProbeOutcome,
  serverEnv,
} from './interpreter';
import type { ExtensionSettings } from './settings';

const PYTHON_EXTENSION_ID = 'ms-python.python';
const PROBE_TIMEOUT_MS = 30_000;

// The part of the Python extension's public API (@vscode/python-extension) that we use.
interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
  resolveEnvironment(env: { id: string; path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}
interface PythonApi {
  environments?: PythonEnvironmentsApi;
}

export function hasPythonExtension(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

async function pythonApi(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (!ext) return undefined;
  try {
    return ext.isActive ? ext.exports : await ext.activate();
  } catch {
    return undefined;
  }
}

/** The Python extension's selected interpreter for `resource`, or undefined. */
export async function pythonExtensionInterpreter(resource?: vscode.Uri, log?: vscode.LogOutputChannel): Promise<string[] | undefined> {
  const envs = (await pythonApi())?.environments;
  if (!envs) return undefined;
  try {
    const env = await envs.resolveEnvironment(envs.getActiveEnvironmentPath(resource));
    const exe = env?.executable.uri?.fsPath;
    return exe ? [exe] : undefined;
  } catch (err) {
    log?.warn(`Python extension could not resolve the active environment: ${String(err)}`);
    return undefined;
  }
}

/** Calls `listener` when the interpreter selected in the Python extension changes. */
export async function onPythonInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const envs = (await pythonApi())?.environments;
  return envs?.onDidChangeActiveEnvironmentPath(() => listener());
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export async function resolveInterpreter(settings: ExtensionSettings, resource: vscode.Uri | undefined, log: vscode.LogOutputChannel): Promise<Interpreter | undefined> {
  // Untrusted: the Python extension's choice is the workspace's (e.g. its .venv): not asked at all.
  const ask = settings.interpreter.length === 0 && settings.trusted;
  const fromExtension = ask ? await pythonExtensionInterpreter(resource, log) : undefined;
  return chooseInterpreter({
    setting: settings.interpreter,
    pythonExtension: fromExtension,
    findOnPath: (name) => findOnPath(name, process.env.PATH, isExecutable),
    trusted: settings.trusted,
  });
}

/** Runs the launcher's cheap probe (no server import) in isolated mode; never throws. */
export function probeInterpreter(
  interpreter: Interpreter,
  settings: ExtensionSettings,
  launcher: string,
  bundledLibs: string | undefined,
  cwd: string | undefined,
): Promise<ProbeOutcome> {
  const cmd = launcherCommand(interpreter, launcher, bundledLibs, 'probe');
  return new Promise((resolve) => {
    execFile(cmd.command, cmd.args, { env: serverEnv(process.env), cwd, timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (err, stdout, stderr) => {
      const result = parseProbe(String(stdout));
      const base = { interpreter, strategy: settings.importStrategy };
      if (result) return resolve({ ...base, result });
      const why = err ? (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : err.message : String(stderr).trim() || 'no output';
      resolve({ ...base, spawnError: why.split('\n')[0] });
    });
  });
}

/** `devflow --version` for devflow.path: the version, or why it cannot run; never throws. */
export function probeExecutable(devflowPath: string[], cwd: string | undefined): Promise<{ version?: string; error?: string }> {
  const [command, ...extra] = devflowPath;
  return new Promise((resolve) => {
    execFile(command, [...extra, '--version'], { env: serverEnv(process.env), cwd, timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (err, stdout) => {
      const m = /devflow\s+(\S+)/.exec(String(stdout));
      if (m) return resolve({ version: m[1] });
      resolve({ error: err ? ((err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : err.message.split('\n')[0]) : 'it did not print a devflow version' });
    });
  });
}
