// The environment of a dry run: it runs the user's own script (the user asked for it, in a trusted
// workspace), with devflow importable: the bundled copy on PYTHONPATH when that is the strategy.
// `python -m devflow` keeps PYTHONSAFEPATH so the cwd cannot shadow devflow; the dry run's child
// puts the script's folder first on sys.path itself, as `python script.py` does.
import * as path from 'node:path';
import type { ImportStrategy } from '../settings';

export function dryRunEnv(
  base: Record<string, string | undefined>,
  strategy: ImportStrategy,
  bundledLibs: string | undefined,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  env.PYTHONUTF8 = '1';
  env.PYTHONSAFEPATH = '1';
  if (strategy === 'useBundled' && bundledLibs) {
    env.PYTHONPATH = base.PYTHONPATH ? `${bundledLibs}${path.delimiter}${base.PYTHONPATH}` : bundledLibs;
  }
  return env;
}
