import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import {
  assessProbe,
  chooseInterpreter,
  CrashCounter,
  findOnPath,
  Interpreter,
  parseProbe,
  PROBE_SCRIPT,
  serverCommand,
  serverEnv,
} from '../interpreter';

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

test('the probe script runs on a real python3 and reports its version', (t) => {
  let out: string;
  try {
    out = execFileSync('python3', ['-c', PROBE_SCRIPT], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: '' } });
  } catch {
    t.skip('no python3 on PATH');
    return;
  }
  const r = parseProbe(out);
  assert.ok(r);
  assert.equal(r.version[0], 3);
  assert.equal(typeof r.errors, 'object');
});

test('server command line and environment', () => {
  assert.deepEqual(serverCommand({ command: ['/py', '-X', 'utf8'], source: 'setting' }, ['--select', 'DEV1']), {
    command: '/py',
    args: ['-X', 'utf8', '-m', 'devflow', 'serve', '--select', 'DEV1'],
  });
  const bundled = serverEnv({ PATH: '/bin', PYTHONPATH: '/mine' }, 'useBundled', '/ext/bundled/libs');
  assert.equal(bundled.PYTHONPATH, '/ext/bundled/libs:/mine');
  assert.equal(bundled.PATH, '/bin');
  const env = serverEnv({ PYTHONPATH: '/mine' }, 'fromEnvironment', '/ext/bundled/libs');
  assert.equal(env.PYTHONPATH, '/mine');
});

test('crash counter allows a few restarts, then stops the loop', () => {
  const c = new CrashCounter(2, 1000);
  assert.equal(c.crashed(0), true);
  assert.equal(c.crashed(10), true);
  assert.equal(c.crashed(20), false);
  assert.equal(c.crashed(5000), true, 'old crashes age out');
});
