import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { ConfigSource, Inspected, isExcluded, needsRestart, readSettings, toServerSettings } from '../settings';

/** A fake vscode.WorkspaceConfiguration: key -> where each value was set. */
function source(values: Record<string, Inspected<unknown>>): ConfigSource {
  return { inspect: <T>(key: string) => values[key] as Inspected<T> | undefined };
}

const defaults: Record<string, Inspected<unknown>> = {
  enable: { defaultValue: true },
  interpreter: { defaultValue: [] },
  importStrategy: { defaultValue: 'useBundled' },
  severity: { defaultValue: {} },
  args: { defaultValue: [] },
  'inlayHints.enable': { defaultValue: false },
  lintOnChange: { defaultValue: true },
  'lint.run': { defaultValue: 'onType' },
  debounceMs: { defaultValue: 150 },
  timeBudgetMs: { defaultValue: 3000 },
  path: { defaultValue: [] },
  cwd: { defaultValue: '' },
  exclude: { defaultValue: [] },
  showNotifications: { defaultValue: 'onError' },
  logLevel: { defaultValue: 'info' },
};

test('defaults', () => {
  const s = readSettings(source(defaults), { trusted: true });
  assert.deepEqual(s, {
    enable: true,
    interpreter: [],
    importStrategy: 'useBundled',
    severity: {},
    args: [],
    inlayHints: { enable: false },
    lintRun: 'onType',
    debounceMs: 150,
    timeBudgetMs: 3000,
    path: [],
    cwd: undefined,
    exclude: [],
    showNotifications: 'onError',
    logLevel: 'info',
    trusted: true,
  });
});

test('workspace folder beats workspace beats user', () => {
  const s = readSettings(
    source({ ...defaults, lintOnChange: { defaultValue: true, globalValue: true, workspaceValue: false }, debounceMs: { globalValue: 300, workspaceFolderValue: 50 } }),
    { trusted: true },
  );
  assert.equal(s.lintRun, 'onSave', 'the deprecated boolean still applies while lint.run is not set');
  assert.equal(s.debounceMs, 50);
});

test('untrusted workspace: workspace-set interpreter, importStrategy and args are ignored', () => {
  const values = {
    ...defaults,
    interpreter: { defaultValue: [], globalValue: ['/usr/bin/python3.12'], workspaceValue: ['./evil/python'] },
    importStrategy: { defaultValue: 'useBundled', workspaceValue: 'fromEnvironment' },
    args: { defaultValue: [], workspaceValue: ['--config', 'x.toml'] },
    lintOnChange: { defaultValue: true, workspaceValue: false },
  };
  const untrusted = readSettings(source(values), { trusted: false });
  assert.deepEqual(untrusted.interpreter, ['/usr/bin/python3.12']);
  assert.equal(untrusted.importStrategy, 'useBundled');
  assert.deepEqual(untrusted.args, []);
  assert.equal(untrusted.lintRun, 'onSave', 'harmless settings still apply');
  const trusted = readSettings(source(values), { trusted: true });
  assert.deepEqual(trusted.interpreter, ['./evil/python']);
  assert.equal(trusted.importStrategy, 'fromEnvironment');
});

test('interpreter paths expand ${workspaceFolder}, ~ and ${env:..}', () => {
  const s = readSettings(
    source({ ...defaults, interpreter: { workspaceValue: ['${workspaceFolder}/.venv/bin/python', '-X', '${env:MODE}'] }, args: { globalValue: ['--config', '~/devflow.toml'] } }),
    { trusted: true, workspaceFolder: '/proj', home: '/home/u', env: { MODE: 'utf8' } },
  );
  assert.deepEqual(s.interpreter, ['/proj/.venv/bin/python', '-X', 'utf8']);
  assert.deepEqual(s.args, ['--config', '/home/u/devflow.toml']);
});

