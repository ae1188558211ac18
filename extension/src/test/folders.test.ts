import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { debugMarkdown } from '../debugInfo';
import { documentSelector, FolderSettings, folderOf, isReported, lintRunOf, serverPayload, uriPath } from '../folders';
import { ConfigSource, Inspected, readSettings } from '../settings';

/** Settings as VS Code gives them for one scope: user values, plus the folder's own (if any). */
function settingsWith(folderValues: Record<string, unknown> = {}, userValues: Record<string, unknown> = {}) {
  const keys = new Set([...Object.keys(folderValues), ...Object.keys(userValues)]);
  const values: Record<string, Inspected<unknown>> = {};
  for (const k of keys) values[k] = { globalValue: userValues[k], workspaceFolderValue: folderValues[k] };
  const source: ConfigSource = { inspect: <T>(key: string) => values[key] as Inspected<T> | undefined };
  return readSettings(source, { trusted: true });
}

const folders: FolderSettings[] = [
  { uri: 'file:///ws/app', path: '/ws/app', enable: true, exclude: ['build/**'] },
  { uri: 'file:///ws/legacy', path: '/ws/legacy', enable: false, exclude: [] },
  { uri: 'file:///ws/app/vendor%20x', path: '/ws/app/vendor x', enable: false, exclude: [] },
];

test('uriPath: files and notebook cells; other schemes have none', () => {
  assert.equal(uriPath('file:///ws/app/a%20b.py'), '/ws/app/a b.py');
  assert.equal(uriPath('vscode-notebook-cell:/ws/app/nb.ipynb#W0sZmlsZQ%3D%3D'), '/ws/app/nb.ipynb');
  assert.equal(uriPath('vscode-notebook-cell:/ws/legacy/nb.ipynb#W0'), '/ws/legacy/nb.ipynb');
  assert.equal(uriPath('untitled:Untitled-1'), undefined);
  assert.equal(uriPath('file:///c%3A/x/y.py'), 'c:/x/y.py');
});

test('the innermost folder holds a file; a sibling with a common prefix does not', () => {
  assert.equal(folderOf('/ws/app/vendor x/m.py', folders)?.path, '/ws/app/vendor x');
  assert.equal(folderOf('/ws/app/m.py', folders)?.path, '/ws/app');
  assert.equal(folderOf('/ws/application/m.py', folders), undefined);
});

test('per-folder enable and exclude decide what is reported', () => {
  assert.equal(isReported('file:///ws/app/train.py', folders), true);
  assert.equal(isReported('file:///ws/app/build/gen.py', folders), false, 'excluded');
  assert.equal(isReported('file:///ws/legacy/train.py', folders), false, 'devflow.enable off for that folder');
  assert.equal(isReported('file:///ws/app/vendor%20x/m.py', folders), false, 'a disabled folder nested in an enabled one');
  assert.equal(isReported('file:///tmp/loose.py', folders), true, 'outside every folder');
  assert.equal(isReported('untitled:Untitled-1', folders), true);
  assert.equal(isReported('vscode-notebook-cell:/ws/legacy/nb.ipynb#W0', folders), false, 'notebook cells follow their notebook');
});

test('document selector: everything when all folders are enabled, else only the enabled folders', () => {
  const all = documentSelector([folders[0]]);
  assert.deepEqual(all, [{ scheme: 'file', language: 'python' }, { scheme: 'untitled', language: 'python' }, { notebook: '*', language: 'python' }]);
  const some = documentSelector(folders);
  assert.deepEqual(some, [
    { scheme: 'untitled', language: 'python' },
    { scheme: 'file', language: 'python', pattern: '/ws/app/**' },
    { notebook: { scheme: 'file', pattern: '/ws/app/**' }, language: 'python' },
  ]);
  const odd = documentSelector([{ uri: 'file:///w/a%5B1%5D', path: '/w/a[1]', enable: true, exclude: [] }, folders[1]]);
  assert.equal((odd[1] as { pattern: string }).pattern, '/w/a[[]1[]]/**', 'glob characters in a folder name are escaped');
});

