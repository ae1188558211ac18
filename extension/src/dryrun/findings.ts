// The dry run's JSON report (`devflow dryrun --format json`) as editor diagnostics, and the rule
// that keeps them: a finding stays until the next dry run or an edit of its line; edits above it
// shift it. Pure module (no `vscode` at runtime) so the unit tests can load it.

export const DRYRUN_SOURCE = 'devflow-dryrun';

export type DryRunSeverity = 'error' | 'warning' | 'information';

export interface DryRunRelated {
  path: string;
  /** 0-based */
  line: number;
  message: string;
}

export interface DryRunDiagnostic {
  path: string;
  /** 0-based line; the whole line is the range. */
  line: number;
  code: string;
  url?: string;
  severity: DryRunSeverity;
  message: string;
  count: number;
  related: DryRunRelated[];
}

export interface DryRunStatus {
  state: string;
  steps: number;
  summary: string;
}

export interface DryRunResult {
  diagnostics: DryRunDiagnostic[];
  status: DryRunStatus;
}

interface RawRelated { path?: unknown; line?: unknown; message?: unknown }
interface RawDiagnostic {
  path?: unknown; line?: unknown; code?: unknown; url?: unknown; severity?: unknown; message?: unknown;
  count?: unknown; related?: unknown; static?: { code?: unknown; message?: unknown; fix?: { title?: unknown } | null } | null;
}

const STATE_TEXT: Record<string, string> = {
  finished: 'the script ran to its end',
  stopped: 'stopped early',
  timeout: 'stopped early (timeout)',
  exit: 'the script exited with an error status',
  error: 'the script ended early with an exception',
  interrupted: 'interrupted',
  crashed: 'the run crashed before it could report',
};

function line0(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 ? v - 1 : undefined;
}

/** Parses the report; throws on text that is not a dry-run report. */
export function parseDryRunReport(text: string): DryRunResult {
  const doc = JSON.parse(text) as { tool?: unknown; diagnostics?: unknown; status?: Record<string, unknown> };
  if (!doc || doc.tool !== 'devflow-dryrun' || !Array.isArray(doc.diagnostics)) {
    throw new Error('not a devflow dry-run report');
  }
  const diagnostics: DryRunDiagnostic[] = [];
  for (const raw of doc.diagnostics as RawDiagnostic[]) {
    const line = line0(raw.line);
    if (typeof raw.path !== 'string' || line === undefined || typeof raw.code !== 'string') continue;
    const count = typeof raw.count === 'number' && raw.count > 1 ? raw.count : 1;
    let message = typeof raw.message === 'string' ? raw.message : raw.code;
    if (count > 1) message += ` (${count} times)`;
    const st = raw.static;
    if (st && typeof st.code === 'string' && typeof st.message === 'string') {
      message += `\nExplained by ${st.code}: ${st.message}`;
      if (st.fix && typeof st.fix.title === 'string') message += ` Fix: ${st.fix.title}`;
    }
    const related: DryRunRelated[] = [];
    if (Array.isArray(raw.related)) {
      for (const r of raw.related as RawRelated[]) {
        const rl = line0(r.line);
        if (typeof r.path === 'string' && rl !== undefined && typeof r.message === 'string') related.push({ path: r.path, line: rl, message: r.message });
      }
    }
    const severity: DryRunSeverity = raw.severity === 'warning' ? 'warning' : raw.severity === 'information' ? 'information' : 'error';
    diagnostics.push({ path: raw.path, line, code: raw.code, url: typeof raw.url === 'string' ? raw.url : undefined, severity, message, count, related });
  }
  const s = doc.status ?? {};
  const state = typeof s.state === 'string' ? s.state : 'finished';
  const steps = typeof s.steps === 'number' ? s.steps : 0;
  let summary = STATE_TEXT[state] ?? state;
  if (typeof s.reason === 'string' && s.reason) summary = `stopped early (${s.reason})`;
  if (state === 'error' && typeof s.exception === 'string') summary = `the script ended early: ${s.exception}`;
  const n = diagnostics.length;
  summary = `${n === 0 ? 'no device mix' : `${n} device mix${n === 1 ? '' : 'es'}`}; ${summary}; ${steps} optimizer step${steps === 1 ? '' : 's'}`;
  return { diagnostics, status: { state, steps, summary } };
}

/** Groups diagnostics by file path. */
export function byPath(diags: DryRunDiagnostic[]): Map<string, DryRunDiagnostic[]> {
  const out = new Map<string, DryRunDiagnostic[]>();
  for (const d of diags) {
    const list = out.get(d.path) ?? [];
    list.push(d);
    out.set(d.path, list);
  }
  return out;
}

/** One text change: lines [startLine, endLine] (0-based, inclusive) were replaced by text that
 * spans `newLineCount` lines (1 for a change within one line). */
export interface LineChange {
  startLine: number;
  endLine: number;
  newLineCount: number;
}

/** What is left after an edit: findings on an edited line go; those below move with the text. */
export function applyChange(diags: DryRunDiagnostic[], change: LineChange): DryRunDiagnostic[] {
  const delta = change.newLineCount - (change.endLine - change.startLine + 1);
  const out: DryRunDiagnostic[] = [];
  for (const d of diags) {
    if (d.line >= change.startLine && d.line <= change.endLine) continue;
    out.push(d.line > change.endLine ? { ...d, line: d.line + delta } : d);
  }
  return out;
}

/** The command line that runs the dry run with a JSON report in `outFile`. */
export function dryRunArgs(file: string, outFile: string, extra: string[] = []): string[] {
  return ['-m', 'devflow', 'dryrun', '--format', 'json', '--output-file', outFile, ...extra, file];
}
