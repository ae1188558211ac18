// What the language status item says for a server state and the last check. Pure.

import type { CheckSummary } from './commands';
import { describeCheck } from './commands';

export type ServerState = 'starting' | 'running' | 'stopped' | 'error' | 'disabled';

export interface StatusView {
  text: string;
  detail: string;
  /** 0 information, 1 warning, 2 error (vscode.LanguageStatusSeverity). */
  severity: 0 | 1 | 2;
  busy: boolean;
}

const problems = (n: number) => `${n} problem${n === 1 ? '' : 's'}`;

/** `live` is what the Problems panel shows now (devflow's diagnostics, updated as they change);
 * `lastCheck` is the last "Check Devices" summary. The count in the text follows `live`. */
export function statusView(state: ServerState, lastCheck?: CheckSummary, note?: string, live?: CheckSummary): StatusView {
  const check = lastCheck ? `last check: ${describeCheck(lastCheck)}` : '';
  const now = live ? `now: ${live.diagnostics === 0 ? 'no device problems' : `${problems(live.diagnostics)} in ${live.files} file${live.files === 1 ? '' : 's'}`}` : '';
  const join = (...parts: (string | undefined)[]) => parts.filter(Boolean).join(' · ');
  switch (state) {
    case 'starting':
      return { text: 'Devflow: starting', detail: join(note), severity: 0, busy: true };
    case 'running':
      return {
        text: live ? `Devflow: ${problems(live.diagnostics)}` : lastCheck ? `Devflow: ${problems(lastCheck.diagnostics)}` : 'Devflow: ready',
        detail: join(note, now, check),
        severity: 0,
        busy: false,
      };
    case 'disabled':
      return { text: 'Devflow: disabled', detail: 'devflow.enable is off', severity: 0, busy: false };
    case 'stopped':
      return { text: 'Devflow: stopped', detail: join(note, check), severity: 1, busy: false };
    case 'error':
      return { text: 'Devflow: not running', detail: join(note), severity: 2, busy: false };
  }
}
