// "Devflow: Show Debug Information": what a bug report needs (versions, interpreter, settings,
// server state, timings), as Markdown. Pure, so it is unit tested.

import type { LaunchInfo } from './server';

export interface DebugFacts {
  extensionVersion: string;
  vscodeVersion: string;
  platform: string;
  trusted: boolean;
  state: string;
  launch?: LaunchInfo;
  settings?: object;
  /** Each workspace folder, with the settings that apply to its files (`settings`). */
  folders: { path: string; enable: boolean; exclude: string[]; settings?: object }[];
  diagnostics: { files: number; diagnostics: number };
}

const code = (v: unknown) => (v === undefined || v === '' ? '-' : `\`${String(v)}\``);

export function debugMarkdown(f: DebugFacts): string {
  const l = f.launch;
  const rows: [string, unknown][] = [
    ['Devflow extension', f.extensionVersion],
    ['VS Code', f.vscodeVersion],
    ['Platform', f.platform],
    ['Workspace trusted', f.trusted ? 'yes' : 'no (Restricted Mode: bundled server only)'],
    ['Server state', f.state],
    ['devflow server', l?.devflow],
    ['devflow package', l?.devflowFile],
    ['Python', l?.python],
    ['Interpreter', l?.interpreter],
    ['Interpreter chosen by', l?.interpreterSource],
    ['Bundled libs', l?.bundledLibs],
    ['Command', l?.command.join(' ')],
    ['Working directory', l?.cwd],
    ['Diagnostics shown', `${f.diagnostics.diagnostics} in ${f.diagnostics.files} file(s)`],
  ];
  const timings = Object.entries(l?.timings ?? {}).map(([k, v]) => `${k} ${v} ms`).join(', ');
  if (timings) rows.push(['After activation', timings]);
  const out = ['# Devflow debug information', '', '| | |', '|---|---|'];
  for (const [k, v] of rows) out.push(`| ${k} | ${code(v)} |`);
  if (f.folders.length) {
    out.push('', '## Workspace folders', '');
    for (const folder of f.folders) {
      out.push(`- ${code(folder.path)}: ${folder.enable ? 'enabled' : 'disabled (devflow.enable)'}${folder.exclude.length ? `, exclude ${folder.exclude.map(code).join(', ')}` : ''}`);
    }
  }
  out.push('', '## Settings (after trust and validation)', '', 'Window settings, and the settings of files outside every workspace folder:', '', '```json', JSON.stringify(f.settings ?? {}, null, 2), '```');
  for (const folder of f.folders.filter((x) => x.settings)) {
    out.push('', `### Folder ${code(folder.path)}`, '', 'What applies to its files:', '', '```json', JSON.stringify(folder.settings, null, 2), '```');
  }
  out.push('');
  return out.join('\n');
}
