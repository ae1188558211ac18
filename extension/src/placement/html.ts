// The "Device Placement" webview's HTML: the module tree coloured by device first (SVG, culprit
// highlighted), then the culprit, optimizers and tables of tensors by device with links to source
// lines (clicking posts {type: 'open', file, line} to the extension). Pure: no `vscode` import.

import { deviceColor, formatBytes, FrameInfo, ModuleNode, PlacementReport, TensorEntry } from './report';

export interface HtmlOptions {
  nonce: string;
  cspSource: string;
  /** How many tensors per device table (the report itself caps at 200). */
  maxRows?: number;
}

const MAX_TREE_ROWS = 160;

export function escapeHtml(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function fileLink(file: string | null | undefined, line: number | null | undefined, label?: string): string {
  if (!file || !line) return escapeHtml(label ?? '');
  const base = file.split(/[\\/]/).pop() ?? file;
  const text = label ?? `${base}:${line}`;
  return `<a href="#" class="src" data-file="${escapeHtml(file)}" data-line="${line}" title="${escapeHtml(file)}:${line}">${escapeHtml(text)}</a>`;
}

function shapeText(t: TensorEntry): string {
  return t.shape.length ? t.shape.join('×') : 'scalar';
}

interface Row {
  node: ModuleNode;
  depth: number;
  hidden: number;
}

/** Rows to draw: split modules and the path to the culprit are expanded; uniform subtrees fold. */
function treeRows(roots: ModuleNode[], culpritModule: string | null): Row[] {
  const rows: Row[] = [];
  const countAll = (n: ModuleNode): number => n.children.reduce((a, k) => a + 1 + countAll(k), 0);
  const onCulpritPath = (n: ModuleNode) =>
    !!culpritModule && (culpritModule === n.name || culpritModule.startsWith(n.name + '.') || culpritModule.startsWith(n.name + '['));
  const walk = (n: ModuleNode, depth: number) => {
    if (rows.length >= MAX_TREE_ROWS) return;
    const expand = depth === 0 || n.split || onCulpritPath(n);
    rows.push({ node: n, depth, hidden: expand ? 0 : countAll(n) });
    if (!expand) return;
    for (const k of n.children) walk(k, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  return rows;
}

const MAX_DEPTH_CLASS = 24;
/** Bar segments are drawn in a 1000-unit viewBox stretched to the row's width (preserveAspectRatio
 * none): the bars follow the panel's width, however narrow the side column it sits in. */
const BAR_UNITS = 1000;

/** The module tree coloured by device: one row per module, its label (indented by depth, wrapping
 * in narrow panels) and a bar whose segments are the share of its elements on each device. HTML
 * rows and one small SVG per bar, so the picture fits any panel width (never a fixed 760 px). */
export function renderModuleTreeSvg(report: PlacementReport): string {
  const roots = report.modules ?? [];
  if (!roots.length) return '<p class="muted">No nn.Module is alive in the failing program.</p>';
  const culpritModule = report.culprit?.module ?? null;
  const rows = treeRows(roots, culpritModule);
  const parts: string[] = [];
  for (const row of rows) {
    const n = row.node;
    const isCulprit = culpritModule === n.name;
    const total = Object.values(n.devices).reduce((a, b) => a + b, 0);
    const label = `${n.short} (${n.type})${row.hidden ? `  +${row.hidden} submodules` : ''}${n.split ? '  ⚠ split' : ''}`;
    const title = `${n.name}: ${Object.entries(n.devices).map(([d, c]) => `${d} ${c.toLocaleString()}`).join(', ') || 'no tensors'}`;
    const segs: string[] = [];
    if (total === 0) {
      segs.push(`<rect x="0" y="0" width="${BAR_UNITS}" height="14" class="empty"/>`);
    } else {
      let x = 0;
      for (const [dev, count] of Object.entries(n.devices).sort((a, b) => b[1] - a[1])) {
        const w = Math.max(4, Math.round((BAR_UNITS * count) / total));
        segs.push(`<rect x="${x}" y="0" width="${Math.min(w, BAR_UNITS - x)}" height="14" fill="${deviceColor(dev)}"><title>${escapeHtml(dev)}: ${count.toLocaleString()} elements</title></rect>`);
        x += w;
        if (x >= BAR_UNITS) break;
      }
    }
    parts.push(
      `<div class="node${isCulprit ? ' culprit' : ''}${n.split ? ' split' : ''}" data-module="${escapeHtml(n.name)}" title="${escapeHtml(title)}">` +
        `<span class="label depth-${Math.min(row.depth, MAX_DEPTH_CLASS)}">${escapeHtml(label)}</span>` +
        `<svg class="bar" role="img" aria-label="${escapeHtml(title)}" viewBox="0 0 ${BAR_UNITS} 14" preserveAspectRatio="none" width="100%" height="14">${segs.join('')}</svg>` +
        `</div>`,
    );
  }
  return `<div class="tree" role="list" aria-label="Module tree coloured by device">${parts.join('')}</div>`;
}

/** Indentation per depth as classes: the CSP blocks inline style attributes. */
function depthCss(): string {
  const out: string[] = [];
  for (let d = 0; d <= MAX_DEPTH_CLASS; d++) out.push(`.tree .depth-${d}{padding-left:${(d * 0.9).toFixed(1)}em}`);
  return out.join('');
}

function allDevices(report: PlacementReport): string[] {
  const seen = new Set(Object.keys(report.devices ?? {}));
  const walk = (n: ModuleNode) => {
    Object.keys(n.devices).forEach((d) => seen.add(d));
    n.children.forEach(walk);
  };
  (report.modules ?? []).forEach(walk);
  return [...seen];
}

/** Swatch colours as classes: the CSP (nonce'd <style>) blocks inline style attributes. */
function swatchCss(devices: string[]): string {
  return devices.map((d, i) => `.dev-${i}{background:${deviceColor(d)}}`).join('\n');
}

function swatch(devices: string[], d: string): string {
  return `<i class="swatch dev-${Math.max(0, devices.indexOf(d))}"></i>`;
}

function legend(report: PlacementReport, devices: string[]): string {
  const devs = Object.keys(report.devices ?? {});
  return `<div class="legend">${devs.map((d) => `<span>${swatch(devices, d)}${escapeHtml(d)}</span>`).join('')}</div>`;
}

function frameFor(report: PlacementReport, fn: string | undefined): FrameInfo | undefined {
  if (!fn) return undefined;
  const frames = report.frames ?? [];
  for (let i = frames.length - 1; i >= 0; i--) if (frames[i].function === fn) return frames[i];
  return undefined;
}

function tensorTable(report: PlacementReport, rows: TensorEntry[], culpritNames: Set<string>): string {
  const body = rows
    .map((t) => {
      const fr = frameFor(report, t.frame);
      const cls = t.name && culpritNames.has(t.name) ? ' class="culprit-row"' : '';
      const aka = t.aliases?.length ? ` <span class="muted">(also ${escapeHtml(t.aliases.join(', '))})</span>` : '';
      return `<tr${cls}><td><code>${escapeHtml(t.name ?? '(unnamed)')}</code>${aka}</td><td>${escapeHtml(shapeText(t))}</td><td>${escapeHtml(t.dtype)}</td><td>${escapeHtml(t.origin)}</td><td class="num">${escapeHtml(formatBytes(t.bytes))}</td><td>${fr ? fileLink(fr.file, fr.line, `${t.frame}()`) : escapeHtml(t.frame ?? '')}</td></tr>`;
    })
    .join('');
  return `<div class="table-box"><table><thead><tr><th>Name</th><th>Shape</th><th>Dtype</th><th>Kind</th><th>Size</th><th>Where</th></tr></thead><tbody>${body}</tbody></table></div>`;
}

export function renderPlacementHtml(report: PlacementReport, opts: HtmlOptions): string {
  const maxRows = opts.maxRows ?? 100;
  const c = report.culprit;
  const err = report.error;
  const culpritNames = new Set((c?.tensors ?? []).map((t) => t.name ?? '').filter(Boolean));
  const sections: string[] = [];
  const devicesSeen = allDevices(report);

  const rank = report.rank ? ` · rank ${report.rank.rank} of ${report.rank.world_size}` : '';
  sections.push(`<h1>Device Placement${escapeHtml(rank)}</h1>`);
  if (report.probe_error) {
    sections.push(`<p class="error">The probe failed in the debuggee: ${escapeHtml(report.probe_error)}</p>`);
  }
  // The picture first.
  sections.push(`<section><h2>Modules by device</h2>${legend(report, devicesSeen)}${renderModuleTreeSvg(report)}</section>`);

  if (c) {
    const list = c.tensors
      .slice(0, 8)
      .map((t) => `<li><code>${escapeHtml(t.name ?? '(unnamed)')}</code> on <b>${escapeHtml(t.device)}</b> · ${escapeHtml(shapeText(t))} ${escapeHtml(t.dtype)} · ${escapeHtml(t.origin)}</li>`)
      .join('');
    sections.push(
      `<section class="culprit-card"><h2>Culprit</h2><p class="summary">${escapeHtml(c.summary)}</p>` +
        (c.file ? `<p>${fileLink(c.file, c.line)} in <code>${escapeHtml(c.function ?? '')}</code>: <code>${escapeHtml(c.code ?? '')}</code></p>` : '') +
        (c.created ? `<p class="created">set at ${fileLink(c.created.file, c.created.line)}: <code>${escapeHtml(c.created.code)}</code></p>` : '') +
        (c.intended_by ? `<p class="muted intended">${escapeHtml(c.intended_by)}</p>` : '') +
        (c.op || c.argument ? `<p class="muted">op ${escapeHtml(c.op ?? '?')}${c.argument ? `, argument ${escapeHtml(c.argument)}` : ''}</p>` : '') +
        (list ? `<ul>${list}</ul>` : '') +
        (c.hint ? `<p class="hint">${escapeHtml(c.hint)}</p>` : '') +
        `</section>`,
    );
  }
  if (err) {
    sections.push(`<details><summary>${escapeHtml(err.type)}: ${escapeHtml(err.message.split('\n')[0].slice(0, 300))}</summary><pre>${escapeHtml(err.message)}</pre></details>`);
  }
  for (const o of report.optimizers ?? []) {
    const bad = o.mismatches
      .slice(0, 20)
      .map((m) => `<tr class="culprit-row"><td><code>${escapeHtml(m.name)}</code></td><td>${escapeHtml(m.device)}</td><td>${escapeHtml(m.param_device)}</td></tr>`)
      .join('');
    sections.push(
      `<section><h2>Optimizer <code>${escapeHtml(o.name)}</code> (${escapeHtml(o.type)})</h2>` +
        `<p>parameters on ${escapeHtml(devList(o.param_devices))}; state on ${escapeHtml(devList(o.state_devices))}</p>` +
        (bad ? `<div class="table-box"><table><thead><tr><th>State tensor</th><th>Device</th><th>Its parameter's device</th></tr></thead><tbody>${bad}</tbody></table></div>` : '') +
        (o.mismatch_count > 20 ? `<p class="muted">… ${o.mismatch_count - 20} more</p>` : '') +
        `</section>`,
    );
  }
  const devices = Object.entries(report.devices ?? {});
  sections.push('<section><h2>Tensors by device</h2>');
  for (const [dev, g] of devices) {
    const more = g.count - Math.min(g.tensors.length, maxRows);
    sections.push(
      `<h3>${swatch(devicesSeen, dev)}${escapeHtml(dev)} · ${g.count.toLocaleString()} tensors · ${escapeHtml(formatBytes(g.bytes))}</h3>` +
        tensorTable(report, g.tensors.slice(0, maxRows), culpritNames) +
        (more > 0 ? `<p class="muted">… ${more.toLocaleString()} more (counted, not listed)</p>` : ''),
    );
  }
  if (!devices.length) sections.push('<p class="muted">No tensors.</p>');
  sections.push('</section>');
  const frames = report.frames ?? [];
  if (frames.length) {
    sections.push(
      `<section><h2>Your frames (innermost last)</h2><ol>${frames
        .map((f) => `<li>${fileLink(f.file, f.line)} <code>${escapeHtml(f.function)}</code> <code class="muted">${escapeHtml(f.code ?? '')}</code></li>`)
        .join('')}</ol></section>`,
    );
  }
  for (const n of report.notes ?? []) sections.push(`<p class="muted">${escapeHtml(n)}</p>`);
  if (report.truncated) sections.push('<p class="muted">Report truncated (name cap or time budget): counts are complete, lists are not.</p>');

  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${opts.cspSource} 'nonce-${opts.nonce}'; script-src 'nonce-${opts.nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Device Placement</title>
<style nonce="${opts.nonce}">${CSS}${depthCss()}${swatchCss(devicesSeen)}</style></head><body>${sections.join('\n')}
<script nonce="${opts.nonce}">${SCRIPT}</script></body></html>`;
}

function devList(d: Record<string, number>): string {
  const e = Object.entries(d);
  return e.length ? e.map(([k, v]) => `${k} (${v})`).join(', ') : 'nothing';
}

const CSS = `
body{font-family:var(--vscode-font-family);font-size:var(--vscode-font-size);color:var(--vscode-foreground);padding:0 clamp(6px,3vw,16px) 24px;overflow-wrap:anywhere}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.4em} h3{font-size:1em}
.muted{opacity:.7} .error{color:var(--vscode-errorForeground)}
.tree{display:flex;flex-direction:column;gap:2px;max-width:100%}
.tree .node{display:grid;grid-template-columns:minmax(0,1fr) minmax(60px,38%);align-items:center;gap:8px;padding:1px 4px;border:2px solid transparent;border-radius:3px}
.tree .label{font-family:var(--vscode-editor-font-family);font-size:12px;overflow-wrap:anywhere;min-width:0}
.tree svg.bar{display:block;width:100%;height:14px}
.tree rect.empty{fill:none;stroke:var(--vscode-panel-border);stroke-width:2}
.tree .node.culprit{border-color:var(--vscode-errorForeground,#e51400)}
.tree .node.culprit .label{font-weight:bold;color:var(--vscode-errorForeground,#e51400)}
@media (max-width:420px){.tree .node{grid-template-columns:minmax(0,1fr)}.tree svg.bar{padding-left:.9em}}
.table-box{max-width:100%;overflow-x:auto}
.legend span{margin-right:14px} .swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;border-radius:2px}
.culprit-card{border-left:4px solid var(--vscode-errorForeground,#e51400);padding:2px 12px;background:var(--vscode-editor-inactiveSelectionBackground)}
.summary{font-weight:bold} .hint{font-style:italic}
table{border-collapse:collapse;margin:4px 0 12px;max-width:100%} td,th{padding:2px 8px;text-align:left;border-bottom:1px solid var(--vscode-panel-border);overflow-wrap:anywhere;min-width:3em}
td code{overflow-wrap:anywhere;white-space:normal}
td.num{text-align:right} tr.culprit-row td{color:var(--vscode-errorForeground,#e51400);font-weight:bold}
a.src{color:var(--vscode-textLink-foreground);cursor:pointer}
`;

const SCRIPT = `
const vscode = acquireVsCodeApi();
document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a.src');
  if (!a) return;
  e.preventDefault();
  vscode.postMessage({ type: 'open', file: a.dataset.file, line: Number(a.dataset.line) });
});
`;
