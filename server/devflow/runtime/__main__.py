"""`python -m devflow.runtime [run] [--report-json FILE] script.py [args...]`."""

import sys

from devflow.runtime.cli import main

argv = sys.argv[1:]
if argv[:1] == ["run"]:  # `python -m devflow.runtime run ...` reads like `devflow run ...`
    argv = argv[1:]
sys.exit(main(argv, process_entry=True))
