// The dry run's JSON report -> diagnostics, and how findings follow edits. Pure module only.

import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyChange, byPath, DRYRUN_SOURCE, dryRunArgs, parseDryRunReport } from '../dryrun/findings';

// The shape `devflow dryrun --format json` writes (server/devflow/dryrun/report.py).
const REPORT = {
  tool: 'devflow-dryrun',
  version: '0.1.0',
  status: { state: 'stopped', reason: 'max-steps: stopped after 2 optimizer steps', steps: 2, elapsed_s: 1.2 },
  diagnostics: [
    {
      path: '/w/train.py', line: 10, column: 1, end_line: 10, end_column: null, code: 'DEV901', severity: 'error',
      message: 'Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!',
      url: 'https://github.com/devflow-dev/devflow/blob/main/docs/rules/DEV901.md', count: 3, op: 'aten.add',
      operands: [], stack: [],
      related: [
        { path: '/w/train.py', line: 3, column: 1, message: 'self last moved here (now on cuda:0)' },
        { path: '/w/model.py', line: 7, column: 1, message: 'other created here on cpu' },
        { path: '/w/model.py', line: 0, column: 1, message: 'bad line is dropped' },
      ],
      static: { code: 'DEV201', message: '`bias` is on cpu', line: 7, fix: { title: 'add device=x.device', applicability: 'unsafe', edits: [] } },
      fix: null,
    },
    {
      path: '/w/train.py', line: 31, code: 'DEV906', severity: 'warning', message: 'checkpoint saved on cuda:0', count: 1,
      related: [],
    },
    { path: '/w/model.py', line: 12, code: 'DEV902', severity: 'error', message: 'indices should be either on cpu or on the same device as the indexed tensor (cpu)', count: 1 },
    { path: '/w/model.py', line: 'x', code: 'DEV901', message: 'malformed: skipped' },
  ],
  summary: { findings: 3, events: 5 },
};

test('parses findings with 0-based lines, counts, related locations and the static explanation', () => {
  const r = parseDryRunReport(JSON.stringify(REPORT));
  assert.equal(r.diagnostics.length, 3);
  const [first, second, third] = r.diagnostics;
  assert.equal(first.line, 9);
  assert.equal(first.code, 'DEV901');
  assert.equal(first.severity, 'error');
  assert.equal(first.count, 3);
  assert.match(first.message, /cuda:0 and cpu! \(3 times\)/);
  assert.match(first.message, /Explained by DEV201: `bias` is on cpu Fix: add device=x\.device/);
  assert.deepEqual(first.related, [
    { path: '/w/train.py', line: 2, message: 'self last moved here (now on cuda:0)' },
    { path: '/w/model.py', line: 6, message: 'other created here on cpu' },
  ]);
  assert.equal(first.url, REPORT.diagnostics[0].url);
  assert.equal(second.severity, 'warning');
  assert.equal(second.line, 30);
  assert.equal(third.path, '/w/model.py');
  assert.equal(r.status.state, 'stopped');
  assert.equal(r.status.steps, 2);
  assert.equal(r.status.summary, '3 device mixes; stopped early (max-steps: stopped after 2 optimizer steps); 2 optimizer steps');
  assert.equal(DRYRUN_SOURCE, 'devflow-dryrun');
});

test('a clean run and an early end are summarised', () => {
  const clean = parseDryRunReport(JSON.stringify({ tool: 'devflow-dryrun', diagnostics: [], status: { state: 'finished', steps: 0 } }));
  assert.equal(clean.diagnostics.length, 0);
  assert.equal(clean.status.summary, 'no device mix; the script ran to its end; 0 optimizer steps');
  const crashed = parseDryRunReport(JSON.stringify({ tool: 'devflow-dryrun', diagnostics: [], status: { state: 'error', exception: 'ValueError: boom', steps: 1 } }));
  assert.equal(crashed.status.summary, 'no device mix; the script ended early: ValueError: boom; 1 optimizer step');
});

test('rejects what is not a dry-run report', () => {
  assert.throws(() => parseDryRunReport('{"tool": "devflow", "diagnostics": []}'), /not a devflow dry-run report/);
  assert.throws(() => parseDryRunReport('not json'));
});

test('groups by file', () => {
  const r = parseDryRunReport(JSON.stringify(REPORT));
  const groups = byPath(r.diagnostics);
  assert.deepEqual([...groups.keys()], ['/w/train.py', '/w/model.py']);
  assert.equal(groups.get('/w/train.py')?.length, 2);
});

test('an edit of a finding line drops it; lines inserted above shift the rest', () => {
  const diags = parseDryRunReport(JSON.stringify(REPORT)).diagnostics.filter((d) => d.path === '/w/train.py');
  // typing within line 10 (0-based 9): that finding goes, line 31 stays
  const afterType = applyChange(diags, { startLine: 9, endLine: 9, newLineCount: 1 });
  assert.deepEqual(afterType.map((d) => d.line), [30]);
  // two lines inserted at line 0: both move down by two
  const afterInsert = applyChange(diags, { startLine: 0, endLine: 0, newLineCount: 3 });
  assert.deepEqual(afterInsert.map((d) => d.line), [11, 32]);
  // lines 3-5 deleted (replaced by one line): the findings below move up by two
  const afterDelete = applyChange(diags, { startLine: 2, endLine: 4, newLineCount: 1 });
  assert.deepEqual(afterDelete.map((d) => d.line), [7, 28]);
});

test('the command line writes a JSON report to a file', () => {
  assert.deepEqual(dryRunArgs('/w/train.py', '/tmp/o.json'), ['-m', 'devflow', 'dryrun', '--format', 'json', '--output-file', '/tmp/o.json', '/w/train.py']);
});

test('package.json declares the command (trusted workspaces only) and its task type', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const fs = require('node:fs') as typeof import('node:fs');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const path = require('node:path') as typeof import('node:path');
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
  const cmd = manifest.contributes.commands.find((c: { command: string }) => c.command === 'devflow.dryRunCurrentFile');
  assert.equal(`${cmd.category}: ${cmd.title}`, 'Devflow: Dry Run Current File');
  assert.equal(cmd.enablement, 'isWorkspaceTrusted');
  assert.ok(manifest.contributes.taskDefinitions.some((t: { type: string }) => t.type === 'devflow-dryrun'));
});
