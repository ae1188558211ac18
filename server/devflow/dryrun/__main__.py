import sys

from devflow.dryrun.cli import main

sys.exit(main())