test('bad values fall back to defaults; severity keys are normalised and filtered', () => {
  const s = readSettings(
    source({
      enable: { globalValue: 'yes' },
      interpreter: { globalValue: '/usr/bin/python3' },
      importStrategy: { globalValue: 'bogus' },
      severity: { globalValue: { dev1: 'Warning', DEV301: 'error', DEV2: 'fatal', E501: 'error' } },
      args: { globalValue: ['--select', 3, 'DEV1'] },
      debounceMs: { globalValue: -5 },
    }),
    { trusted: true },
  );
  assert.equal(s.enable, true);
  assert.deepEqual(s.interpreter, ['/usr/bin/python3']);
  assert.equal(s.importStrategy, 'useBundled');
  assert.deepEqual(s.severity, { DEV1: 'warning', DEV301: 'error' });
  assert.deepEqual(s.args, ['--select', 'DEV1']);
  assert.equal(s.debounceMs, 150);
});

test('server settings follow the agreed initializationOptions shape: global, then one object per folder', () => {
  const s = readSettings(source({ ...defaults, severity: { globalValue: { DEV1: 'hint' } }, 'inlayHints.enable': { globalValue: true } }), { trusted: true });
  const resource = { enable: true, severity: { DEV1: 'hint' }, args: [], inlayHints: { enable: true }, lintOnChange: true, debounceMs: 150, timeBudgetMs: 3000, exclude: [] };
  assert.deepEqual(toServerSettings(s), { settings: resource, folders: [] });
  // Each folder's object is complete (the user's value merged with the folder's), not a difference.
  const app = readSettings(source({ ...defaults, severity: { globalValue: { DEV1: 'hint' } }, args: { workspaceFolderValue: ['--ignore', 'DEV201'] }, 'lint.run': { workspaceFolderValue: 'onSave' } }), { trusted: true });
  assert.deepEqual(toServerSettings(s, [{ uri: 'file:///ws/app', settings: app }]), {
    settings: resource,
    folders: [{ uri: 'file:///ws/app', settings: { ...resource, inlayHints: { enable: false }, args: ['--ignore', 'DEV201'], lintOnChange: false } }],
  });
  const payload = toServerSettings(s, [{ uri: 'file:///ws/app', settings: app }]);
  for (const key of ['interpreter', 'importStrategy', 'path', 'cwd', 'logLevel', 'showNotifications', 'trusted']) {
    assert.ok(!(key in payload.settings) && !(key in payload.folders[0].settings), `window setting ${key} is not per folder`);
  }
});

test('devflow.timeBudgetMs: 0 (no limit) to an hour; bad values fall back to 3000', () => {
  const read = (v: unknown) => readSettings(source({ ...defaults, timeBudgetMs: { workspaceFolderValue: v } }), { trusted: true }).timeBudgetMs;
  assert.equal(read(0), 0);
  assert.equal(read(12_000), 12_000);
  assert.equal(read(-1), 3000);
  assert.equal(read('fast'), 3000);
});

test('only process-level changes need a restart', () => {
  const base = readSettings(source(defaults), { trusted: true });
  assert.equal(needsRestart(base, { ...base, severity: { DEV1: 'error' }, lintRun: 'onSave', exclude: ['x'] }), false);
  assert.equal(needsRestart(base, { ...base, path: ['/home/u/.local/bin/devflow'] }), true);
  assert.equal(needsRestart(base, { ...base, cwd: '/elsewhere' }), true);
  assert.equal(needsRestart(base, { ...base, logLevel: 'debug' }), true);
  assert.equal(needsRestart(base, { ...base, interpreter: ['/x/python'] }), true);
  assert.equal(needsRestart(base, { ...base, importStrategy: 'fromEnvironment' }), true);
  assert.equal(needsRestart(base, { ...base, args: ['--select', 'DEV1'] }), false, 'args are per folder, in the payload');
  assert.equal(needsRestart(base, { ...base, timeBudgetMs: 0, debounceMs: 10, inlayHints: { enable: true } }), false);
});

