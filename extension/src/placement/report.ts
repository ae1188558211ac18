// The placement report produced by server/devflow/runtime/probe.py (JSON), and the cross-device
// message check the tracker runs before evaluating anything. Pure: no `vscode` import.

import { DEVICE_MESSAGE_PATTERNS } from './probeExpression.generated';

export interface TensorEntry {
  name: string | null;
  origin: string;
  device: string;
  shape: number[];
  dtype: string;
  bytes: number;
  frame?: string;
  aliases?: string[];
  score?: number;
  library_name?: boolean;
}

export interface DeviceGroup {
  count: number;
  bytes: number;
  named: number;
  tensors: TensorEntry[];
  unlisted: number;
}

export interface ModuleNode {
  name: string;
  short: string;
  type: string;
  devices: Record<string, number>;
  own_devices: Record<string, number>;
  split: boolean;
  elided?: boolean;
  children: ModuleNode[];
}

export interface FrameInfo {
  file: string;
  line: number;
  function: string;
  code?: string;
}

export interface Culprit {
  family: string | null;
  op: string | null;
  argument: string | null;
  device: string | null;
  expected_device: string | null;
  tensors: TensorEntry[];
  module: string | null;
  optimizer: string | null;
  file: string | null;
  line: number | null;
  function: string | null;
  code: string | null;
  hint: string | null;
  summary: string;
  /** Why that device is the intended one (e.g. "92% of the model's parameters are on cuda:0"). */
  intended_by?: string;
  /** Where the odd object was last assigned in the user's source, when the source says. */
  created?: { file: string; line: number; code: string } | null;
}

export interface OptimizerInfo {
  name: string;
  type: string;
  param_devices: Record<string, number>;
  state_devices: Record<string, number>;
  mismatches: { name: string; device: string; param: string; param_device: string; shape: number[] }[];
  mismatch_count: number;
}

export interface PlacementReport {
  version: number;
  tool: 'devflow';
  pid?: number;
  rank?: { rank: number; local_rank: number; world_size: number } | null;
  torch?: string | null;
  error?: {
    type: string;
    message: string;
    cross_device: boolean;
    parsed: { family: string; devices: string[]; argument: string | null; op: string | null; hint: string | null } | null;
  } | null;
  location?: FrameInfo | null;
  frames?: FrameInfo[];
  devices?: Record<string, DeviceGroup>;
  modules?: ModuleNode[];
  optimizers?: OptimizerInfo[];
  scalers?: { name: string; device: string; tensors: Record<string, string> }[];
  culprit?: Culprit | null;
  notes?: string[];
  truncated?: boolean;
  elapsed_s?: number;
  probe_error?: string;
}

const COMPILED: ReadonlyArray<readonly [string, RegExp]> = DEVICE_MESSAGE_PATTERNS.map(
  ([family, source]) => [family, new RegExp(source)] as const,
);

/** The family name when `text` is a cross-device error/warning (same patterns as messages.py). */
export function deviceMessageFamily(text: string | undefined): string | undefined {
  if (!text) return undefined;
  const bounded = text.slice(0, 20000);
  for (const [family, rx] of COMPILED) {
    if (rx.test(bounded)) return family;
  }
  return undefined;
}

/** Parses the probe's JSON; throws with a clear message when it is not a devflow report. */
export function parseReport(text: string): PlacementReport {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // Plain (non-raw) evaluate results arrive repr()'d: '...' around the JSON.
    const m = /^'(.*)'$/s.exec(text.trim());
    if (!m) throw new Error(`the probe did not return JSON: ${text.slice(0, 200)}`);
    data = JSON.parse(m[1].replace(/\\'/g, "'").replace(/\\\\/g, '\\'));
  }
  if (!data || typeof data !== 'object' || (data as { tool?: string }).tool !== 'devflow') {
    throw new Error('the probe returned something that is not a devflow placement report');
  }
  return data as PlacementReport;
}

/** Colour per device: stable, readable on light and dark themes. */
export function deviceColor(device: string): string {
  const kind = device.split(':')[0];
  const index = Number(device.split(':')[1] ?? 0) || 0;
  const base: Record<string, string[]> = {
    cpu: ['#8a8f98'],
    cuda: ['#2e9d5b', '#1f78b4', '#7b3fb2', '#c27c0e', '#0f8b8d', '#b23a6f'],
    meta: ['#6c5ce7'],
    mps: ['#0984e3'],
    xpu: ['#00a3a3'],
  };
  const list = base[kind] ?? ['#a0522d'];
  return list[index % list.length];
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** Where the diagnostic goes and what it says (null when the report has no user source line). */
export function culpritDiagnostic(report: PlacementReport): { file: string; line: number; message: string } | null {
  const c = report.culprit;
  const loc = c?.file && c.line ? { file: c.file, line: c.line } : report.location ?? null;
  if (!loc || !loc.file || !loc.line) return null;
  const err = report.error;
  const head = err ? `${err.type}: ${err.message.split('\n')[0]}` : 'cross-device error';
  const message = c?.summary ? `${c.summary}\n${head}` : head;
  return { file: loc.file, line: loc.line, message };
}
