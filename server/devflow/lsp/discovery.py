"""The Python files and notebooks under the workspace folders, without ignored ones: version
control and virtualenv folders, `.gitignore` patterns and `[tool.devflow]` excludes.

Uses the CLI's discovery (`devflow.discovery.discover`) when that module provides it, so that
`devflow check` and the editor see the same files."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

import pathspec

from devflow.lsp.project_config import ConfigCache

log = logging.getLogger("devflow.lsp")
SUFFIXES = (".py", ".pyi", ".ipynb")
_SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "node_modules",
              ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", ".ipynb_checkpoints"}


def _cli_discover(roots: list[Path], explicit: str | None) -> list[Path] | None:
    try:
        from devflow.config import ConfigResolver
        from devflow.discovery import discover as cli_discover
    except ImportError:
        return None
    try:
        return [Path(p) for p in cli_discover([str(r) for r in roots], ConfigResolver(explicit=explicit))]
    except Exception as e:  # e.g. a broken [tool.devflow]: walk with the defaults instead
        log.info("devflow: the CLI's file discovery failed (%s); using the server's own", e)
        return None


def discover(roots: Iterable[Path], configs: ConfigCache, explicit_config: str | None = None) -> list[Path]:
    roots = [Path(r) for r in roots]
    found = _cli_discover(roots, explicit_config)
    if found is not None:
        return found
    out: list[Path] = []
    for root in roots:
        if root.is_file():
            out.append(root)
        elif root.is_dir():
            out.extend(_walk(root, configs, explicit_config))
    return sorted(dict.fromkeys(out))


def _spec_for(folder: Path) -> pathspec.PathSpec | None:
    gi = folder / ".gitignore"
    try:
        return pathspec.GitIgnoreSpec.from_lines(gi.read_text(encoding="utf-8", errors="replace").splitlines()) if gi.is_file() else None
    except Exception:
        return None


def _walk(root: Path, configs: ConfigCache, explicit: str | None) -> list[Path]:
    config = configs.for_path(str(root / "__init__.py"), explicit)
    is_excluded = getattr(config, "is_excluded", None)
    use_gitignore = getattr(config, "respect_gitignore", True)
    ignores: list[tuple[Path, pathspec.PathSpec]] = []  # (folder, its .gitignore)
    out: list[Path] = []

    def ignored(path: Path, is_dir: bool) -> bool:
        for folder, spec in ignores:
            if folder in path.parents:
                rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
                if spec.match_file(rel):
                    return True
        return bool(is_excluded and is_excluded(path))

    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        spec = _spec_for(here) if use_gitignore else None
        if spec is not None:
            ignores.append((here, spec))
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not ignored(here / d, True))
        for name in sorted(filenames):
            p = here / name
            if name.endswith(SUFFIXES) and not ignored(p, False):
                out.append(p)
    return out
