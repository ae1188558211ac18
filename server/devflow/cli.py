"""`devflow` command line (placeholder until the CLI issue lands)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print("devflow: commands check, serve, run (not yet implemented)", file=sys.stderr)
    return 2
