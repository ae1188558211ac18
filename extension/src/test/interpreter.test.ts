import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import {
  assessProbe,
  chooseInterpreter,
  CrashCounter,
  executableCommand,
  findOnPath,
  Interpreter,
  LAUNCHER,
  launcherCommand,
  parseProbe,
  serverEnv,
} from '../interpreter';
import { ProbeCache, probeKey } from '../probeCache';

const none = () => undefined;

test('devflow.interpreter wins over the Python extension and PATH', () => {
  const i = chooseInterpreter({ setting: ['/opt/py/bin/python', '-X', 'utf8'], pythonExtension: ['/venv/bin/python'], findOnPath: () => '/usr/bin/python3' });
  assert.deepEqual(i, { command: ['/opt/py/bin/python', '-X', 'utf8'], source: 'setting' });
});

test('the Python extension is next, then python3, then python on PATH', () => {
  assert.deepEqual(chooseInterpreter({ setting: [], pythonExtension: ['/venv/bin/python'], findOnPath: () => '/usr/bin/python3' }), {
    command: ['/venv/bin/python'],
    source: 'python-extension',
  });
  assert.deepEqual(chooseInterpreter({ setting: [], findOnPath: (n) => (n === 'python3' ? '/usr/bin/python3' : undefined) }), {
    command: ['/usr/bin/python3'],
    source: 'path',
  });
  assert.deepEqual(chooseInterpreter({ setting: [], pythonExtension: [''], findOnPath: (n) => (n === 'python' ? '/bin/python' : undefined) }), {
    command: ['/bin/python'],
    source: 'path',
  });
  assert.equal(chooseInterpreter({ setting: [], findOnPath: none }), undefined);
});

test('findOnPath walks PATH in order and skips empty entries', () => {
  const exists = new Set(['/b/python3', '/c/python3']);
  assert.equal(findOnPath('python3', '/a::/b:/c', (f) => exists.has(f), ':'), '/b/python3');
  assert.equal(findOnPath('python3', undefined, () => true, ':'), undefined);
});

const venv: Interpreter = { command: ['/venv/bin/python'], source: 'python-extension' };
const fromSetting: Interpreter = { command: ['/old/python'], source: 'setting' };

test('a working interpreter passes', () => {
  const v = assessProbe({ interpreter: venv, strategy: 'useBundled', result: { version: [3, 11, 7], errors: {} } });
  assert.deepEqual(v, { ok: true, version: '3.11.7' });
});

test('too old: one message naming the version, with actions that fix it', () => {
  const v = assessProbe({ interpreter: fromSetting, strategy: 'useBundled', result: { version: [3, 8, 18], errors: {} } });
  assert.equal(v.ok, false);
  if (v.ok) return;
  assert.match(v.message, /needs Python 3\.10 or newer.*"\/old\/python" is Python 3\.8\.18/);
  assert.deepEqual(v.actions, ['openSettings', 'selectInterpreter'], 'a bad setting is fixed in the settings first');
});

test('fromEnvironment without devflow offers the bundled server', () => {
  const v = assessProbe({ interpreter: venv, strategy: 'fromEnvironment', result: { version: [3, 12, 1], errors: { devflow: "ModuleNotFoundError: No module named 'devflow'" } } });
  assert.equal(v.ok, false);
  if (v.ok) return;
  assert.match(v.message, /pip install devflow/);
  assert.equal(v.actions[0], 'useBundled');
});

test('bundled server on an unsupported interpreter names the supported versions', () => {
  const v = assessProbe({ interpreter: venv, strategy: 'useBundled', result: { version: [3, 15, 0], implementation: 'cpython', errors: { libcst: "ImportError: cannot import name 'native'" } } });
  assert.equal(v.ok, false);
  if (v.ok) return;
  assert.match(v.message, /CPython 3\.10 to 3\.14/);
  assert.match(v.message, /libcst: ImportError/);
});

test('an interpreter that cannot be run', () => {
  const v = assessProbe({ interpreter: fromSetting, strategy: 'useBundled', spawnError: 'file not found' });
  assert.equal(v.ok, false);
  if (v.ok) return;
  assert.match(v.message, /could not run the Python interpreter "\/old\/python": file not found/);
  assert.ok(v.actions.includes('showLogs'));
});

