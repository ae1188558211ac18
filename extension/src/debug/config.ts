// devflow's own debug type, `devflow-python`: launch configurations for debugpy's adapter, so the
// Device Placement view works without Microsoft's Python Debugger extension (code-server, VSCodium,
// offline machines). Pure logic (no runtime `vscode` import): adapter.ts is the thin wrapper.

import * as path from 'node:path';

export const DEBUG_TYPE = 'devflow-python';
export const DEBUG_CURRENT_FILE_COMMAND = 'devflow.debugCurrentFile';

/** The launch attributes devflow-python accepts (package.json `configurationAttributes`). */
export interface DevflowLaunchConfig {
  type: string;
  request: string;
  name: string;
  program?: string;
  module?: string;
  args?: string[] | string;
  python?: string | string[];
  cwd?: string;
  env?: Record<string, string | null>;
  justMyCode?: boolean;
  console?: 'internalConsole' | 'integratedTerminal' | 'externalTerminal';
  stopOnEntry?: boolean;
  [key: string]: unknown;
}

export const INITIAL_CONFIGURATIONS: DevflowLaunchConfig[] = [
  {
    type: DEBUG_TYPE,
    request: 'launch',
    name: 'Devflow: Current File',
    program: '${file}',
    console: 'integratedTerminal',
    justMyCode: true,
  },
];

export interface ResolveContext {
  /** The active Python editor's file, if any. */
  activeFile?: string;
  /** The workspace folder of the launch (or of the active file). */
  workspaceFolder?: string;
}

export type Resolved = { config: DevflowLaunchConfig } | { error: string };

/** F5 without a launch.json, or a partial configuration: fill what debugpy needs. */
export function resolveLaunchConfig(input: Partial<DevflowLaunchConfig>, ctx: ResolveContext): Resolved {
  const config: Partial<DevflowLaunchConfig> = { ...input };
  if (!config.type && !config.request && !config.name) {
    if (!ctx.activeFile || !ctx.activeFile.endsWith('.py')) {
      return { error: 'Devflow: open a Python file to debug, or add a "devflow-python" configuration to launch.json.' };
    }
    Object.assign(config, { ...INITIAL_CONFIGURATIONS[0], program: ctx.activeFile });
  }
  config.type = DEBUG_TYPE;
  config.request = config.request ?? 'launch';
  config.name = config.name ?? 'Devflow: Debug';
  if (config.request !== 'launch') return { error: `Devflow: the "${DEBUG_TYPE}" type only launches programs (request "launch").` };
  if (!config.program && !config.module) return { error: 'Devflow: the debug configuration needs "program" or "module".' };
  if (config.program && config.module) return { error: 'Devflow: give either "program" or "module", not both.' };
  if (typeof config.args === 'string') config.args = splitArgs(config.args);
  config.args = config.args ?? [];
  config.justMyCode = config.justMyCode ?? true;
  config.console = config.console ?? 'integratedTerminal';
  if (!config.cwd) {
    config.cwd = ctx.workspaceFolder ?? (config.program && path.isAbsolute(config.program) ? path.dirname(config.program) : undefined);
  }
  return { config: config as DevflowLaunchConfig };
}

/** The interpreter that runs the debuggee: the configuration's `python`, else devflow's own. */
export function debuggeePython(config: Partial<DevflowLaunchConfig>, devflowInterpreter: string[] | undefined): string[] | undefined {
  const p = config.python;
  if (typeof p === 'string' && p.trim()) return [p];
  if (Array.isArray(p) && p.length && p[0]) return [...p];
  return devflowInterpreter && devflowInterpreter.length ? [...devflowInterpreter] : undefined;
}

/** `python -m debugpy.adapter`, run by the debuggee's interpreter. */
export function adapterCommand(python: string[]): { command: string; args: string[] } {
  const [command, ...extra] = python;
  return { command, args: [...extra, '-m', 'debugpy.adapter'] };
}

/** Checks that debugpy imports (prints its version) in a given interpreter. */
export const DEBUGPY_PROBE = 'import debugpy, sys; sys.stdout.write(debugpy.__version__)';

/** The pip command that installs debugpy into that interpreter. */
export function installCommand(python: string[]): { command: string; args: string[] } {
  const [command, ...extra] = python;
  return { command, args: [...extra, '-m', 'pip', 'install', '--disable-pip-version-check', 'debugpy'] };
}

/** Shell-like splitting of an `args` string ("--lr 3 'a b'"). */
export function splitArgs(s: string): string[] {
  const out: string[] = [];
  const rx = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of s.matchAll(rx)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3]));
  return out;
}
