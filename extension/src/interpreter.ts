// Which Python runs the server, and whether it can. Pure logic (no runtime `vscode` import):
// python.ts feeds it what the Python extension and the settings say; server.ts acts on the verdict.

import * as path from 'node:path';
import type { ImportStrategy } from './settings';

export const MIN_PYTHON: readonly [number, number] = [3, 10];
/** CPython versions the bundled libcst wheels (native code) are shipped for. */
export const BUNDLED_PYTHONS = ['3.10', '3.11', '3.12', '3.13', '3.14'];

export type InterpreterSource = 'setting' | 'python-extension' | 'path';

export interface Interpreter {
  /** `[executable, ...args]` */
  command: string[];
  source: InterpreterSource;
}

export interface InterpreterInputs {
  /** devflow.interpreter (already sanitised and expanded). */
  setting: string[];
  /** The Python extension's active environment, when that extension is installed and has one. */
  pythonExtension?: string[];
  /** Looks a program up on PATH (e.g. `python3`); undefined if absent. */
  findOnPath: (name: string) => string | undefined;
  /** False in Restricted Mode: the Python extension's choice is per workspace (often a venv inside
   * it), so the workspace could pick the executable; only user-level choices count then. */
  trusted?: boolean;
}

/** An explicit devflow.interpreter wins (it is an override, empty by default); then the Python
 * extension's selected environment; then python3 (or python) on PATH. */
export function chooseInterpreter(inputs: InterpreterInputs): Interpreter | undefined {
  if (inputs.setting.length > 0) return { command: [...inputs.setting], source: 'setting' };
  const trusted = inputs.trusted !== false;
  if (trusted && inputs.pythonExtension && inputs.pythonExtension.length > 0 && inputs.pythonExtension[0]) {
    return { command: [...inputs.pythonExtension], source: 'python-extension' };
  }
  for (const name of ['python3', 'python']) {
    const found = inputs.findOnPath(name);
    if (found) return { command: [found], source: 'path' };
  }
  return undefined;
}

