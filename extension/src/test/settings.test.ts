import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigSource, Inspected, needsRestart, readSettings, toServerSettings } from '../settings';

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
  debounceMs: { defaultValue: 150 },
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
    lintOnChange: true,
    debounceMs: 150,
  });
});

test('workspace folder beats workspace beats user', () => {
  const s = readSettings(
    source({ ...defaults, lintOnChange: { defaultValue: true, globalValue: true, workspaceValue: false }, debounceMs: { globalValue: 300, workspaceFolderValue: 50 } }),
    { trusted: true },
  );
  assert.equal(s.lintOnChange, false);
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
  assert.equal(untrusted.lintOnChange, false, 'harmless settings still apply');
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

test('server settings follow the agreed initializationOptions shape', () => {
  const s = readSettings(source({ ...defaults, severity: { globalValue: { DEV1: 'hint' } }, 'inlayHints.enable': { globalValue: true } }), { trusted: true });
  assert.deepEqual(toServerSettings(s), {
    settings: { enable: true, severity: { DEV1: 'hint' }, args: [], inlayHints: { enable: true }, lintOnChange: true, debounceMs: 150 },
  });
});

test('only process-level changes need a restart', () => {
  const base = readSettings(source(defaults), { trusted: true });
  assert.equal(needsRestart(base, { ...base, severity: { DEV1: 'error' }, lintOnChange: false }), false);
  assert.equal(needsRestart(base, { ...base, interpreter: ['/x/python'] }), true);
  assert.equal(needsRestart(base, { ...base, importStrategy: 'fromEnvironment' }), true);
  assert.equal(needsRestart(base, { ...base, args: ['--select', 'DEV1'] }), true);
});