test('parseProbe takes the last JSON line and rejects junk', () => {
  assert.deepEqual(parseProbe('banner\n{"version":[3,10,13],"errors":{}}\n'), { version: [3, 10, 13], implementation: undefined, executable: undefined, errors: {}, devflow: undefined });
  assert.equal(parseProbe('not json'), undefined);
  assert.equal(parseProbe('{"nope":1}'), undefined);
});

const LAUNCHER_PATH = path.join(__dirname, '..', '..', '..', LAUNCHER);
const SERVER_SRC = path.join(__dirname, '..', '..', '..', 'server');

/** A folder like an untrusted project: modules named like the stdlib's and a `devflow` package,
 * each of which leaves a marker file when imported. */
function hostileFolder(): { dir: string; marker: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devflow-hostile-'));
  const marker = path.join(dir, 'MARKER');
  const code = (name: string) => `open(${JSON.stringify(marker)}, "a").write(${JSON.stringify(name + '\n')})\n`;
  for (const m of ['json', 'token', 'signal', 'queue', 'platform', 'importlib', 'os']) fs.writeFileSync(path.join(dir, `${m}.py`), code(m));
  fs.mkdirSync(path.join(dir, 'devflow'));
  fs.writeFileSync(path.join(dir, 'devflow', '__init__.py'), code('devflow'));
  fs.writeFileSync(path.join(dir, 'devflow', '__main__.py'), code('devflow.__main__'));
  return { dir, marker };
}

/** The repository's .venv python (it has the server's dependencies), else python3 on PATH. */
function python3(): string | undefined {
  const venv = path.join(__dirname, '..', '..', '..', '.venv', 'bin', 'python');
  if (fs.existsSync(venv)) return venv;
  try {
    return execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

test('launcher command: isolated mode, the launcher script, the bundled libs, then the mode', () => {
  assert.deepEqual(launcherCommand({ command: ['/py', '-X', 'dev'], source: 'setting' }, '/ext/launch.py', '/ext/libs', 'serve', ['--select', 'DEV1']), {
    command: '/py',
    args: ['-X', 'dev', '-I', '-X', 'utf8', '/ext/launch.py', '--libs', '/ext/libs', 'serve', '--select', 'DEV1'],
  });
  assert.deepEqual(launcherCommand({ command: ['/py'], source: 'path' }, '/ext/launch.py', undefined, 'probe').args, ['-I', '-X', 'utf8', '/ext/launch.py', 'probe']);
  assert.deepEqual(executableCommand(['/home/u/.local/bin/devflow'], ['--log-level', 'info']), { command: '/home/u/.local/bin/devflow', args: ['serve', '--log-level', 'info'] });
  const env = serverEnv({ PATH: '/bin', PYTHONPATH: '/mine', PYTHONSTARTUP: '/x.py' });
  assert.equal(env.PYTHONPATH, undefined);
  assert.equal(env.PYTHONSTARTUP, undefined);
  assert.equal(env.PYTHONSAFEPATH, '1');
  assert.equal(env.PATH, '/bin');
});

test('the probe runs nothing from a hostile working directory, writes nothing there, and finds the bundled server', (t) => {
  const py = python3();
  if (!py) return t.skip('no python3 on PATH');
  const { dir, marker } = hostileFolder();
  const cmd = launcherCommand({ command: [py], source: 'path' }, LAUNCHER_PATH, SERVER_SRC, 'probe');
  const out = execFileSync(cmd.command, cmd.args, { cwd: dir, encoding: 'utf8', env: { ...serverEnv(process.env), PYTHONPATH: dir } });
  assert.equal(fs.existsSync(marker), false, fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : '');
  assert.equal(fs.existsSync(path.join(dir, '__pycache__')), false, 'no bytecode written into the project');
  const r = parseProbe(out);
  assert.ok(r);
  assert.equal(r.version[0], 3);
  assert.ok(r.devflow?.file.startsWith(SERVER_SRC), `devflow found at ${r.devflow?.file}`);
});

test('the server starts from the launcher in a hostile folder without importing any of it', (t) => {
  const py = python3();
  if (!py) return t.skip('no python3 on PATH');
  const { dir, marker } = hostileFolder();
  // `serve --help`: the server module is imported (with everything it imports) and exits.
  const cmd = launcherCommand({ command: [py], source: 'path' }, LAUNCHER_PATH, SERVER_SRC, 'serve', ['--help']);
  const res = spawnSync(cmd.command, cmd.args, { cwd: dir, encoding: 'utf8', env: serverEnv(process.env) });
  assert.equal(fs.existsSync(marker), false, fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : '');
  if (res.status === 3 && /cannot be imported/.test(res.stderr)) return t.skip(`python3 lacks the server's dependencies: ${res.stderr.trim()}`);
  assert.equal(res.status, 0, res.stderr);
  assert.match(res.stdout, /devflow serve/);
});

test('the probe names a missing dependency instead of crashing', (t) => {
  const py = python3();
  if (!py) return t.skip('no python3 on PATH');
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'devflow-libs-'));
  fs.mkdirSync(path.join(empty, 'devflow'));
  fs.writeFileSync(path.join(empty, 'devflow', '__init__.py'), '__version__ = "9.9"\n');
  fs.mkdirSync(path.join(empty, 'libcst'));
  fs.writeFileSync(path.join(empty, 'libcst', '__init__.py'), '');
  // Without site-packages (-S is not needed: -I keeps the user's site; a venv python has its own).
  const cmd = launcherCommand({ command: [py, '-S'], source: 'path' }, LAUNCHER_PATH, empty, 'probe');
  const r = parseProbe(execFileSync(cmd.command, cmd.args, { encoding: 'utf8' }));
  assert.ok(r);
  assert.equal(r.devflow?.version, '9.9');
  assert.match(r.errors['libcst.native'] ?? '', /no libcst\.native built for this interpreter/);
  assert.match(r.errors.pygls ?? '', /No module named 'pygls'/);
  const verdict = assessProbe({ interpreter: { command: [py], source: 'path' }, strategy: 'useBundled', result: r });
  assert.equal(verdict.ok, false);
});

