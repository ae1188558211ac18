// The extension's settings: read from VS Code's configuration, sanitised, and turned into the
// server's initializationOptions. Pure (no runtime `vscode` import) so unit tests can load it.
//
// Two kinds (package.json `scope`): window settings choose the one server process and the window's
// behaviour (interpreter, path, importStrategy, cwd, logLevel, showNotifications, trace.server) and
// are read without a resource; resource settings (enable, severity, args, lint.run, ...) are read
// once without a resource (files outside every folder) and once per workspace folder, and the
// server applies each folder's to the files in it (see toServerSettings).

export type Severity = 'error' | 'warning' | 'information' | 'hint';
export type ImportStrategy = 'useBundled' | 'fromEnvironment';
export type LintRun = 'onType' | 'onSave';
export type ShowNotifications = 'off' | 'onError' | 'onWarning' | 'always';
export type LogLevel = 'error' | 'warning' | 'info' | 'debug';

export const SECTION = 'devflow';
export const SEVERITIES: readonly Severity[] = ['error', 'warning', 'information', 'hint'];
export const DEFAULT_DEBOUNCE_MS = 150;
export const DEFAULT_TIME_BUDGET_MS = 3000;
/** Settings a workspace may not set when it is untrusted (they choose what code runs). */
export const RESTRICTED_KEYS = ['interpreter', 'importStrategy', 'args', 'path', 'cwd'] as const;
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warning', 'info', 'debug'];
export const NOTIFICATION_LEVELS: readonly ShowNotifications[] = ['off', 'onError', 'onWarning', 'always'];

