// The e2e test's workspace: the canonical DEV101 snippet (opened and fixed in the editor), a copy
// that is never opened (found by "Check Devices"), and the repository's samples.

import * as fs from 'node:fs';
import * as path from 'node:path';

export const CANONICAL = fs.readFileSync(new URL('../fixtures/canonical.py', import.meta.url), 'utf8');

/** The canonical snippet split over two notebook cells: the move in one, the new head in the next. */
export const NOTEBOOK_CELLS = [
  CANONICAL.split('\n').slice(0, 6).join('\n'),
  'model.head = nn.Linear(8, 2)\ny = model(torch.randn(4, 8, device=device))',
];

function notebook(cells) {
  return JSON.stringify({
    cells: cells.map((source) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: source.split(/(?<=\n)/) })),
    metadata: { kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' }, language_info: { name: 'python' } },
    nbformat: 4,
    nbformat_minor: 5,
  }, null, 1);
}

export function writeWorkspace(dir, repo) {
  fs.writeFileSync(path.join(dir, 'cells.ipynb'), notebook(NOTEBOOK_CELLS));
  fs.mkdirSync(path.join(dir, 'samples'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'canonical.py'), CANONICAL);
  fs.writeFileSync(path.join(dir, 'never_opened.py'), CANONICAL);
  const samples = path.join(repo, 'samples');
  for (const name of fs.existsSync(samples) ? fs.readdirSync(samples) : []) {
    if (name.endsWith('.py') || name.endsWith('.ipynb')) fs.copyFileSync(path.join(samples, name), path.join(dir, 'samples', name));
  }
}
