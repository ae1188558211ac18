// The e2e test's Restricted Mode phase (issue 14, items 1-2 and the cold start): a second
// code-server with workspace trust on opens an untrusted folder whose root holds `json.py`,
// `token.py`, `signal.py`, `queue.py`, `platform.py` and a `devflow/` package, each of which
// writes a marker file when imported. Opening a Python file there must show devflow's squiggles
// while no marker appears and no `__pycache__` is written into the folder. The "Devflow" log's
// "First diagnostics N ms after activation" line is the cold-start figure (activation happens on
// that first open: this folder has no notebook to activate on earlier).

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { quickOpen } from './quickopen.mjs';

/** Importing any of these from the folder leaves a line in `marker`. */
export function writeHostileWorkspace(dir, marker, canonical) {
  fs.mkdirSync(path.join(dir, 'devflow'), { recursive: true });
  const code = (name) => `open(${JSON.stringify(marker)}, "a").write(${JSON.stringify(`${name} imported\n`)})\n`;
  for (const m of ['json', 'token', 'signal', 'queue', 'platform']) fs.writeFileSync(path.join(dir, `${m}.py`), code(m));
  fs.writeFileSync(path.join(dir, 'devflow', '__init__.py'), code('devflow'));
  fs.writeFileSync(path.join(dir, 'devflow', '__main__.py'), code('devflow.__main__'));
  fs.writeFileSync(path.join(dir, 'model.py'), canonical);
}

function findLog(userData) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.existsSync(d) ? fs.readdirSync(d, { withFileTypes: true }) : []) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else if (/Devflow\.log$/.test(e.name)) out.push(path.join(d, e.name));
    }
  };
  walk(path.join(userData, 'logs'));
  return out.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
}

async function runCommand(page, title, STEP_MS) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: STEP_MS });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: title }).first();
  await row.waitFor({ timeout: STEP_MS });
  await row.click();
}

async function statusHover(page, STEP_MS) {
  await page.locator('[id="status.languageStatus"]').click();
  const item = page.locator('.monaco-hover:visible', { hasText: 'Devflow' }).first();
  await item.waitFor({ timeout: STEP_MS });
  const text = await item.innerText();
  await page.keyboard.press('Escape');
  await page.mouse.move(700, 300);
  return text;
}

/** The status item counts the problems shown now (no Check Devices was run here); Fix All fixes
 * the file and the count follows; Show Debug Information reports Restricted Mode. */
async function liveStatusAndCommands(page, shot, STEP_MS) {
  const before = await statusHover(page, STEP_MS);
  if (!/Devflow: 1 problem\b/.test(before) || !/now: 1 problem in 1 file/.test(before)) throw new Error(`status item before Fix All: ${before}`);
  await page.locator('.monaco-editor .view-lines').first().click();
  await runCommand(page, 'Devflow: Fix All', STEP_MS);
  await page.locator('.monaco-editor .view-lines', { hasText: 'nn.Linear(8, 2).to(device)' }).first().waitFor({ timeout: STEP_MS });
  await page.locator('.monaco-editor .view-overlays [class*="squiggly-"]').first().waitFor({ state: 'detached', timeout: STEP_MS });
  const deadline = Date.now() + STEP_MS;
  let after = '';
  while (!/Devflow: 0 problems/.test(after) && Date.now() < deadline) after = await statusHover(page, STEP_MS);
  if (!/now: no device problems/.test(after)) throw new Error(`status item after Fix All: ${after}`);
  await shot(page, '21-fix-all-status-follows');
  await runCommand(page, 'Devflow: Show Debug Information', STEP_MS);
  const info = page.locator('.monaco-editor .view-lines', { hasText: 'Devflow debug information' }).first();
  await info.waitFor({ timeout: STEP_MS });
  const infoText = (await info.innerText()).replace(/\u00a0/g, ' '); // the editor renders spaces as nbsp
  if (!/Restricted Mode/.test(infoText) || !/devflow_launch\.py/.test(infoText)) throw new Error(`debug information: ${infoText}`);
  await shot(page, '22-debug-information');
}

/**
 * ctx: { NODE, CODE_SERVER, PYTHON, runDir, extensionsDir, env, browser, artifacts, log, shot, freePort, stop, canonical, STEP_MS }
 * Returns { coldStartMs, probeMs, runningMs }.
 */
