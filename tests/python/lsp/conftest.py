"""Makes the LSP test harness (lsp_harness.py) importable and provides its `start` fixture."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lsp_harness import start  # noqa: E402,F401  (the fixture)