test('debug information: versions, interpreter, settings, state, folders', () => {
  const md = debugMarkdown({
    extensionVersion: '0.1.0',
    vscodeVersion: '1.99.0 (code-server)',
    platform: 'linux-x64',
    trusted: false,
    state: 'running',
    launch: { command: ['/usr/bin/python3', '-I', 'launch.py', 'serve'], interpreter: '/usr/bin/python3', interpreterSource: 'path', python: '3.11.7', devflow: '0.1.0', timings: { firstDiagnostics: 900 } },
    settings: { enable: true, lintRun: 'onSave' },
    folders: [{ path: '/ws/app', enable: true, exclude: ['build/**'] }, { path: '/ws/legacy', enable: false, exclude: [] }],
    diagnostics: { files: 2, diagnostics: 3 },
  });
  for (const needle of ['| Devflow extension | `0.1.0` |', 'Restricted Mode', '`3.11.7`', '`/usr/bin/python3 -I launch.py serve`', 'firstDiagnostics 900 ms', '`/ws/legacy`: disabled', '"lintRun": "onSave"', '`3 in 2 file(s)`']) {
    assert.ok(md.includes(needle), `${needle} missing from:\n${md}`);
  }
});

test('every folder gets its own complete settings in the payload; the global ones apply outside', () => {
  const user = { severity: { DEV2: 'warning' } };
  const global = settingsWith({}, user);
  const multi: FolderSettings[] = [
    { uri: 'file:///ws/app', path: '/ws/app', enable: true, exclude: [], settings: settingsWith({ severity: { DEV101: 'hint' }, 'lint.run': 'onSave' }, user) },
    { uri: 'file:///ws/lib', path: '/ws/lib', enable: true, exclude: ['gen'], settings: settingsWith({ args: ['--ignore', 'DEV101'], exclude: ['gen'] }, user) },
    { uri: 'file:///ws/old', path: '/ws/old', enable: true, exclude: [] }, // not read (yet): uses the global settings
  ];
  const payload = serverPayload(global, multi);
  assert.deepEqual(payload.settings.severity, { DEV2: 'warning' });
  assert.deepEqual(payload.folders.map((f) => f.uri), ['file:///ws/app', 'file:///ws/lib']);
  const [app, lib] = payload.folders.map((f) => f.settings);
  assert.deepEqual(app.severity, { DEV2: 'warning', DEV101: 'hint' }, "merged key by key with the user's, as VS Code's get() does");
  assert.equal(app.lintOnChange, false);
  assert.deepEqual(app.args, []);
  assert.deepEqual(lib.severity, { DEV2: 'warning' }, "the user's value where the folder sets none");
  assert.deepEqual(lib.args, ['--ignore', 'DEV101']);
  assert.deepEqual(lib.exclude, ['gen']);
  assert.equal(lib.lintOnChange, true);
});

test('devflow.lint.run per document: its folder, the innermost one, else the global value', () => {
  const nested: FolderSettings[] = [
    { uri: 'file:///ws/app', path: '/ws/app', enable: true, exclude: [], settings: settingsWith({ 'lint.run': 'onSave' }) },
    { uri: 'file:///ws/app/sub', path: '/ws/app/sub', enable: true, exclude: [], settings: settingsWith({ 'lint.run': 'onType' }) },
  ];
  assert.equal(lintRunOf('file:///ws/app/m.py', nested, 'onType'), 'onSave');
  assert.equal(lintRunOf('file:///ws/app/sub/m.py', nested, 'onSave'), 'onType');
  assert.equal(lintRunOf('vscode-notebook-cell:/ws/app/nb.ipynb#W0', nested, 'onType'), 'onSave');
  assert.equal(lintRunOf('file:///elsewhere/m.py', nested, 'onSave'), 'onSave');
  assert.equal(lintRunOf('untitled:Untitled-1', nested, 'onType'), 'onType');
});

test('debug information lists each folder\'s effective settings', () => {
  const md = debugMarkdown({
    extensionVersion: '0.1.0', vscodeVersion: '1.99.0', platform: 'linux-x64', trusted: true, state: 'running',
    settings: { logLevel: 'info' },
    folders: [
      { path: '/ws/app', enable: true, exclude: [], settings: { severity: { DEV101: 'hint' }, lintOnChange: false } },
      { path: '/ws/lib', enable: true, exclude: [], settings: { args: ['--ignore', 'DEV201'] } },
    ],
    diagnostics: { files: 0, diagnostics: 0 },
  });
  const app = md.indexOf('### Folder `/ws/app`');
  const lib = md.indexOf('### Folder `/ws/lib`');
  assert.ok(app > 0 && lib > app, md);
  assert.ok(md.slice(app, lib).includes('"DEV101": "hint"') && md.slice(app, lib).includes('"lintOnChange": false'), md);
  assert.ok(md.slice(lib).includes('"--ignore"'), md);
});
