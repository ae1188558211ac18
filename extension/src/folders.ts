// Multi-root workspaces: every resource setting is read per workspace folder and sent to the
// server, which applies each folder's settings to its files (settings.ts toServerSettings). Here
// the client's own per-folder decisions: a disabled folder's files are not sent to the server at
// all (document selector) and are left out of "Check Devices", an excluded file's diagnostics are
// dropped, and pulls follow each folder's devflow.lint.run. Pure (no runtime `vscode`).

import { ExtensionSettings, isExcluded, LintRun, toServerSettings, type ServerSettings } from './settings';

export interface FolderSettings {
  /** The folder's URI, as a string (what the server's checkWorkspace takes). */
  uri: string;
  /** The folder's file system path. */
  path: string;
  enable: boolean;
  exclude: string[];
  /** All of the folder's settings (resource settings as set for the folder). */
  settings?: ExtensionSettings;
}

/** The server's payload: the global settings and each folder's. */
export function serverPayload(global: ExtensionSettings, folders: FolderSettings[]): ServerSettings {
  return toServerSettings(global, folders.flatMap((f) => (f.settings ? [{ uri: f.uri, settings: f.settings }] : [])));
}

/** devflow.lint.run for a document: its folder's, else the global one (outside every folder). */
export function lintRunOf(uri: string, folders: FolderSettings[], global: LintRun): LintRun {
  const file = uriPath(uri);
  const folder = file ? folderOf(file, folders) : undefined;
  return folder?.settings?.lintRun ?? global;
}

/** The file system path of a file or notebook-cell URI (undefined for untitled and other schemes). */
export function uriPath(uri: string): string | undefined {
  const m = /^(file|vscode-notebook-cell):(?:\/\/[^/]*)?(\/[^?#]*)/.exec(uri);
  if (!m) return undefined;
  try {
    const p = decodeURIComponent(m[2]);
    return /^\/[A-Za-z]:\//.test(p) ? p.slice(1) : p; // file:///c:/x -> c:/x
  } catch {
    return undefined;
  }
}

/** The innermost workspace folder holding `file`. */
export function folderOf(file: string, folders: FolderSettings[]): FolderSettings | undefined {
  let best: FolderSettings | undefined;
  for (const f of folders) {
    const root = f.path.replace(/[\\/]+$/, '');
    const inside = file === root || file.startsWith(root + '/') || file.startsWith(root + '\\');
    if (inside && (!best || root.length > best.path.length)) best = f;
  }
  return best;
}

/** Whether devflow reports problems for this document: its folder is enabled and it is not
 * excluded. Files outside every folder (and untitled buffers) are reported. */
export function isReported(uri: string, folders: FolderSettings[]): boolean {
  const file = uriPath(uri);
  if (!file) return true;
  const folder = folderOf(file, folders);
  if (!folder) return true;
  return folder.enable && !isExcluded(file, folder.path, folder.exclude);
}

function escapeGlob(p: string): string {
  return p.replace(/\\/g, '/').replace(/[[\]{}*?]/g, (c) => `[${c}]`);
}

type Filter = { scheme?: string; language?: string; pattern?: string } | { notebook: string | { scheme?: string; pattern?: string }; language?: string };

/** Documents synced to the server: every Python file and notebook, or, when some folder has
 * devflow.enable off, only those inside the enabled folders (plus untitled buffers). */
export function documentSelector(folders: FolderSettings[]): Filter[] {
  if (folders.every((f) => f.enable)) {
    return [
      { scheme: 'file', language: 'python' },
      { scheme: 'untitled', language: 'python' },
      { notebook: '*', language: 'python' },
    ];
  }
  const out: Filter[] = [{ scheme: 'untitled', language: 'python' }];
  for (const f of folders.filter((x) => x.enable)) {
    const pattern = `${escapeGlob(f.path.replace(/[\\/]+$/, ''))}/**`;
    out.push({ scheme: 'file', language: 'python', pattern }, { notebook: { scheme: 'file', pattern }, language: 'python' });
  }
  return out;
}