export interface ExtensionSettings {
  enable: boolean;
  /** `[path, ...args]`; empty means "find one" (Python extension, then python3 on PATH). */
  interpreter: string[];
  importStrategy: ImportStrategy;
  severity: Record<string, Severity>;
  args: string[];
  inlayHints: { enable: boolean };
  /** devflow.lint.run (the old boolean devflow.lintOnChange is read when lint.run is not set). */
  lintRun: LintRun;
  debounceMs: number;
  /** How long one file's analysis may run (0: no limit). */
  timeBudgetMs: number;
  /** A `devflow` executable (pipx, uv tool) as `[path, ...args]`; wins over the interpreter. */
  path: string[];
  /** The server's working directory (default: the workspace folder). */
  cwd?: string;
  /** Globs (matched against the path relative to the workspace folder, or absolute): not reported. */
  exclude: string[];
  showNotifications: ShowNotifications;
  logLevel: LogLevel;
  /** False in Restricted Mode: only the bundled server, on a user-chosen or PATH interpreter. */
  trusted: boolean;
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

/** The resource settings the server applies to the files of one workspace folder (or outside all). */
export interface ServerResourceSettings {
  enable: boolean;
  severity: Record<string, Severity>;
  /** `devflow serve` options read per folder: --select, --ignore, --extend-select, --config, --time-budget-ms. */
  args: string[];
  inlayHints: { enable: boolean };
  lintOnChange: boolean;
  debounceMs: number;
  timeBudgetMs: number;
  exclude: string[];
}

/** The server's initializationOptions (and didChangeConfiguration payload): the agreed contract
 * (server/devflow/lsp/folder_settings.py). `settings` applies outside every workspace folder; each
 * entry of `folders` to the files of that folder (the innermost folder holding a file wins). */
export interface ServerSettings {
  settings: ServerResourceSettings;
  folders: { uri: string; settings: ServerResourceSettings }[];
}

function effective<T>(source: ConfigSource, key: string, trusted: boolean): unknown {
  const v = source.inspect<T>(key);
  if (!v) return undefined;
  const restricted = (RESTRICTED_KEYS as readonly string[]).includes(key);
  if (restricted && !trusted) return v.globalValue ?? v.defaultValue;
  return v.workspaceFolderValue ?? v.workspaceValue ?? v.globalValue ?? v.defaultValue;
}

/** An object setting as VS Code's get() returns it: the levels merged key by key, the most specific
 * level winning (a folder's {"DEV101": "hint"} keeps the user's {"DEV2": "warning"}). */
function mergedObject(source: ConfigSource, key: string): Record<string, unknown> {
  const v = source.inspect<unknown>(key);
  const out: Record<string, unknown> = {};
  for (const level of [v?.defaultValue, v?.globalValue, v?.workspaceValue, v?.workspaceFolderValue]) {
    if (level && typeof level === 'object' && !Array.isArray(level)) Object.assign(out, level);
  }
  return out;
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

function asTimeBudget(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 3_600_000 ? Math.round(v) : DEFAULT_TIME_BUDGET_MS;
}

/** Whether a file is excluded by devflow.exclude: globs with `*` (within a path segment), `**` (any
 * segments) and `?`, matched against the path relative to its workspace folder (or absolute), or
 * against any trailing part of it when the glob has no slash (`build` excludes every build/). */
export function isExcluded(file: string, folder: string | undefined, globs: string[]): boolean {
  if (globs.length === 0) return false;
  const norm = (p: string) => p.replace(/\\/g, '/');
  const abs = norm(file);
  const root = folder ? norm(folder).replace(/\/$/, '') : undefined;
  const rel = root && abs.startsWith(root + '/') ? abs.slice(root.length + 1) : undefined;
  const parts = (rel ?? abs.replace(/^\//, '')).split('/');
  return globs.some((glob) => {
    const g = norm(glob).replace(/\/$/, '');
    const re = globToRegExp(g);
    if (g.startsWith('/')) return re.test(abs) || re.test(abs + '/');
    if (!g.includes('/')) return parts.some((_, i) => re.test(parts.slice(i).join('/')) || re.test(parts[i]));
    return rel !== undefined && (re.test(rel) || parts.some((_, i) => re.test(parts.slice(0, i + 1).join('/'))));
  });
}

function globToRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*' && glob[i + 1] === '*') {
      i++;
      if (glob[i + 1] === '/') {
        out += '(?:.*/)?'; // `**/` is zero or more folders
        i++;
      } else out += '.*';
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
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

function asEnum<T extends string>(v: unknown, allowed: readonly T[], fallback: T): T {
  return typeof v === 'string' && (allowed as readonly string[]).includes(v) ? (v as T) : fallback;
}

/** Whether a key was set anywhere (not just its default). */
function isSet(source: ConfigSource, key: string): boolean {
  const v = source.inspect(key);
  return !!v && (v.globalValue !== undefined || v.workspaceValue !== undefined || v.workspaceFolderValue !== undefined);
}

/** devflow.lint.run, or the deprecated devflow.lintOnChange when only that one is set. */
function lintRun(source: ConfigSource, get: (key: string) => unknown): LintRun {
  if (!isSet(source, 'lint.run') && isSet(source, 'lintOnChange')) return get('lintOnChange') === false ? 'onSave' : 'onType';
  return asEnum(get('lint.run'), ['onType', 'onSave'], 'onType');
}

export function readSettings(source: ConfigSource, opts: ReadOptions): ExtensionSettings {
  const get = (key: string) => effective(source, key, opts.trusted);
  const strategy = get('importStrategy');
  const cwd = typeof get('cwd') === 'string' && (get('cwd') as string).trim() ? expandVariables((get('cwd') as string).trim(), opts) : undefined;
  return {
    enable: asBool(get('enable'), true),
    interpreter: asStrings(get('interpreter')).map((p) => expandVariables(p, opts)),
    // Restricted Mode runs only the bundled server (an environment's devflow is the workspace's code).
    importStrategy: strategy === 'fromEnvironment' && opts.trusted ? 'fromEnvironment' : 'useBundled',
    severity: asSeverities(mergedObject(source, 'severity')),
    args: asStrings(get('args')).map((a) => expandVariables(a, opts)),
    inlayHints: { enable: asBool(get('inlayHints.enable'), false) },
    lintRun: lintRun(source, get),
    debounceMs: asDebounce(get('debounceMs')),
    timeBudgetMs: asTimeBudget(get('timeBudgetMs')),
    path: opts.trusted ? asStrings(get('path')).map((p) => expandVariables(p, opts)) : [],
    cwd,
    exclude: asStrings(get('exclude')),
    showNotifications: asEnum(get('showNotifications'), NOTIFICATION_LEVELS, 'onError'),
    logLevel: asEnum(get('logLevel'), LOG_LEVELS, 'info'),
    trusted: opts.trusted,
  };
}

export function toResourceSettings(s: ExtensionSettings): ServerResourceSettings {
  return {
    enable: s.enable,
    severity: { ...s.severity },
    args: [...s.args],
    inlayHints: { enable: s.inlayHints.enable },
    lintOnChange: s.lintRun === 'onType',
    debounceMs: s.debounceMs,
    timeBudgetMs: s.timeBudgetMs,
    exclude: [...s.exclude],
  };
}

/** The payload for the server: the settings read without a resource, and each workspace folder's
 * (complete, not a difference: the server reads each object on its own). */
export function toServerSettings(global: ExtensionSettings, folders: { uri: string; settings: ExtensionSettings }[] = []): ServerSettings {
  return {
    settings: toResourceSettings(global),
    folders: folders.map((f) => ({ uri: f.uri, settings: toResourceSettings(f.settings) })),
  };
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** A change of the window settings that needs a new server process (what runs, or its command
 * line), not just a didChangeConfiguration. (`args` are per folder, sent in the payload.) */
export function needsRestart(before: ExtensionSettings, after: ExtensionSettings): boolean {
  return (
    !same(before.interpreter, after.interpreter) ||
    before.importStrategy !== after.importStrategy ||
    !same(before.path, after.path) ||
    before.cwd !== after.cwd ||
    before.logLevel !== after.logLevel ||
    before.trusted !== after.trusted
  );
}
