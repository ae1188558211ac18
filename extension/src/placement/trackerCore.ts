// The debug-adapter tracker's logic, free of `vscode` so it can be tested with a recorded DAP
// exchange. On a `stopped` event with reason `exception` it asks `exceptionInfo`; when the text is
// a cross-device message it evaluates the probe (PROBE_EXPRESSION, the very text the Python
// end-to-end test evaluates) in the top frame with context `repl` and `format.rawString`, and hands
// the report on. It only reads: it never continues, pauses or alters the debuggee, and every
// failure is logged, never thrown.

import { PROBE_EXPRESSION } from './probeExpression.generated';
import { deviceMessageFamily, parseReport, PlacementReport } from './report';

/** The part of vscode.DebugSession the tracker needs. */
export interface DebugSessionLike {
  readonly id: string;
  readonly name: string;
  customRequest(command: string, args?: unknown): Thenable<unknown> | Promise<unknown>;
}

export interface ReportContext {
  sessionId: string;
  sessionName: string;
  threadId: number;
  exceptionText: string;
  family: string;
}

export interface PlacementSink {
  onReport(report: PlacementReport, context: ReportContext): void;
  log(level: 'info' | 'warn' | 'error', message: string): void;
}

interface DapMessage {
  type?: string;
  event?: string;
  body?: Record<string, unknown>;
}

export const EVALUATE_TIMEOUT_MS = 30_000;

export class PlacementTrackerCore {
  private lastKey: string | undefined;
  private busy = false;

  constructor(
    private readonly session: DebugSessionLike,
    private readonly sink: PlacementSink,
    private readonly timeoutMs = EVALUATE_TIMEOUT_MS,
  ) {}

  /** Called for every message the debug adapter sends to VS Code. Never throws. */
  onDidSendMessage(message: unknown): Promise<void> | undefined {
    const msg = message as DapMessage;
    if (!msg || msg.type !== 'event') return undefined;
    if (msg.event === 'continued' || msg.event === 'terminated' || msg.event === 'exited') {
      if (msg.event !== 'continued') this.lastKey = undefined;
      return undefined;
    }
    if (msg.event !== 'stopped' || msg.body?.reason !== 'exception') return undefined;
    const threadId = Number(msg.body?.threadId);
    if (!Number.isFinite(threadId)) return undefined;
    return this.probe(threadId).catch((err) => this.sink.log('error', `device placement probe failed: ${describe(err)}`));
  }

  private async probe(threadId: number): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const info = (await this.request('exceptionInfo', { threadId })) as {
        exceptionId?: string;
        description?: string;
        details?: { message?: string; typeName?: string };
      };
      const text = [info?.exceptionId, info?.description ?? info?.details?.message].filter(Boolean).join(': ');
      const family = deviceMessageFamily(text);
      if (!family) return;
      // With the `raised` filter the same exception stops again in every outer frame: probe once.
      const key = `${threadId}\u0000${text}`;
      if (key === this.lastKey) return;
      this.lastKey = key;
      const trace = (await this.request('stackTrace', { threadId, startFrame: 0, levels: 1 })) as {
        stackFrames?: { id: number }[];
      };
      const frameId = trace?.stackFrames?.[0]?.id;
      if (frameId === undefined) {
        this.sink.log('warn', 'device placement: no stack frame to evaluate in');
        return;
      }
      const started = Date.now();
      const result = (await this.request('evaluate', {
        expression: PROBE_EXPRESSION,
        frameId,
        context: 'repl',
        format: { rawString: true },
      })) as { result?: string };
      if (typeof result?.result !== 'string') {
        this.sink.log('warn', 'device placement: the probe returned no result');
        return;
      }
      const report = parseReport(result.result);
      if (report.probe_error) {
        this.sink.log('error', `device placement probe error in the debuggee: ${report.probe_error}`);
        return;
      }
      if (report.error && !report.error.cross_device) {
        // The coarse JS check matched (e.g. an "invalid combination of arguments" without mixed
        // devices) but the probe's parser says it is not a device error: nothing to show.
        this.sink.log('info', `device placement: ${report.error.type} is not a cross-device error`);
        return;
      }
      this.sink.log('info', `device placement report for ${family} in ${Date.now() - started} ms (probe ${report.elapsed_s ?? '?'} s)`);
      this.sink.onReport(report, {
        sessionId: this.session.id,
        sessionName: this.session.name,
        threadId,
        exceptionText: text,
        family,
      });
    } finally {
      this.busy = false;
    }
  }

  private request(command: string, args: unknown): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${command} timed out`)), this.timeoutMs);
      Promise.resolve(this.session.customRequest(command, args)).then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
