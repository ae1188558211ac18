// Device Placement: the tracker core replays a DAP exchange recorded from a real debugpy session
// (tests/fixtures/dap/, written by tests/python/runtime/test_dap_session.py), the report/message
// helpers, and the webview HTML. Pure modules only: no `vscode` at runtime.

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { escapeHtml, renderModuleTreeSvg, renderPlacementHtml } from '../placement/html';
import { PROBE_DIGEST, PROBE_EXPRESSION } from '../placement/probeExpression.generated';
import { culpritDiagnostic, deviceColor, deviceMessageFamily, formatBytes, parseReport, PlacementReport } from '../placement/report';
import { DebugSessionLike, PlacementSink, PlacementTrackerCore, ReportContext } from '../placement/trackerCore';

const ROOT = path.join(__dirname, '..', '..', '..');
const FIXTURE = path.join(ROOT, 'tests', 'fixtures', 'dap', 'uncaught_head_on_cpu.json');

interface Entry {
  dir: 'send' | 'recv';
  msg: { seq: number; type: string; command?: string; event?: string; request_seq?: number; arguments?: Record<string, unknown>; body?: Record<string, unknown> };
}

const transcript: Entry[] = JSON.parse(fs.readFileSync(FIXTURE, 'utf8'));

/** Answers customRequest from the recording: the response to the recorded request of that command. */
class RecordedSession implements DebugSessionLike {
  readonly id = 'session-1';
  readonly name = 'Python: train.py';
  requests: { command: string; args: Record<string, unknown> }[] = [];
  constructor(private readonly entries: Entry[], private readonly fail?: string) {}
  async customRequest(command: string, args?: unknown) {
    this.requests.push({ command, args: args as Record<string, unknown> });
    if (command === this.fail) throw new Error(`${command} failed`);
    const req = this.entries.find((e) => e.dir === 'send' && e.msg.command === command);
    assert.ok(req, `no recorded ${command} request`);
    const resp = this.entries.find((e) => e.dir === 'recv' && e.msg.type === 'response' && e.msg.request_seq === req.msg.seq);
    assert.ok(resp, `no recorded ${command} response`);
    return resp.msg.body;
  }
}

class Sink implements PlacementSink {
  reports: { report: PlacementReport; ctx: ReportContext }[] = [];
  logs: string[] = [];
  onReport(report: PlacementReport, ctx: ReportContext) {
    this.reports.push({ report, ctx });
  }
  log(level: string, message: string) {
    this.logs.push(`${level}: ${message}`);
  }
}

async function replay(core: PlacementTrackerCore, entries: Entry[]) {
  for (const e of entries) {
    if (e.dir === 'recv' && e.msg.type === 'event') await core.onDidSendMessage(e.msg);
  }
}

test('the recording is a real debugpy session that stopped on a cross-device exception', () => {
  const stopped = transcript.find((e) => e.msg.event === 'stopped');
  assert.equal(stopped?.msg.body?.reason, 'exception');
  const ev = transcript.find((e) => e.dir === 'send' && e.msg.command === 'evaluate');
  assert.match(String(ev?.msg.arguments?.expression), /^<devflow probe expression [0-9a-f]{16}>$/);
  assert.deepEqual(ev?.msg.arguments?.format, { rawString: true });
  assert.ok(transcript.some((e) => e.msg.event === 'terminated'), 'the session ended normally');
});