/** Searches `pathVar` (a PATH value) for `name`, using `isExecutable` to test candidates. */
export function findOnPath(
  name: string,
  pathVar: string | undefined,
  isExecutable: (file: string) => boolean,
  delimiter: string = path.delimiter,
): string | undefined {
  for (const dir of (pathVar ?? '').split(delimiter)) {
    // A relative entry ("." or "bin") would resolve against the cwd: the workspace folder.
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** The launcher shipped with the extension (extension/launcher/devflow_launch.py): it runs the probe
 * and the server in isolated mode (`-I`), so nothing in the workspace is ever on the import path. */
export const LAUNCHER = 'extension/launcher/devflow_launch.py';

/** `python [interpreter args] -I -X utf8 <launcher> [--libs DIR] probe|serve [ARGS]`: `-I` keeps the
 * cwd, PYTHONPATH and user site-packages off sys.path; the launcher adds the bundled libs itself. */
export function launcherCommand(
  interpreter: Interpreter,
  launcher: string,
  libs: string | undefined,
  mode: 'probe' | 'serve',
  args: string[] = [],
): { command: string; args: string[] } {
  const [command, ...extra] = interpreter.command;
  return { command, args: [...extra, '-I', '-X', 'utf8', launcher, ...(libs ? ['--libs', libs] : []), mode, ...args] };
}

export interface ProbeResult {
  version: number[];
  implementation?: string;
  executable?: string;
  errors: Record<string, string>;
  devflow?: { version: string; file: string };
}

/** Parses the probe's stdout (the last JSON line; interpreters may print banners first). */
export function parseProbe(stdout: string): ProbeResult | undefined {
  const lines = stdout.split(/\r?\n/).filter((l) => l.trim().startsWith('{'));
  const last = lines[lines.length - 1];
  if (!last) return undefined;
  try {
    const v = JSON.parse(last) as Partial<ProbeResult>;
    if (!Array.isArray(v.version)) return undefined;
    return { version: v.version, implementation: v.implementation, executable: v.executable, errors: v.errors ?? {}, devflow: v.devflow };
  } catch {
    return undefined;
  }
}

/** What the user can do about a problem; extension.ts maps these to buttons. */
export type FixAction = 'selectInterpreter' | 'useBundled' | 'openSettings' | 'showLogs';

export type Verdict =
  | { ok: true; version: string }
  | { ok: false; message: string; actions: FixAction[] };

export interface ProbeOutcome {
  interpreter: Interpreter;
  strategy: ImportStrategy;
  /** Set when the interpreter could not be run at all (spawn error, timeout, crash). */
  spawnError?: string;
  result?: ProbeResult;
}

const versionText = (v: number[]) => v.slice(0, 3).join('.');

/** The one message (with the actions that fix it) for an interpreter that cannot run the server. */
export function assessProbe(o: ProbeOutcome): Verdict {
  const exe = o.interpreter.command[0];
  const pick: FixAction = o.interpreter.source === 'setting' ? 'openSettings' : 'selectInterpreter';
  const fixes: FixAction[] = pick === 'openSettings' ? ['openSettings', 'selectInterpreter'] : ['selectInterpreter', 'openSettings'];
  if (o.spawnError !== undefined || !o.result) {
    const why = o.spawnError ?? 'it printed nothing devflow understands';
    return { ok: false, message: `Devflow could not run the Python interpreter "${exe}": ${why}.`, actions: [...fixes, 'showLogs'] };
  }
  const r = o.result;
  const [major = 0, minor = 0] = r.version;
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
    return {
      ok: false,
      message: `Devflow needs Python ${MIN_PYTHON.join('.')} or newer, but "${exe}" is Python ${versionText(r.version)}. Select a newer interpreter.`,
      actions: fixes,
    };
  }
  const failures = Object.entries(r.errors);
  if (failures.length === 0) return { ok: true, version: versionText(r.version) };
  const first = failures[0];
  const detail = `${first[0]}: ${first[1]}`;
  if (o.strategy === 'fromEnvironment') {
    return {
      ok: false,
      message: `Devflow is set to use the server installed in "${exe}", but it cannot be imported there (${detail}). Install it with "pip install devflow", or use the server bundled with the extension.`,
      actions: ['useBundled', ...fixes],
    };
  }
  const bundledFor = `CPython ${BUNDLED_PYTHONS[0]} to ${BUNDLED_PYTHONS[BUNDLED_PYTHONS.length - 1]}`;
  return {
    ok: false,
    message: `The devflow server bundled with the extension cannot run on "${exe}" (${r.implementation ?? 'python'} ${versionText(r.version)}): ${detail}. This build supports ${bundledFor}; select one of those interpreters.`,
    actions: [...fixes, 'showLogs'],
  };
}

/** The server's command line when devflow.path names a `devflow` executable (pipx, uv tool). */
export function executableCommand(devflowPath: string[], args: string[]): { command: string; args: string[] } {
  const [command, ...extra] = devflowPath;
  return { command, args: [...extra, 'serve', ...args] };
}

/** Environment for the server and the probe. PYTHON* variables are ignored under `-I`; these keep a
 * `devflow` executable (devflow.path) from putting the cwd on sys.path or reading PYTHONPATH. */
export function serverEnv(base: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  delete env.PYTHONPATH;
  delete env.PYTHONSTARTUP;
  delete env.PYTHONHOME;
  env.PYTHONSAFEPATH = '1';
  env.PYTHONUTF8 = '1';
  return env;
}

/** Stops a crash loop: allows `max` unexpected exits within `windowMs`, then says stop. */
export class CrashCounter {
  private times: number[] = [];
  constructor(private readonly max = 4, private readonly windowMs = 3 * 60_000) {}
  /** Records a crash at `now`; true while another restart is still allowed. */
  crashed(now: number): boolean {
    this.times = this.times.filter((t) => now - t < this.windowMs);
    this.times.push(now);
    return this.times.length <= this.max;
  }
  reset(): void {
    this.times = [];
  }
}
