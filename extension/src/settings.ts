// The extension's settings: read from VS Code's configuration, sanitised, and turned into the
// server's initializationOptions. Pure (no runtime `vscode` import) so unit tests can load it.

export type Severity = 'error' | 'warning' | 'information' | 'hint';
export type ImportStrategy = 'useBundled' | 'fromEnvironment';

export const SECTION = 'devflow';
export const SEVERITIES: readonly Severity[] = ['error', 'warning', 'information', 'hint'];
export const DEFAULT_DEBOUNCE_MS = 150;
/** Settings a workspace may not set when it is untrusted (they choose what code runs). */
export const RESTRICTED_KEYS = ['interpreter', 'importStrategy', 'args'] as const;

export interface ExtensionSettings {
  enable: boolean;
  /** `[path, ...args]`; empty means "find one" (Python extension, then python3 on PATH). */
  interpreter: string[];
  importStrategy: ImportStrategy;
  severity: Record<string, Severity>;
  args: string[];
  inlayHints: { enable: boolean };
  lintOnChange: boolean;
  debounceMs: number;
}

/** The subset of vscode.WorkspaceConfiguration.inspect() that settings need. */
export interface Inspected<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}
export interface ConfigSource {
  inspect<T>(key: string): Inspected<T> | undefined;
}

export interface ReadOptions {
  /** Whether the workspace is trusted; if not, workspace values of RESTRICTED_KEYS are ignored. */
  trusted: boolean;
  workspaceFolder?: string;
  home?: string;
  env?: Record<string, string | undefined>;
}

/** The server's initializationOptions (and didChangeConfiguration payload): the agreed contract. */
export interface ServerSettings {
  settings: {
    enable: boolean;
    severity: Record<string, Severity>;
    args: string[];
    inlayHints: { enable: boolean };
    lintOnChange: boolean;
    debounceMs: number;
  };
}

function effective<T>(source: ConfigSource, key: string, trusted: boolean): unknown {
  const v = source.inspect<T>(key);
  if (!v) return undefined;
  const restricted = (RESTRICTED_KEYS as readonly string[]).includes(key);
  if (restricted && !trusted) return v.globalValue ?? v.defaultValue;
  return v.workspaceFolderValue ?? v.workspaceValue ?? v.globalValue ?? v.defaultValue;
}

function asBool(v: unknown, fallback: boolean): boolean {
  return typeof v === 'boolean' ? v : fallback;
}

function asStrings(v: unknown): string[] {
  if (typeof v === 'string') return v.trim() ? [v.trim()] : []; // tolerate a plain string
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x.length > 0) : [];
}

function asSeverities(v: unknown): Record<string, Severity> {
  const out: Record<string, Severity> = {};
  if (!v || typeof v !== 'object' || Array.isArray(v)) return out;
  for (const [key, value] of Object.entries(v as Record<string, unknown>)) {
    const code = key.trim().toUpperCase();
    const sev = typeof value === 'string' ? value.toLowerCase() : '';
    if (/^DEV\d{0,3}$/.test(code) && (SEVERITIES as readonly string[]).includes(sev)) out[code] = sev as Severity;
  }
  return out;
}

function asDebounce(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 10_000 ? Math.round(v) : DEFAULT_DEBOUNCE_MS;
}

/** Expands `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~` in a path. */
export function expandVariables(value: string, opts: Pick<ReadOptions, 'workspaceFolder' | 'home' | 'env'>): string {
  let out = value;
  if (opts.home && (out === '~' || out.startsWith('~/'))) out = opts.home + out.slice(1);
  out = out.replace(/\$\{userHome\}/g, opts.home ?? '${userHome}');
  if (opts.workspaceFolder) out = out.replace(/\$\{workspaceFolder\}/g, opts.workspaceFolder);
  out = out.replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => opts.env?.[name] ?? '');
  return out;
}

export function readSettings(source: ConfigSource, opts: ReadOptions): ExtensionSettings {
  const get = (key: string) => effective(source, key, opts.trusted);
  const strategy = get('importStrategy');
  return {
    enable: asBool(get('enable'), true),
    interpreter: asStrings(get('interpreter')).map((p) => expandVariables(p, opts)),
    importStrategy: strategy === 'fromEnvironment' ? 'fromEnvironment' : 'useBundled',
    severity: asSeverities(get('severity')),
    args: asStrings(get('args')).map((a) => expandVariables(a, opts)),
    inlayHints: { enable: asBool(get('inlayHints.enable'), false) },
    lintOnChange: asBool(get('lintOnChange'), true),
    debounceMs: asDebounce(get('debounceMs')),
  };
}

export function toServerSettings(s: ExtensionSettings): ServerSettings {
  return {
    settings: {
      enable: s.enable,
      severity: { ...s.severity },
      args: [...s.args],
      inlayHints: { enable: s.inlayHints.enable },
      lintOnChange: s.lintOnChange,
      debounceMs: s.debounceMs,
    },
  };
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** A change that needs a new server process (what runs, or its command line), not just a
 * didChangeConfiguration. */
export function needsRestart(before: ExtensionSettings, after: ExtensionSettings): boolean {
  return (
    !same(before.interpreter, after.interpreter) ||
    before.importStrategy !== after.importStrategy ||
    !same(before.args, after.args)
  );
}