test('tracker replays the recorded exchange and delivers the report', async () => {
  const session = new RecordedSession(transcript);
  const sink = new Sink();
  await replay(new PlacementTrackerCore(session, sink), transcript);
  assert.deepEqual(session.requests.map((r) => r.command), ['exceptionInfo', 'stackTrace', 'evaluate']);
  const recordedTop = (transcript.find((e) => e.dir === 'recv' && e.msg.command === 'stackTrace')!.msg.body!.stackFrames as { id: number }[])[0];
  const evaluate = session.requests[2].args;
  // The very expression the Python end-to-end test evaluates (one source of truth).
  assert.equal(evaluate.expression, PROBE_EXPRESSION);
  assert.equal(evaluate.context, 'repl');
  assert.deepEqual(evaluate.format, { rawString: true });
  assert.equal(evaluate.frameId, recordedTop.id);
  assert.equal(sink.reports.length, 1);
  const { report, ctx } = sink.reports[0];
  assert.equal(ctx.family, 'meta-expected-device');
  assert.equal(report.culprit?.module, 'model.out_head');
  assert.equal(report.culprit?.device, 'cpu');
  assert.equal(report.culprit?.line, 12);
  const diag = culpritDiagnostic(report)!;
  assert.equal(diag.line, 12);
  assert.match(diag.message, /model\.out_head/);
  assert.match(diag.message, /Tensor on device cpu is not on the expected device meta!/);
});

test('the recorded exception stops again in outer frames (raised filter): probed once', async () => {
  const session = new RecordedSession(transcript);
  const sink = new Sink();
  const core = new PlacementTrackerCore(session, sink);
  const stopped = transcript.find((e) => e.msg.event === 'stopped')!.msg;
  await core.onDidSendMessage(stopped);
  await core.onDidSendMessage(stopped);
  assert.equal(sink.reports.length, 1);
  await core.onDidSendMessage({ type: 'event', event: 'terminated', seq: 99 });
  await core.onDidSendMessage(stopped);
  assert.equal(sink.reports.length, 2, 'a new run is probed again');
});

test('other exceptions and other stops evaluate nothing', async () => {
  const entries: Entry[] = transcript.map((e) =>
    e.msg.command === 'exceptionInfo' && e.dir === 'recv'
      ? { ...e, msg: { ...e.msg, body: { exceptionId: 'ValueError', description: 'shapes (4,8) and (4,2) not aligned' } } }
      : e,
  );
  const session = new RecordedSession(entries);
  const sink = new Sink();
  const core = new PlacementTrackerCore(session, sink);
  await replay(core, entries);
  assert.deepEqual(session.requests.map((r) => r.command), ['exceptionInfo']);
  assert.equal(sink.reports.length, 0);
  await core.onDidSendMessage({ type: 'event', event: 'stopped', body: { reason: 'breakpoint', threadId: 1 } });
  assert.equal(session.requests.length, 1);
});

test('a report the probe does not consider cross-device is not shown', async () => {
  const entries: Entry[] = transcript.map((e) => {
    if (e.dir === 'recv' && e.msg.command === 'evaluate') {
      const rep = JSON.parse(String(e.msg.body!.result));
      rep.error.cross_device = false;
      return { ...e, msg: { ...e.msg, body: { ...e.msg.body, result: JSON.stringify(rep) } } };
    }
    return e;
  });
  const sink = new Sink();
  await replay(new PlacementTrackerCore(new RecordedSession(entries), sink), entries);
  assert.equal(sink.reports.length, 0);
  assert.ok(sink.logs.some((l) => l.includes('is not a cross-device error')));
});

test('failures are logged, never thrown', async () => {
  const session = new RecordedSession(transcript, 'evaluate');
  const sink = new Sink();
  await replay(new PlacementTrackerCore(session, sink), transcript);
  assert.equal(sink.reports.length, 0);
  assert.ok(sink.logs.some((l) => l.startsWith('error:') && l.includes('evaluate failed')));
});

test('a stuck adapter times out', async () => {
  const session: DebugSessionLike = { id: 's', name: 's', customRequest: () => new Promise(() => undefined) };
  const sink = new Sink();
  await new PlacementTrackerCore(session, sink, 20).onDidSendMessage({ type: 'event', event: 'stopped', body: { reason: 'exception', threadId: 1 } });
  assert.ok(sink.logs.some((l) => l.includes('timed out')));
});

