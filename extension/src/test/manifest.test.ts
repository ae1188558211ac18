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
    'lint.run': 'onType',
    debounceMs: 150,
    path: [],
    cwd: '',
    exclude: [],
    showNotifications: 'onError',
    logLevel: 'info',
    'trace.server': 'off',
  };
  for (const [key, value] of Object.entries(expected)) {
    assert.ok(props[`${SECTION}.${key}`], `${SECTION}.${key} missing`);
    assert.deepEqual(props[`${SECTION}.${key}`].default, value, key);
  }
  assert.deepEqual(props['devflow.importStrategy'].enum, ['useBundled', 'fromEnvironment']);
  assert.deepEqual(props['devflow.severity'].patternProperties['^DEV[0-9]{0,3}$'].enum, ['error', 'warning', 'information', 'hint']);
});

test('window settings are scoped "window" (one server per window); the others are per folder ("resource")', () => {
  const props = manifest.contributes.configuration.properties;
  const window = ['interpreter', 'importStrategy', 'path', 'cwd', 'showNotifications', 'logLevel', 'trace.server'];
  for (const [key, value] of Object.entries<{ scope: string }>(props)) {
    const name = key.slice(`${SECTION}.`.length);
    assert.equal(value.scope, window.includes(name) ? 'window' : 'resource', key);
  }
  for (const name of ['enable', 'severity', 'args', 'lint.run', 'exclude', 'inlayHints.enable', 'debounceMs', 'timeBudgetMs']) {
    assert.ok(props[`${SECTION}.${name}`], name);
  }
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

const root = path.join(__dirname, '..', '..', '..');

test('devflow.lintOnChange is deprecated in favour of devflow.lint.run', () => {
  const props = manifest.contributes.configuration.properties;
  assert.ok(props['devflow.lintOnChange'].deprecationMessage);
  assert.deepEqual(props['devflow.lint.run'].enum, ['onType', 'onSave']);
});

test('the package has a repository, an icon, a licence and a changelog, all shipped', () => {
  assert.match(manifest.repository.url, /^https:\/\/github\.com\//);
  assert.ok(fs.existsSync(path.join(root, manifest.icon)), manifest.icon);
  assert.deepEqual([...fs.readFileSync(path.join(root, manifest.icon)).subarray(1, 4)], [...Buffer.from('PNG')]);
  assert.ok(fs.existsSync(path.join(root, 'LICENSE')));
  assert.ok(fs.existsSync(path.join(root, 'CHANGELOG.md')));
  const ignore = fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8');
  for (const line of ['!LICENSE', '!CHANGELOG.md', `!${manifest.icon}`, '!extension/launcher/devflow_launch.py', '!docs/rules/*.md', '!extension/walkthrough/**']) {
    assert.ok(ignore.split('\n').includes(line), `${line} missing from .vscodeignore`);
  }
});

test('the walkthrough: check a sample, apply a fix, debug a cross-device error; its files exist and its commands are declared', () => {
  const [walk] = manifest.contributes.walkthroughs;
  const ids = walk.steps.map((s: { id: string }) => s.id);
  for (const id of ['checkSample', 'applyFix', 'debugError']) assert.ok(ids.includes(id), id);
  const declared = new Set(manifest.contributes.commands.map((c: { command: string }) => c.command));
  for (const step of walk.steps) {
    assert.ok(fs.existsSync(path.join(root, step.media.markdown)), step.media.markdown);
    for (const m of step.description.matchAll(/\(command:([\w.]+)/g)) {
      if (m[1].startsWith('devflow.')) assert.ok(declared.has(m[1]), `${m[1]} in step ${step.id}`);
    }
  }
});