test('Restricted Mode: the Python extension\'s (workspace) interpreter is not used', () => {
  const inputs = { setting: [], pythonExtension: ['/proj/.venv/bin/python'], findOnPath: (n: string) => (n === 'python3' ? '/usr/bin/python3' : undefined) };
  assert.deepEqual(chooseInterpreter({ ...inputs, trusted: false }), { command: ['/usr/bin/python3'], source: 'path' });
  assert.deepEqual(chooseInterpreter({ ...inputs, trusted: true }), { command: ['/proj/.venv/bin/python'], source: 'python-extension' });
  assert.deepEqual(chooseInterpreter({ ...inputs, setting: ['/home/u/py'], trusted: false }), { command: ['/home/u/py'], source: 'setting' });
});

test('findOnPath skips relative PATH entries (they would resolve inside the workspace)', () => {
  const seen: string[] = [];
  const found = findOnPath('python3', `.:bin:/usr/bin`, (f) => {
    seen.push(f);
    return true;
  }, ':');
  assert.equal(found, '/usr/bin/python3');
  assert.deepEqual(seen, ['/usr/bin/python3']);
});

test('crash counter allows a few restarts, then stops the loop', () => {
  const c = new CrashCounter(2, 1000);
  assert.equal(c.crashed(0), true);
  assert.equal(c.crashed(10), true);
  assert.equal(c.crashed(20), false);
  assert.equal(c.crashed(5000), true, 'old crashes age out');
});

test('probe cache: remembered per interpreter file, forgotten on demand, stale when the file changes', async () => {
  const store = new Map<string, unknown>();
  const memento = { get: <T>(k: string) => store.get(k) as T | undefined, update: async (k: string, v: unknown) => void store.set(k, v) };
  const cache = new ProbeCache(memento);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devflow-probe-'));
  const exe = path.join(dir, 'python');
  fs.writeFileSync(exe, '#!/bin/sh\n');
  const launcher = path.join(dir, 'launch.py');
  fs.writeFileSync(launcher, '');
  const key = probeKey([exe], launcher, '/libs', 'useBundled');
  assert.ok(key);
  const result = { version: [3, 12, 1], errors: {} };
  assert.equal(cache.get(key), undefined);
  await cache.put(key, result);
  assert.deepEqual(cache.get(key), result);
  fs.writeFileSync(exe, '#!/bin/sh\n# a new interpreter in place\n');
  assert.notEqual(probeKey([exe], launcher, '/libs', 'useBundled'), key, 'size/mtime change: a new key');
  assert.notEqual(probeKey([exe], launcher, '/other', 'useBundled'), key);
  await cache.forget(key);
  assert.equal(cache.get(key), undefined);
  assert.equal(probeKey(['/nonexistent/python'], launcher, undefined, 'useBundled'), undefined);
});
