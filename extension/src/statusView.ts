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

export function statusView(state: ServerState, lastCheck?: CheckSummary, note?: string): StatusView {
  const check = lastCheck ? `last check: ${describeCheck(lastCheck)}` : '';
  const join = (...parts: (string | undefined)[]) => parts.filter(Boolean).join(' · ');
  switch (state) {
    case 'starting':
      return { text: 'Devflow: starting', detail: join(note), severity: 0, busy: true };
    case 'running':
      return {
        text: lastCheck ? `Devflow: ${lastCheck.diagnostics} problem${lastCheck.diagnostics === 1 ? '' : 's'}` : 'Devflow: ready',
        detail: join(note, check),
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
