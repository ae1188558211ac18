import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { CheckSummary, CommandHost, COMMANDS, describeCheck, EDITOR_COMMANDS, isCancelled, parseCheckResult, registerCommands, ServerControl, SERVER_COMMANDS } from '../commands';
import { statusView } from '../statusView';

class FakeHost implements CommandHost {
  commands = new Map<string, (...args: unknown[]) => unknown>();
  executed: unknown[][] = [];
  infos: string[] = [];
  errors: string[] = [];
  progressTitles: string[] = [];
  progressMessages: string[] = [];
  errorChoice: string | undefined;
  active: string | undefined = 'file:///w/train.py';
  registerCommand(id: string, run: (...args: unknown[]) => unknown) {
    assert.ok(!this.commands.has(id), `${id} registered twice`);
    this.commands.set(id, run);
    return { dispose: () => this.commands.delete(id) };
  }
  async executeCommand(id: string, ...args: unknown[]) {
    this.executed.push([id, ...args]);
    return undefined;
  }
  async withProgress<T>(title: string, task: (report: (m: string) => void, token: { isCancellationRequested: boolean }) => Promise<T>) {
    this.progressTitles.push(title);
    return task((m) => this.progressMessages.push(m), { isCancellationRequested: false });
  }
  showInfo(m: string) {
    this.infos.push(m);
  }
  async showError(m: string) {
    this.errors.push(m);
    return this.errorChoice;
  }
  activeDocumentUri() {
    return this.active;
  }
  run(id: string, ...args: unknown[]) {
    const f = this.commands.get(id);
    assert.ok(f, `${id} not registered`);
    return f(...args);
  }
}

class FakeServer implements ServerControl {
  running = true;
  calls: { command: string; args: unknown[] }[] = [];
  restarts: string[] = [];
  logsShown = 0;
  reply: unknown = { files: 3, diagnostics: 2 };
  isRunning() {
    return this.running;
  }
  async executeServerCommand(command: string, args: unknown[], _token?: unknown, onProgress?: (m: string) => void) {
    this.calls.push({ command, args });
    onProgress?.('1/3 files');
    if (this.reply instanceof Error) throw this.reply;
    return this.reply;
  }
  async restart(reason: string) {
    this.restarts.push(reason);
  }
  showLogs() {
    this.logsShown++;
  }
}

function setup() {
  const host = new FakeHost();
  const server = new FakeServer();
  const checks: CheckSummary[] = [];
  const disposables = registerCommands(host, server, { setLastCheck: (s) => checks.push(s) });
  return { host, server, checks, disposables };
}

test('every command in package.json is registered (showPlacement by the placement view, editor commands by clientCommands)', () => {
  const { host } = setup();
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
  const declared: string[] = manifest.contributes.commands.map((c: { command: string }) => c.command);
  const registered = [...host.commands.keys()];
  const editor: string[] = Object.values(EDITOR_COMMANDS);
  for (const id of editor) assert.ok(declared.includes(id), `${id} is not in package.json`);
  const elsewhere = ['devflow.showPlacement', 'devflow.debugCurrentFile', 'devflow.dryRunCurrentFile', ...editor]; // placement view, debug/index.ts, dryrun/, clientCommands.ts
  assert.deepEqual(declared.filter((c) => !elsewhere.includes(c)).sort(), registered.sort());
  assert.ok(declared.includes('devflow.showPlacement'));
  for (const id of Object.values(SERVER_COMMANDS)) assert.ok(!declared.includes(id), `${id} is the server's; the client must not claim it`);
  const titles = manifest.contributes.commands.map((c: { category: string; title: string }) => `${c.category}: ${c.title}`);
  assert.ok(titles.includes('Devflow: Check Devices'));
  assert.ok(titles.includes('Devflow: Show Device Placement'));
});

test('Check Devices runs checkWorkspace with progress, records counts and opens Problems', async () => {
  const { host, server, checks } = setup();
  const summary = await host.run(COMMANDS.checkDevices);
  assert.deepEqual(server.calls, [{ command: SERVER_COMMANDS.checkWorkspace, args: [] }]);
  assert.deepEqual(summary, { files: 3, diagnostics: 2 });
  assert.deepEqual(checks, [{ files: 3, diagnostics: 2 }]);
  assert.deepEqual(host.executed, [['workbench.actions.view.problems']]);
  assert.deepEqual(host.progressTitles, ['Devflow: checking devices']);
  assert.deepEqual(host.progressMessages, ['1/3 files']);
  assert.deepEqual(host.infos, ['Devflow: 2 device problems in 3 files.']);
});