test('message families match messages.py (generated patterns)', () => {
  assert.match(PROBE_DIGEST, /^[0-9a-f]{16}$/);
  const cases: [string, string | undefined][] = [
    ['RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!', 'same-device'],
    ['Expected all tensors to be on the same device, but got weight is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)', 'same-device-named'],
    ['RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same', 'conv-input-weight-type'],
    ['indices should be either on cpu or on the same device as the indexed tensor (cpu)', 'index-device'],
    ['module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu', 'dataparallel-module-device'],
    ['Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.', 'deserialize-cuda'],
    ['ValueError: too many values to unpack', undefined],
  ];
  for (const [text, family] of cases) assert.equal(deviceMessageFamily(text), family, text);
});

test('every message in ../shared/corpus/error_messages.txt is recognised by the JS patterns too', (t) => {
  const file = path.join(process.env.DEVFLOW_SHARED ?? path.join(ROOT, '..', 'shared'), 'corpus', 'error_messages.txt');
  if (!fs.existsSync(file)) {
    t.skip(`shared corpus not found at ${file}`);
    return;
  }
  const lines = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => l.split('\t')[0].replace(/<dev2>/g, 'cpu').replace(/<dev>/g, 'cuda:0').replace(/<arg>/g, 'mat2').replace(/<op>/g, 'wrapper_CUDA_mm'));
  assert.ok(lines.length >= 45);
  assert.deepEqual(lines.filter((l) => !deviceMessageFamily(l)), []);
});

test('parseReport accepts raw and repr()d JSON and rejects anything else', () => {
  const raw = JSON.stringify({ version: 1, tool: 'devflow' });
  assert.equal(parseReport(raw).tool, 'devflow');
  assert.equal(parseReport(`'${raw}'`).tool, 'devflow');
  assert.throws(() => parseReport('{"a": 1}'), /not a devflow placement report/);
  assert.throws(() => parseReport('<html>'), /did not return JSON/);
});

