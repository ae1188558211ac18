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
}

/** An explicit devflow.interpreter wins (it is an override, empty by default); then the Python
 * extension's selected environment; then python3 (or python) on PATH. */
export function chooseInterpreter(inputs: InterpreterInputs): Interpreter | undefined {
  if (inputs.setting.length > 0) return { command: [...inputs.setting], source: 'setting' };
  if (inputs.pythonExtension && inputs.pythonExtension.length > 0 && inputs.pythonExtension[0]) {
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
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Modules the server needs; imported (not just found) so a wrong-platform native part shows up. */
export const REQUIRED_MODULES = ['devflow', 'devflow.lsp', 'pygls.lsp.server', 'lsprotocol.types', 'libcst'];

/** Run as `python -c PROBE_SCRIPT`: prints one JSON line about the interpreter and what it imports.
 * Written for old Pythons too, so a too-old interpreter still reports its version. */
export const PROBE_SCRIPT = [
  'import sys, json',
  'r = {"version": list(sys.version_info[:3]), "implementation": sys.implementation.name, "executable": sys.executable, "errors": {}}',
  'if sys.version_info >= (3, 10):',
  '    import importlib',
  `    for m in ${JSON.stringify(REQUIRED_MODULES)}:`,
  '        try:',
  '            importlib.import_module(m)',
  '        except BaseException as e:',
  '            r["errors"][m] = "%s: %s" % (type(e).__name__, e)',
  '    try:',
  '        import devflow',
  '        r["devflow"] = {"version": getattr(devflow, "__version__", "?"), "file": devflow.__file__}',
  '    except BaseException:',
  '        pass',
  'print(json.dumps(r))',
].join('\n');

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

/** The server's command line: `<python> [interpreter args] -m devflow serve [devflow.args]`. */
export function serverCommand(interpreter: Interpreter, args: string[]): { command: string; args: string[] } {
  const [command, ...extra] = interpreter.command;
  return { command, args: [...extra, '-m', 'devflow', 'serve', ...args] };
}

/** Environment for the server (and the probe): with useBundled, the bundled libs go first on
 * PYTHONPATH so they win over whatever the environment has installed. */
export function serverEnv(
  base: Record<string, string | undefined>,
  strategy: ImportStrategy,
  bundledLibs: string | undefined,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  env.PYTHONUTF8 = '1';
  if (strategy === 'useBundled' && bundledLibs) {
    env.PYTHONPATH = base.PYTHONPATH ? `${bundledLibs}${path.delimiter}${base.PYTHONPATH}` : bundledLibs;
  }
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
