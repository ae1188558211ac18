"""Snapshots of files on disk (for checkWorkspace / checkFile on files that are not open)."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from devflow.lsp.documents import Snapshot
from devflow.notebook import code_cells_of_ipynb, join_cells


def read_snapshot(path: Path) -> tuple[Snapshot, str | None]:
    """(snapshot, None) or (empty snapshot, a sentence saying why the file can't be read).
    Python files honour a PEP 263 coding cookie; a notebook is its code cells joined."""
    uri = path.resolve().as_uri()
    empty = Snapshot(uri=uri, version=None, source="", path=str(path))
    try:
        data = path.read_bytes()
    except OSError as e:
        return empty, f"cannot read the file ({e.strerror or e})"
    if path.suffix == ".ipynb":
        try:
            text = data.decode("utf-8-sig")
            joined = join_cells(code_cells_of_ipynb(text))
        except UnicodeDecodeError as e:
            return empty, f"the notebook is not valid UTF-8 (byte {e.start})"
        except ValueError as e:
            return empty, str(e)
        return Snapshot(uri=uri, version=None, source=joined.source, path=str(path), disk_joined=joined), None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError) as e:
        return empty, f"cannot decode the file: {e}"
    except UnicodeDecodeError as e:
        return empty, f"cannot decode the file as {e.encoding} (invalid byte at offset {e.start}); save it as UTF-8"
    if text.startswith("\ufeff"):
        text = text[1:]
    return Snapshot(uri=uri, version=None, source=text, path=str(path)), None
