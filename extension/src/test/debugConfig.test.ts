// The devflow-python debug type: launch configuration resolution (pure) and the manifest entries
// that VS Code reads (package.json `debuggers`, the command, activation events).

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import {
  adapterCommand,
  DEBUG_CURRENT_FILE_COMMAND,
  DEBUG_TYPE,
  debuggeePython,
  INITIAL_CONFIGURATIONS,
  installCommand,
  resolveLaunchConfig,
  splitArgs,
} from '../debug/config';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'package.json'), 'utf8'));

test('F5 without launch.json debugs the active Python file', () => {
  const r = resolveLaunchConfig({}, { activeFile: '/w/train.py', workspaceFolder: '/w' });
  assert.ok('config' in r);
  assert.equal(r.config.type, DEBUG_TYPE);
  assert.equal(r.config.request, 'launch');
  assert.equal(r.config.program, '/w/train.py');
  assert.equal(r.config.cwd, '/w');
  assert.equal(r.config.justMyCode, true);
  assert.deepEqual(r.config.args, []);
});

test('configurations are completed, checked and never guessed', () => {
  const r = resolveLaunchConfig({ type: DEBUG_TYPE, request: 'launch', name: 'm', module: 'pkg.train', args: '--lr 3 "a b"' }, {});
  assert.ok('config' in r);
  assert.deepEqual(r.config.args, ['--lr', '3', 'a b']);
  assert.equal(r.config.cwd, undefined);
  const own = resolveLaunchConfig({ type: DEBUG_TYPE, request: 'launch', name: 'p', program: '/a/b.py', justMyCode: false, cwd: '/c' }, { workspaceFolder: '/w' });
  assert.ok('config' in own && own.config.justMyCode === false && own.config.cwd === '/c');
  assert.ok('error' in resolveLaunchConfig({}, {}));
  assert.ok('error' in resolveLaunchConfig({}, { activeFile: '/w/notes.md' }));
  assert.ok('error' in resolveLaunchConfig({ type: DEBUG_TYPE, request: 'launch', name: 'x' }, {}));
  assert.ok('error' in resolveLaunchConfig({ type: DEBUG_TYPE, request: 'attach', name: 'x', program: 'a.py' }, {}));
  assert.ok('error' in resolveLaunchConfig({ type: DEBUG_TYPE, request: 'launch', name: 'x', program: 'a.py', module: 'a' }, {}));
});

test('the adapter runs with the interpreter devflow uses, unless the configuration names one', () => {
  assert.deepEqual(debuggeePython({}, ['/venv/bin/python']), ['/venv/bin/python']);
  assert.deepEqual(debuggeePython({ python: '/other/python' }, ['/venv/bin/python']), ['/other/python']);
  assert.deepEqual(debuggeePython({ python: ['conda', 'run', 'python'] }, undefined), ['conda', 'run', 'python']);
  assert.equal(debuggeePython({}, undefined), undefined);
  assert.deepEqual(adapterCommand(['py', '-3.12']), { command: 'py', args: ['-3.12', '-m', 'debugpy.adapter'] });
  assert.deepEqual(installCommand(['/venv/bin/python']).args.slice(0, 3), ['-m', 'pip', 'install']);
  assert.deepEqual(splitArgs(`a 'b c' "d \\"e\\""`), ['a', 'b c', 'd "e"']);
});

test('package.json declares the devflow-python debugger, its snippets and the command', () => {
  const dbg = manifest.contributes.debuggers.find((d: { type: string }) => d.type === DEBUG_TYPE);
  assert.ok(dbg, 'a devflow-python debugger');
  assert.notEqual(DEBUG_TYPE, 'debugpy', 'never the type of Microsoft\'s extension');
  const props = dbg.configurationAttributes.launch.properties;
  for (const k of ['program', 'module', 'args', 'python', 'cwd', 'env', 'justMyCode']) assert.ok(props[k], k);
  assert.deepEqual(dbg.initialConfigurations, INITIAL_CONFIGURATIONS);
  assert.ok(dbg.configurationSnippets.length >= 2);
  for (const s of dbg.configurationSnippets) assert.equal(s.body.type, DEBUG_TYPE);
  assert.ok(manifest.contributes.commands.some((c: { command: string; title: string }) => c.command === DEBUG_CURRENT_FILE_COMMAND && c.title === 'Debug Current File'));
  assert.ok(manifest.activationEvents.includes(`onDebugResolve:${DEBUG_TYPE}`));
  assert.ok(manifest.activationEvents.includes('onDebugResolve:debugpy'), 'debugpy sessions are still tracked');
});
