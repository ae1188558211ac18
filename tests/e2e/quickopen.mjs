// Opening a workspace file through Quick Open (Ctrl+P), shared by the e2e scenarios.
//
// A file written a moment before may be missing from Quick Open's file index until the file
// watcher reports it (seen once on CI: the list stayed empty for the whole 90 s wait), so the picker
// is closed and asked again a few times within the same overall wait.

/** Opens `name` and waits for its tab. `stepMs`: the whole wait; `log`: progress lines. */
export async function quickOpen(page, name, stepMs, log = () => {}) {
  const input = page.locator('.quick-input-widget input');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first();
  const attempts = 6;
  for (let i = 1; ; i++) {
    await page.keyboard.press('Control+P');
    await input.waitFor({ state: 'visible', timeout: stepMs });
    await input.fill(name);
    try {
      await row.waitFor({ timeout: stepMs / attempts });
      break;
    } catch (err) {
      if (i === attempts) throw err;
      log(`quick open: ${name} not listed yet (try ${i}/${attempts})`);
      await page.keyboard.press('Escape');
    }
  }
  await page.keyboard.press('Enter');
  await page.locator(`.tab[aria-label^="${name}"]`).first().waitFor({ timeout: stepMs });
}