test('webview HTML: picture first, culprit highlighted, tables with source links, escaped', () => {
  const ev = transcript.find((e) => e.dir === 'recv' && e.msg.command === 'evaluate')!;
  const report = parseReport(String(ev.msg.body!.result));
  const html = renderPlacementHtml(report, { nonce: 'N0NCE', cspSource: 'vscode-resource:' });
  const svgAt = html.indexOf('<svg');
  assert.ok(svgAt > 0 && svgAt < html.indexOf('<table'), 'the picture comes before the tables');
  assert.match(html, /<div class="node culprit" data-module="model.out_head"/);
  assert.match(html, /class="src" data-file="[^"]+train\.py" data-line="12"/);
  assert.match(html, /<h3>.*cpu · \d+ tensors/);
  assert.match(html, /<h3>.*meta · \d+ tensors/);
  assert.match(html, /script-src 'nonce-N0NCE'/);
  assert.ok(!/<script(?! nonce="N0NCE")/.test(html), 'every script carries the nonce');
  assert.ok(!/ style="/.test(html), 'no inline style attributes (the CSP blocks them)');
  assert.match(html, /\.dev-0\{background:#[0-9a-f]{6}\}/);
  const evil: PlacementReport = {
    ...report,
    modules: [{ name: '<img onerror=x>', short: '<b>', type: 'X', devices: { cpu: 1 }, own_devices: {}, split: false, children: [] }],
  };
  const svg = renderModuleTreeSvg(evil);
  assert.ok(!svg.includes('<img') && svg.includes('&lt;img onerror=x&gt;'));
  assert.equal(escapeHtml(`"'&`), '&quot;&#39;&amp;');
});

test('big trees fold uniform subtrees and stay bounded', () => {
  const leaf = (i: number) => ({ name: `m.layers.${i}`, short: String(i), type: 'Linear', devices: { 'cuda:0': 10 }, own_devices: { 'cuda:0': 10 }, split: false, children: [] });
  const layers = { name: 'm.layers', short: 'layers', type: 'ModuleList', devices: { 'cuda:0': 5000 }, own_devices: {}, split: false, children: Array.from({ length: 500 }, (_, i) => leaf(i)) };
  const head = { name: 'm.head', short: 'head', type: 'Linear', devices: { cpu: 10 }, own_devices: { cpu: 10 }, split: false, children: [] };
  const report: PlacementReport = {
    version: 1, tool: 'devflow',
    modules: [{ name: 'm', short: 'm', type: 'Net', devices: { 'cuda:0': 5000, cpu: 10 }, own_devices: {}, split: true, children: [layers, head] }],
    culprit: { module: 'm.head', summary: 's', tensors: [], family: null, op: null, argument: null, device: 'cpu', expected_device: 'cuda:0', optimizer: null, file: null, line: null, function: null, code: null, hint: null },
  };
  const svg = renderModuleTreeSvg(report);
  assert.match(svg, /layers \(ModuleList\)  \+500 submodules/);
  assert.match(svg, /data-module="m.head"/);
  assert.equal((svg.match(/<div class="node/g) ?? []).length, 3);
});

test('the module tree fits a side column: no fixed pixel width, bars stretch, tables scroll in their box', () => {
  const ev = transcript.find((e) => e.dir === 'recv' && e.msg.command === 'evaluate')!;
  const report = parseReport(String(ev.msg.body!.result));
  const html = renderPlacementHtml(report, { nonce: 'N', cspSource: 'vscode-resource:' });
  assert.ok(!/<(svg|div|table|body)[^>]*width="\d{3,}"/.test(html), 'no element with a fixed width in pixels (bar segments are viewBox units)');
  assert.ok(!/(?<![-\w])width:\s*\d{3,}px/.test(html), 'no CSS width in hundreds of pixels');
  for (const m of html.matchAll(/<svg class="bar"[^>]*>/g)) {
    assert.match(m[0], /viewBox="0 0 1000 14"/);
    assert.match(m[0], /preserveAspectRatio="none"/);
    assert.match(m[0], /width="100%"/);
  }
  assert.match(html, /grid-template-columns:minmax\(0,1fr\)/);
  assert.match(html, /@media \(max-width:420px\)/);
  assert.ok(html.split('<table').length - 1 === html.split('<div class="table-box"><table').length - 1, 'every table sits in a scroll box');
  // segments never run past the bar
  for (const m of html.matchAll(/<svg class="bar"[^>]*>(.*?)<\/svg>/g)) {
    let end = 0;
    for (const r of m[1].matchAll(/<rect x="(\d+)" y="0" width="(\d+)"/g)) end = Math.max(end, Number(r[1]) + Number(r[2]));
    assert.ok(end <= 1000, `bar ends at ${end}`);
  }
});

test('culprit card shows where the odd object was set and why that device is the intended one', () => {
  const report: PlacementReport = {
    version: 1, tool: 'devflow', modules: [],
    culprit: {
      module: 'model.out_head', summary: 'model.out_head (parameter) is on cpu', tensors: [], family: 'same-device-named', op: 'wrapper_CUDA_addmm', argument: 'mat1',
      device: 'cpu', expected_device: 'cuda:0', optimizer: null, file: '/w/train.py', line: 23, function: 'forward', code: 'return self.out_head(h)', hint: null,
      intended_by: "97% of the model's parameters are on cuda:0",
      created: { file: '/w/train.py', line: 41, code: 'model.out_head = torch.nn.Linear(768, 2)' },
    },
  };
  const html = renderPlacementHtml(report, { nonce: 'N', cspSource: 'x' });
  assert.match(html, /set at <a href="#" class="src" data-file="\/w\/train.py" data-line="41"/);
  assert.match(html, /97% of the model&#39;s parameters are on cuda:0/);
  assert.match(html, /op wrapper_CUDA_addmm, argument mat1/);
});

test('device colours and sizes', () => {
  assert.notEqual(deviceColor('cpu'), deviceColor('cuda:0'));
  assert.notEqual(deviceColor('cuda:0'), deviceColor('cuda:1'));
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(3 * 1024 * 1024), '3.0 MiB');
});
