"""Entry point of the static device-flow analysis (placeholder until the engine lands).

Contract: `analyze(source, path=None) -> FileResult` never raises for any input string; it
returns every rule's raw diagnostics (no noqa / select / ignore filtering: `devflow.api` does
that) and the device hints for hover / inlay hints. It never imports torch or user code.
"""

from __future__ import annotations

from devflow.model import FileResult


def analyze(source: str, path: str | None = None) -> FileResult:
    return FileResult(path=path)
