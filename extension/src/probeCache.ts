// A passed probe is remembered per (interpreter file, its size and mtime, the launcher, the
// bundled libs, the import strategy), so later activations start the server at once instead of
// running the probe first. A server that then fails to start clears the entry and the start is
// retried with the probe, which names the problem. Pure apart from the fs.stat in probeKey.

import * as fs from 'node:fs';
import type { ProbeResult } from './interpreter';

export interface Memento {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

const STATE_KEY = 'devflow.probeCache';
const MAX_ENTRIES = 8;

/** What identifies one probe; undefined when the interpreter file cannot be stat'ed. */
export function probeKey(command: string[], launcher: string, libs: string | undefined, strategy: string, stat = fs.statSync): string | undefined {
  try {
    const exe = fs.realpathSync(command[0]);
    const s = stat(exe);
    const l = stat(launcher);
    return JSON.stringify([command, exe, s.size, s.mtimeMs, launcher, l.mtimeMs, libs ?? null, strategy]);
  } catch {
    return undefined;
  }
}

export class ProbeCache {
  constructor(private readonly state: Memento) {}

  get(key: string | undefined): ProbeResult | undefined {
    if (!key) return undefined;
    return this.entries().find((e) => e.key === key)?.result;
  }

  async put(key: string | undefined, result: ProbeResult): Promise<void> {
    if (!key) return;
    const rest = this.entries().filter((e) => e.key !== key);
    await this.state.update(STATE_KEY, [{ key, result }, ...rest].slice(0, MAX_ENTRIES));
  }

  async forget(key: string | undefined): Promise<void> {
    if (!key) return;
    await this.state.update(STATE_KEY, this.entries().filter((e) => e.key !== key));
  }

  private entries(): { key: string; result: ProbeResult }[] {
    const v = this.state.get<{ key: string; result: ProbeResult }[]>(STATE_KEY);
    return Array.isArray(v) ? v : [];
  }
}