test('devflow.lint.run wins over the deprecated devflow.lintOnChange; bad values fall back to onType', () => {
  const both = readSettings(source({ ...defaults, lintOnChange: { globalValue: false }, 'lint.run': { workspaceValue: 'onType' } }), { trusted: true });
  assert.equal(both.lintRun, 'onType');
  const onSave = readSettings(source({ ...defaults, 'lint.run': { globalValue: 'onSave' } }), { trusted: true });
  assert.equal(onSave.lintRun, 'onSave');
  assert.equal(toServerSettings(onSave).settings.lintOnChange, false, 'the server contract keeps its boolean');
  assert.equal(readSettings(source({ ...defaults, 'lint.run': { globalValue: 'always' } }), { trusted: true }).lintRun, 'onType');
});

test('Restricted Mode: no devflow.path, no cwd, no fromEnvironment, whoever set them', () => {
  const values = {
    ...defaults,
    path: { globalValue: ['/home/u/.local/bin/devflow'], workspaceValue: ['./bin/devflow'] },
    cwd: { workspaceValue: '${workspaceFolder}/sub' },
    importStrategy: { globalValue: 'fromEnvironment' },
  };
  const untrusted = readSettings(source(values), { trusted: false, workspaceFolder: '/proj' });
  assert.deepEqual(untrusted.path, [], 'only the bundled server runs');
  assert.equal(untrusted.importStrategy, 'useBundled');
  assert.equal(untrusted.cwd, undefined);
  assert.equal(untrusted.trusted, false);
  const trusted = readSettings(source(values), { trusted: true, workspaceFolder: '/proj' });
  assert.deepEqual(trusted.path, ['./bin/devflow']);
  assert.equal(trusted.cwd, '/proj/sub');
  assert.equal(trusted.importStrategy, 'fromEnvironment');
});

test('showNotifications and logLevel: known values only', () => {
  const s = readSettings(source({ ...defaults, showNotifications: { globalValue: 'off' }, logLevel: { globalValue: 'debug' } }), { trusted: true });
  assert.equal(s.showNotifications, 'off');
  assert.equal(s.logLevel, 'debug');
  const bad = readSettings(source({ ...defaults, showNotifications: { globalValue: 'loud' }, logLevel: { globalValue: 'trace' } }), { trusted: true });
  assert.equal(bad.showNotifications, 'onError');
  assert.equal(bad.logLevel, 'info');
});

test('devflow.exclude globs: the cases the server is tested on too (tests/fixtures/exclude_cases.json)', () => {
  const fixture = path.join(__dirname, '..', '..', '..', 'tests', 'fixtures', 'exclude_cases.json');
  const cases: [string, string | null, string[], boolean][] = JSON.parse(fs.readFileSync(fixture, 'utf8')).cases;
  for (const [file, folder, globs, excluded] of cases) {
    assert.equal(isExcluded(file, folder ?? undefined, globs), excluded, `${file} in ${folder} with ${JSON.stringify(globs)}`);
  }
});

test('devflow.exclude globs', () => {
  const root = '/proj';
  assert.equal(isExcluded('/proj/build/gen.py', root, ['build/**']), true);
  assert.equal(isExcluded('/proj/src/build/gen.py', root, ['build/**']), false, 'a glob with a slash is anchored at the folder');
  assert.equal(isExcluded('/proj/src/build/gen.py', root, ['build']), true, 'a bare name matches any folder');
  assert.equal(isExcluded('/proj/a/b/model_pb2.py', root, ['**/*_pb2.py']), true);
  assert.equal(isExcluded('/proj/model_pb2.py', root, ['**/*_pb2.py']), true, '**/ is zero or more folders');
  assert.equal(isExcluded('/proj/xmodel.py', root, ['**/model.py']), false);
  assert.equal(isExcluded('/proj/train.py', root, ['*.ipynb', 'tests/**']), false);
  assert.equal(isExcluded('/proj/tests/t.py', root, []), false);
  assert.equal(isExcluded('/elsewhere/x.py', root, ['/elsewhere/**']), true, 'absolute globs');
  assert.equal(isExcluded('/proj/a[1]/x.py', root, ['a[1]/**']), true, 'regex characters are literal');
});
