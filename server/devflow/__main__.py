import sys

from devflow.cli import main

sys.exit(main())
