"""Which files `devflow check PATH...` looks at.

- Folders are walked for `.py` and `.ipynb` files, skipping what the config excludes
  (`exclude` defaults to .venv, .git, node_modules, __pycache__, build, ...; `extend-exclude`
  adds to it) and what `.gitignore` files ignore (every .gitignore from the repository root
  down, plus .git/info/exclude; `respect-gitignore = false` turns that off).
- Files named on the command line are always checked (like ruff), whatever their extension
  and even if a pattern would exclude them; a folder named on the command line is walked even
  if it is itself ignored or excluded (the patterns above it then do not apply inside it).
- Symlinked folders are not followed (no cycles, no checking a venv twice).

`discover(paths, config=None) -> list[str]` is also used by the language server's workspace
check; `config` is a `Config`, anything with `for_path(path) -> Config`, or None (the nearest
pyproject.toml of each folder).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pathspec

from devflow.config import Config, ConfigResolver

SOURCE_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class _IgnoreFile:
    base: Path  # the folder the patterns are relative to
    spec: pathspec.PathSpec

    def decide(self, path: Path, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a `!pattern`, None: not mentioned."""
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return None
        return self.spec.check_file(rel + "/" if is_dir else rel).include


def _read_ignore(path: Path, base: Path) -> _IgnoreFile | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _IgnoreFile(base, pathspec.GitIgnoreSpec.from_lines(lines)) if lines else None


def _repo_root(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _inherited_ignores(folder: Path) -> list[_IgnoreFile]:
    """The .gitignore files above `folder` up to its repository root (outermost first)."""
    root = _repo_root(folder)
    if root is None:
        return []
    out = []
    info = _read_ignore(root / ".git" / "info" / "exclude", root)
    if info:
        out.append(info)
    chain = [folder, *folder.parents]
    for parent in reversed(chain[1: chain.index(root) + 1] if root in chain else []):
        found = _read_ignore(parent / ".gitignore", parent)
        if found:
            out.append(found)
    return out


def _ignored(path: Path, is_dir: bool, ignores: list[_IgnoreFile]) -> bool:
    # The deepest .gitignore that mentions the path decides, as in git.
    for ig in reversed(ignores):
        decision = ig.decide(path, is_dir)
        if decision is not None:
            return decision
    return False


def _config_for(config, path: Path) -> Config:
    if config is None:
        return Config()
    if isinstance(config, Config):
        return config
    return config.for_path(path)


def _walk(folder: Path, config, ignores: list[_IgnoreFile], out: list[Path], anchor: Path | None) -> None:
    cfg = _config_for(config, folder)
    if cfg.respect_gitignore:
        own = _read_ignore(folder / ".gitignore", folder)
        if own:
            ignores = [*ignores, own]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return  # an unreadable folder has nothing we can check; its files are not ours to report
    for entry in entries:
        path = folder / entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file()
        except OSError:
            continue
        if is_dir:
            if cfg.is_excluded(path, anchor) or (cfg.respect_gitignore and _ignored(path, True, ignores)):
                continue
            _walk(path, config, ignores, out, anchor)
        elif is_file and entry.name.endswith(SOURCE_SUFFIXES):
            if cfg.is_excluded(path, anchor) or (cfg.respect_gitignore and _ignored(path, False, ignores)):
                continue
            out.append(path)


def discover(paths: list[str] | list[Path], config=None) -> list[str]:
    """The files to check under `paths`, sorted, each once. A path that does not exist is
    returned as given, so that the caller reports it (E902) rather than silently skipping it."""
    if config is None:
        config = ConfigResolver()
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            resolved = path.resolve()
            cfg = _config_for(config, resolved)
            ignores = _inherited_ignores(resolved) if cfg.respect_gitignore else []
            # A folder named on the command line is checked even if it is ignored or excluded
            # (`devflow check .venv/lib/pkg`): rules above it then no longer apply inside it.
            if ignores and _ignored(resolved, True, ignores):
                ignores = []
            anchor = resolved if cfg.is_excluded(resolved) else None
            walked: list[Path] = []
            _walk(resolved, config, ignores, walked, anchor)
            # Report paths in the form the user typed them (relative stays relative).
            found.extend(path / p.relative_to(resolved) for p in walked)
        else:
            found.append(path)
    seen: set[str] = set()
    out = []
    for p in found:
        key = os.path.normcase(os.path.abspath(p))
        if key not in seen:
            seen.add(key)
            out.append(os.path.normpath(str(p)))
    return sorted(out)
