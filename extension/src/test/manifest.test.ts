import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { RESTRICTED_KEYS, SECTION } from '../settings';

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));

test('activates on Python files, notebooks and Python debug sessions', () => {
  const events: string[] = manifest.activationEvents;
  for (const e of ['onLanguage:python', 'onNotebook:jupyter-notebook', 'onDebugResolve:debugpy', 'onDebugResolve:python']) {
    assert.ok(events.includes(e), e);
  }
});

test('declares every setting the client reads, with the agreed defaults', () => {
  const props = manifest.contributes.configuration.properties;
  const expected: Record<string, unknown> = {
    enable: true,
    interpreter: [],
    importStrategy: 'useBundled',
    severity: {},
    args: [],
    'inlayHints.enable': false,
    lintOnChange: true,
    debounceMs: 150,
  };
  for (const [key, value] of Object.entries(expected)) {
    assert.ok(props[`${SECTION}.${key}`], `${SECTION}.${key} missing`);
    assert.deepEqual(props[`${SECTION}.${key}`].default, value, key);
  }
  assert.deepEqual(props['devflow.importStrategy'].enum, ['useBundled', 'fromEnvironment']);
  assert.deepEqual(props['devflow.severity'].patternProperties['^DEV[0-9]{0,3}$'].enum, ['error', 'warning', 'information', 'hint']);
});

test('untrusted workspaces: VS Code also withholds the workspace values the client ignores', () => {
  const untrusted = manifest.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, 'limited');
  assert.deepEqual([...untrusted.restrictedConfigurations].sort(), RESTRICTED_KEYS.map((k) => `${SECTION}.${k}`).sort());
});

test('the bundle entry point and the vsix contents line up', () => {
  assert.equal(manifest.main, './extension/dist/extension.js');
  const ignore = fs.readFileSync(path.join(__dirname, '..', '..', '..', '.vscodeignore'), 'utf8');
  assert.match(ignore, /^!extension\/dist\/extension\.js$/m);
  assert.match(ignore, /^!extension\/bundled\/libs\/\*\*$/m);
});
