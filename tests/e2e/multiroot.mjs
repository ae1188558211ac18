// The e2e test's multi-root phase (issue 14, conventions): a `.code-workspace` with three folders.
// `legacy/.vscode/settings.json` turns devflow off: no squiggle, none of its files reported, opened
// or not. `lib/.vscode/settings.json` makes DEV101 a warning, ignores DEV201 (`devflow.args`) and
// checks on save only (`devflow.lint.run`): the same file shows two errors in `app` and one
// warning in `lib`, and an edit in `lib` shows nothing new until it is saved. "Check Devices"
// counts each folder's files with that folder's settings.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { quickOpen } from './quickopen.mjs';

/** DEV101 (a module created after the move) and DEV201 (a cpu tensor meets the model's output). */
const mixed = (canonical) => `${canonical.trimEnd()}\nz = torch.zeros(4, 2) + y\n`;
const FOLDERS = ['app', 'legacy', 'lib'];

export function writeMultiRoot(base, canonical) {
  for (const folder of FOLDERS) fs.mkdirSync(path.join(base, folder, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(base, 'app', 'train.py'), canonical);
  fs.writeFileSync(path.join(base, 'app', 'unopened_app.py'), canonical);
  fs.writeFileSync(path.join(base, 'app', 'mixed_app.py'), mixed(canonical));
  fs.writeFileSync(path.join(base, 'legacy', 'old_model.py'), canonical);
  fs.writeFileSync(path.join(base, 'legacy', 'unopened_legacy.py'), canonical);
  fs.writeFileSync(path.join(base, 'lib', 'mixed_lib.py'), mixed(canonical));
  fs.writeFileSync(path.join(base, 'legacy', '.vscode', 'settings.json'), JSON.stringify({ 'devflow.enable': false }));
  fs.writeFileSync(path.join(base, 'lib', '.vscode', 'settings.json'), JSON.stringify({
    'devflow.severity': { DEV101: 'warning' },
    'devflow.args': ['--ignore', 'DEV201'],
    'devflow.lint.run': 'onSave',
  }));
  const file = path.join(base, 'multi.code-workspace');
  fs.writeFileSync(file, JSON.stringify({ folders: FOLDERS.map((f) => ({ path: path.join(base, f) })), settings: {} }, null, 2));
  return file;
}

/** The squiggles of the active editor, by kind. */
async function squiggles(page) {
  const overlays = page.locator('.monaco-editor .view-overlays');
  return {
    error: await overlays.locator('[class*="squiggly-error"]').count(),
    warning: await overlays.locator('[class*="squiggly-warning"]').count(),
  };
}

async function waitFor(page, what, pred, STEP_MS) {
  const deadline = Date.now() + STEP_MS;
  let last;
  while (Date.now() < deadline) {
    last = await squiggles(page);
    if (pred(last)) return last;
    await page.waitForTimeout(250);
  }
  throw new Error(`${what}: squiggles ${JSON.stringify(last)}`);
}

/** The same file in `app` (defaults) and `lib` (warning, DEV201 ignored, lint on save). */
async function perFolderSettings(page, STEP_MS) {
  await open(page, 'mixed_app.py', STEP_MS);
  await waitFor(page, 'app: DEV101 and DEV201 as errors', (s) => s.error >= 2 && s.warning === 0, STEP_MS);
  await open(page, 'mixed_lib.py', STEP_MS);
  const lib = await waitFor(page, 'lib: DEV101 as a warning, DEV201 ignored', (s) => s.warning >= 1, STEP_MS);
  if (lib.error !== 0) throw new Error(`lib ignores DEV201 and makes DEV101 a warning, yet shows ${lib.error} error squiggle(s)`);
  // lint.run onSave in lib: a second module created after the move shows up only once saved.
  await page.locator('.monaco-editor .view-line', { hasText: 'z = torch.zeros' }).first().click();
  await page.keyboard.press('End');
  await page.keyboard.press('Enter');
  await page.keyboard.type('model.tail = nn.Linear(2, 2)');
  await page.locator('.monaco-editor .view-lines', { hasText: 'model.tail = nn.Linear(2, 2)' }).first().waitFor({ timeout: STEP_MS });
  await page.waitForTimeout(3000); // well past the debounce and an analysis
  const typed = await squiggles(page);
  if (typed.warning !== lib.warning) throw new Error(`lib checks on save only, yet an unsaved edit changed its squiggles: ${JSON.stringify(lib)} -> ${JSON.stringify(typed)}`);
  await page.keyboard.press('Control+S');
  const saved = await waitFor(page, 'lib after save: two DEV101 warnings', (s) => s.warning > lib.warning, STEP_MS);
  if (saved.error !== 0) throw new Error(`lib after save shows error squiggles: ${JSON.stringify(saved)}`);
  return `app: ${JSON.stringify(await countIn(page, 'mixed_app.py'))}, lib: ${JSON.stringify(lib)} then after save ${JSON.stringify(saved)}`;
}

async function countIn(page, name) {
  await page.locator(`.tab[aria-label^="${name}"]`).first().click();
  await page.locator(`.tab.active[aria-label^="${name}"]`).first().waitFor();
  await page.waitForTimeout(300);
  return squiggles(page);
}

async function open(page, name, STEP_MS) {
  await quickOpen(page, name, STEP_MS);
  await page.locator(`.tab.active[aria-label^="${name}"]`).first().waitFor({ timeout: STEP_MS });
  await page.locator('.monaco-editor .view-lines', { hasText: 'model.head' }).first().waitFor({ timeout: STEP_MS });
}

/** ctx: { page, port, runDir, canonical, shot, STEP_MS } */
export async function multiRootScenario(ctx) {
  const { page, port, canonical, shot, STEP_MS } = ctx;
  const file = writeMultiRoot(path.join(ctx.runDir, 'multi-root'), canonical);
  const folders = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'legacy' }).first();
  for (let attempt = 1; ; attempt++) {
    await page.goto(`http://127.0.0.1:${port}/?workspace=${encodeURIComponent(file)}`, { timeout: STEP_MS });
    await page.locator('.monaco-workbench').waitFor({ timeout: STEP_MS });
    try {
      await folders.waitFor({ timeout: attempt === 1 ? 30_000 : STEP_MS });
      break;
    } catch (err) {
      // code-server sometimes opens a workspace file with its folders missing ("No Folder Opened").
      if (attempt >= 2) throw err;
    }
  }
  await open(page, 'old_model.py', STEP_MS); // devflow.enable is off for this folder
  await open(page, 'train.py', STEP_MS);
  const squiggle = page.locator('.monaco-editor .view-overlays [class*="squiggly-"]');
  await squiggle.first().waitFor({ timeout: STEP_MS });
  // "Check Devices": app's never-opened file is reported; nothing from legacy.
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: STEP_MS });
  await input.fill('>Devflow: Check Devices');
  await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'Devflow: Check Devices' }).filter({ hasNotText: 'Current File' }).first().click();
  const panel = page.locator('.markers-panel');
  await panel.locator('.monaco-list-row', { hasText: 'unopened_app.py' }).first().waitFor({ timeout: STEP_MS });
  await page.locator('.notifications-toasts', { hasText: /Devflow: .*device problem/ }).first().waitFor({ timeout: STEP_MS });
  const toast = await page.locator('.notifications-toasts', { hasText: /Devflow: .*device problem/ }).first().innerText();
  for (const name of ['old_model.py', 'unopened_legacy.py']) {
    const rows = await panel.locator('.monaco-list-row', { hasText: name }).count();
    if (rows !== 0) throw new Error(`${name} (devflow.enable off for its folder) is in the Problems panel`);
  }
  // app: train.py, unopened_app.py (DEV101 each), mixed_app.py (DEV101, DEV201); lib: mixed_lib.py
  // (DEV101 only: DEV201 is ignored there); nothing from legacy.
  if (!/5 device problems in 4 files/.test(toast)) throw new Error(`Check Devices did not count each folder with its settings: ${toast}`);
  await page.locator('.tab[aria-label^="old_model.py"]').first().click();
  await page.locator('.tab.active[aria-label^="old_model.py"]').first().waitFor({ timeout: STEP_MS });
  await page.locator('.monaco-editor .view-lines', { hasText: 'model.head' }).first().waitFor({ timeout: STEP_MS });
  const inLegacy = await page.locator('.monaco-editor .view-overlays [class*="squiggly-"]').count();
  if (inLegacy !== 0) throw new Error('a file in the disabled folder has squiggles');
  await shot(page, '15-multi-root');
  const perFolder = await perFolderSettings(page, STEP_MS);
  await shot(page, '15b-multi-root-per-folder-settings');
  // A problem's rule link opens the rule page shipped in the extension, in the Markdown preview.
  await panel.locator('a.monaco-link', { hasText: 'DEV101' }).first().click();
  await page.locator('.tab[aria-label*="Preview DEV101.md"]').first().waitFor({ timeout: STEP_MS });
  // The preview is a webview (an iframe holding the page's iframe): wait for the rendered heading.
  await page.frameLocator('iframe.webview').first().frameLocator('iframe').locator('h1', { hasText: 'DEV101' }).first().waitFor({ timeout: STEP_MS });
  await shot(page, '16-rule-page-preview');
  return `${toast.replace(/\s+/g, ' ').trim()}; ${perFolder}`;
}
