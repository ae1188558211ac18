#!/usr/bin/env python3
"""Metamorphic measurement of the engine on rewritten corpus cases.

    python tests/metamorphic/run.py [--engine-root PATH] [--shared DIR] [--kind K ...] [--case ID ...]
                                    [--json OUT] [--validate N] [--fixtures DIR]

--engine-root: a `server/` folder whose `devflow` package is measured (default: this checkout's);
--validate N: also replay N runnable cases' rewritten variants with meta_run.py --strict and compare
their outcome with the unrewritten script (checks the rewriter, not the engine).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine-root", type=Path, default=ROOT / "server")
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--fixtures", type=Path, help="engine fixture projects instead of the corpus "
                    "(e.g. tests/fixtures/engine/unseen: bug lines from expect.txt, <case>_fixed twins)")
    ap.add_argument("--kind", action="append")
    ap.add_argument("--case", action="append")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--validate", type=int, default=0)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.engine_root.resolve()))
    sys.path.insert(0, str(ROOT / "tests"))
    from metamorphic import measure

    import devflow

    print(f"engine: {Path(devflow.__file__).parent}")
    res = measure.evaluate(args.shared, args.kind, args.case, fixtures=args.fixtures)
    print(measure.report(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, default=str))
    if args.validate and not args.fixtures:
        from metamorphic import validate

        print(validate.report(validate.run(args.shared, args.validate, args.kind, args.case)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
