// The e2e test's multi-root phase (issue 14, conventions): a `.code-workspace` with two folders,
// `app` and `legacy`, where `legacy/.vscode/settings.json` turns devflow off. Files in `app`
// get squiggles and "Check Devices" reports its never-opened file; `legacy` gets no squiggle
// and none of its files is reported, opened or not.

import * as fs from 'node:fs';
import * as path from 'node:path';

export function writeMultiRoot(base, canonical) {
  for (const folder of ['app', 'legacy']) fs.mkdirSync(path.join(base, folder), { recursive: true });
  fs.writeFileSync(path.join(base, 'app', 'train.py'), canonical);
  fs.writeFileSync(path.join(base, 'app', 'unopened_app.py'), canonical);
  fs.writeFileSync(path.join(base, 'legacy', 'old_model.py'), canonical);
  fs.writeFileSync(path.join(base, 'legacy', 'unopened_legacy.py'), canonical);
  fs.mkdirSync(path.join(base, 'legacy', '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(base, 'legacy', '.vscode', 'settings.json'), JSON.stringify({ 'devflow.enable': false }));
  const file = path.join(base, 'multi.code-workspace');
  fs.writeFileSync(file, JSON.stringify({ folders: ['app', 'legacy'].map((f) => ({ path: path.join(base, f) })), settings: {} }, null, 2));
  return file;
}

async function open(page, name, STEP_MS) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: STEP_MS });
  await input.fill(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: STEP_MS });
  await page.keyboard.press('Enter');
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
  if (/in [3-9]\d* files?/.test(toast) && !/in 2 files/.test(toast)) throw new Error(`Check Devices counted the disabled folder: ${toast}`);
  await page.locator('.tab[aria-label^="old_model.py"]').first().click();
  await page.locator('.tab.active[aria-label^="old_model.py"]').first().waitFor({ timeout: STEP_MS });
  await page.locator('.monaco-editor .view-lines', { hasText: 'model.head' }).first().waitFor({ timeout: STEP_MS });
  const inLegacy = await page.locator('.monaco-editor .view-overlays [class*="squiggly-"]').count();
  if (inLegacy !== 0) throw new Error('a file in the disabled folder has squiggles');
  await shot(page, '15-multi-root');
  // A problem's rule link opens the rule page shipped in the extension, in the Markdown preview.
  await panel.locator('a.monaco-link', { hasText: 'DEV101' }).first().click();
  await page.locator('.tab[aria-label*="Preview DEV101.md"]').first().waitFor({ timeout: STEP_MS });
  // The preview is a webview (an iframe holding the page's iframe): wait for the rendered heading.
  await page.frameLocator('iframe.webview').first().frameLocator('iframe').locator('h1', { hasText: 'DEV101' }).first().waitFor({ timeout: STEP_MS });
  await shot(page, '16-rule-page-preview');
  return toast.replace(/\s+/g, ' ').trim();
}
