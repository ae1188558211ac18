"""What the CLI and the language server call (placeholder until the CLI issue lands).

- `check_source(source, path=None, config=None) -> FileResult`: engine + `# noqa` + select/ignore
  + severity overrides from `[tool.devflow]`. Never raises.
- `check_path(path, config=None) -> FileResult`: reads a `.py` or `.ipynb` file (undecodable or
  unreadable files become `FileResult.error`).
- `apply_fixes(source, diagnostics, unsafe=False) -> str`: applies the non-overlapping fixes.
"""

from __future__ import annotations

from devflow import engine
from devflow.model import FileResult


def check_source(source: str, path: str | None = None, config=None) -> FileResult:
    return engine.analyze(source, path)
