"""`python -m devflow.runtime [run] [--report-json FILE] script.py [args...]`."""

import sys

from devflow.runtime.cli import main

sys.exit(main(sys.argv[1:]))