test('Check Devices checks only the workspace folders devflow is enabled for (multi-root)', async () => {
  const { host, server } = setup();
  (server as unknown as { enabledRoots: () => string[] }).enabledRoots = () => ['file:///ws/app'];
  await host.run(COMMANDS.checkDevices);
  assert.deepEqual(server.calls, [{ command: SERVER_COMMANDS.checkWorkspace, args: ['file:///ws/app'] }]);
});

test('Check Devices when the server is down offers logs and a restart instead of failing silently', async () => {
  const { host, server } = setup();
  server.running = false;
  host.errorChoice = 'Restart Server';
  await host.run(COMMANDS.checkDevices);
  assert.equal(server.calls.length, 0);
  assert.match(host.errors[0], /not running/);
  assert.equal(server.restarts.length, 1);
});

test('a failing server command is reported once with its reason', async () => {
  const { host, server } = setup();
  server.reply = new Error('boom');
  host.errorChoice = 'Show Logs';
  await host.run(COMMANDS.checkDevices);
  assert.deepEqual(host.errors, ['Devflow: Check Devices failed: boom']);
  assert.equal(server.logsShown, 1);
});

test('Check Devices in Current File sends the active document URI to the server', async () => {
  const { host, server } = setup();
  server.reply = { diagnostics: 2 };
  const summary = await host.run(COMMANDS.checkFile);
  assert.deepEqual(server.calls, [{ command: SERVER_COMMANDS.checkFile, args: ['file:///w/train.py'] }]);
  assert.deepEqual(summary, { files: 1, diagnostics: 2 });
  assert.deepEqual(host.infos, ['Devflow: 2 device problems in 1 file.']);
  host.active = undefined;
  await host.run(COMMANDS.checkFile);
  assert.equal(server.calls.length, 1);
  assert.match(host.infos[1], /open a Python file/);
});

test('Restart Server and Show Logs', async () => {
  const { host, server, disposables } = setup();
  await host.run(COMMANDS.restartServer);
  host.run(COMMANDS.showLogs);
  assert.deepEqual(server.restarts, ['requested by the user']);
  assert.equal(server.logsShown, 1);
  for (const d of disposables) d.dispose();
  assert.equal(host.commands.size, 0);
});

test('check results: counts or lists, junk ignored', () => {
  assert.deepEqual(parseCheckResult({ files: 4, diagnostics: 0 }), { files: 4, diagnostics: 0 });
  assert.deepEqual(parseCheckResult({ files: ['a', 'b'], diagnostics: [1] }), { files: 2, diagnostics: 1 });
  assert.equal(parseCheckResult(null), undefined);
  assert.equal(parseCheckResult({}), undefined);
  assert.equal(describeCheck({ files: 1, diagnostics: 0 }), 'no device problems in 1 file');
});

test('status item text follows the server state and last check', () => {
  assert.equal(statusView('starting').busy, true);
  assert.equal(statusView('running').text, 'Devflow: ready');
  const ran = statusView('running', { files: 5, diagnostics: 1 });
  assert.equal(ran.text, 'Devflow: 1 problem');
  assert.match(ran.detail, /last check: 1 device problem in 5 files/);
  assert.equal(statusView('error', undefined, 'Python too old').severity, 2);
  assert.equal(statusView('disabled').text, 'Devflow: disabled');
});

test('status item count follows the live diagnostics, not only the last check', () => {
  const live = statusView('running', { files: 5, diagnostics: 1 }, 'Python 3.11', { files: 2, diagnostics: 4 });
  assert.equal(live.text, 'Devflow: 4 problems');
  assert.match(live.detail, /now: 4 problems in 2 files/);
  assert.match(live.detail, /last check: 1 device problem in 5 files/);
  assert.equal(statusView('running', undefined, undefined, { files: 0, diagnostics: 0 }).text, 'Devflow: 0 problems');
  assert.match(statusView('running', undefined, undefined, { files: 0, diagnostics: 0 }).detail, /now: no device problems/);
});

test('a cancelled request is not a failure', () => {
  assert.equal(isCancelled({ name: 'Canceled' }), true);
  assert.equal(isCancelled({ code: -32800, message: 'Request cancelled' }), true);
  assert.equal(isCancelled({ code: -32802 }), true);
  assert.equal(isCancelled(new Error('boom')), false);
  assert.equal(isCancelled(undefined), false);
});
