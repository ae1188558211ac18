import sys

from devflow.lsp.server import main

sys.exit(main(sys.argv[1:]))