export async function restrictedModeScenario(ctx) {
  const { NODE, CODE_SERVER, PYTHON, runDir, extensionsDir, env, browser, artifacts, log, shot, freePort, stop, STEP_MS } = ctx;
  const base = path.join(runDir, 'restricted');
  const workspace = path.join(base, 'untrusted-project');
  const userData = path.join(base, 'user-data');
  const marker = path.join(base, 'MARKER');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  writeHostileWorkspace(workspace, marker, ctx.canonical);
  // The workspace also asks for itself as the interpreter: Restricted Mode must ignore that.
  fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(workspace, '.vscode', 'settings.json'), JSON.stringify({
    'devflow.interpreter': [path.join(workspace, 'python')],
    'devflow.path': [path.join(workspace, 'devflow', '__main__.py')],
  }));
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({
    'devflow.interpreter': [PYTHON], // user-level: allowed in Restricted Mode
    'security.workspace.trust.enabled': true,
    'security.workspace.trust.startupPrompt': 'never',
    'security.workspace.trust.untrustedFiles': 'open',
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'chat.disableAIFeatures': true,
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'git.enabled': false,
    'window.restoreWindows': 'none',
  }, null, 2));

  const port = await freePort();
  const config = path.join(base, 'config.yaml');
  fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  const logFile = fs.openSync(path.join(artifacts, 'code-server-restricted.log'), 'w');
  const child = spawn(NODE, [CODE_SERVER, '--config', config, '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none',
    '--user-data-dir', userData, '--extensions-dir', extensionsDir, '--disable-telemetry', '--disable-update-check',
    '--disable-getting-started-override', '--ignore-last-opened', workspace],
  { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  try {
    await new Promise((resolve, reject) => {
      let seen = '';
      const onData = (chunk) => {
        fs.writeSync(logFile, chunk);
        seen += chunk.toString();
        if (/HTTP server listening on/.test(seen)) resolve();
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => reject(new Error(`code-server (restricted) exited (${code}) before listening`)));
    });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`, { timeout: STEP_MS });
    await page.locator('.monaco-workbench').waitFor({ timeout: STEP_MS });
    // Restricted Mode is on: the status bar says so.
    await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor({ timeout: STEP_MS });
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'model.py' }).first().waitFor({ timeout: STEP_MS });
    await quickOpen(page, 'model.py', STEP_MS);
    await page.locator('.monaco-editor .view-overlays [class*="squiggly-"]').first().waitFor({ timeout: STEP_MS });
    await shot(page, '20-restricted-mode-squiggle');
    await liveStatusAndCommands(page, shot, STEP_MS);
    let text = '';
    const deadline = Date.now() + STEP_MS;
    while (!/First diagnostics \d+ ms after activation/.test(text) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250)); // the log file is flushed asynchronously
      text = findLog(userData);
    }
    fs.writeFileSync(path.join(artifacts, 'log-restricted-Devflow.log'), text);
    if (fs.existsSync(marker)) throw new Error(`workspace code ran in Restricted Mode:\n${fs.readFileSync(marker, 'utf8')}`);
    const caches = fs.readdirSync(workspace, { recursive: true }).filter((p) => String(p).includes('__pycache__'));
    if (caches.length) throw new Error(`bytecode written into the untrusted folder: ${caches.join(', ')}`);
    if (!/Restricted Mode: running the bundled server/.test(text)) throw new Error(`the log does not say Restricted Mode:\n${text}`);
    if (!text.includes(`Interpreter (setting): ${PYTHON}`)) throw new Error(`the workspace chose the interpreter:\n${text}`);
    if (!/ -I -X utf8 \S+devflow_launch\.py --libs \S+ serve/.test(text)) throw new Error(`the server was not started isolated:\n${text}`);
    const figure = (re, t = text) => Number((re.exec(t) ?? [])[1]);
    const result = {
      probeMs: figure(/Probe done (\d+) ms after activation/),
      runningMs: figure(/Server is running (\d+) ms after activation/),
      coldStartMs: figure(/First diagnostics (\d+) ms after activation/),
    };
    log(`restricted mode: no marker, no __pycache__, squiggles shown; cold start: probe ${result.probeMs} ms, server running ${result.runningMs} ms, first diagnostics ${result.coldStartMs} ms after activation`);
    // A later activation (window reloaded, the file reopened): the probe is remembered. The
    // model.py tab is made active first so that the restored window opens it.
    await page.locator('.tab[aria-label^="model.py"]').first().click();
    await page.locator('.monaco-editor .view-lines', { hasText: 'model.head' }).first().waitFor({ timeout: STEP_MS });
    await page.reload({ timeout: STEP_MS });
    await page.locator('.monaco-workbench').waitFor({ timeout: STEP_MS });
    const again = Date.now() + STEP_MS;
    let later = '';
    while (!/Probe remembered[\s\S]*First diagnostics \d+ ms after activation/.test(later) && Date.now() < again) {
      await new Promise((r) => setTimeout(r, 250));
      later = findLog(userData);
    }
    fs.writeFileSync(path.join(artifacts, 'log-restricted-Devflow-later.log'), later);
    const tail = later.slice(later.lastIndexOf('activating ('));
    result.laterRunningMs = figure(/Server is running (\d+) ms after activation/, tail);
    result.laterFirstDiagnosticsMs = figure(/First diagnostics (\d+) ms after activation/, tail);
    log(`later activation (probe remembered): server running ${result.laterRunningMs} ms, first diagnostics ${result.laterFirstDiagnosticsMs} ms after activation`);
    if (fs.existsSync(marker)) throw new Error(`workspace code ran in Restricted Mode:\n${fs.readFileSync(marker, 'utf8')}`);
    return result;
  } catch (err) {
    await page.screenshot({ path: path.join(artifacts, 'failure-restricted.png') }).catch(() => undefined);
    throw err;
  } finally {
    await page.close().catch(() => undefined);
    await stop(child);
  }
}
