"""`[tool.devflow]` in pyproject.toml: which rules run, where, and at what severity.

    [tool.devflow]
    select = ["DEV"]                 # codes or prefixes (family "DEV1", code "DEV101", "ALL")
    ignore = ["DEV601"]
    extend-select = []              # added to `select` (handy when `select` is inherited)
    exclude = ["legacy/"]           # gitignore-style patterns, relative to this pyproject.toml
    extend-exclude = ["notebooks/scratch*.ipynb"]
    per-file-ignores = { "tests/**" = ["DEV2"], "scripts/*.py" = ["DEV301"] }
    severity = { DEV6 = "warning", DEV105 = "info" }

Public API (the language server uses it too):
- `load_config(path=None) -> Config`: `path` is a pyproject.toml / devflow.toml file, or a file or
  folder to start from; the nearest pyproject.toml with a `[tool.devflow]` table above it is read
  (defaults when there is none). Raises `ConfigError` with a one-line reason on a bad table.
- `Config.is_enabled(code, path=None)`, `Config.severity_for(code, default)`,
  `Config.is_excluded(path)`.

Selection follows ruff: of all selectors matching a code, the longest wins; on a tie `ignore`
wins. Per-file ignores are applied on top.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import pathspec

SEVERITIES = ("error", "warning", "info", "hint")
# Folders nobody wants linted; `exclude` in the config replaces this list, `extend-exclude` adds to it.
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
    ".pytest_cache", ".ruff_cache", ".svn", ".tox", ".venv", "venv", "__pypackages__",
    "__pycache__", "_build", "build", "dist", "node_modules", "site-packages",
)
_SELECTOR = re.compile(r"^(ALL|[A-Z]{1,5}[0-9]{0,4})$")
_KNOWN_KEYS = {
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores",
    "extend-per-file-ignores", "severity", "respect-gitignore",
}
CONFIG_FILES = ("pyproject.toml",)


class ConfigError(ValueError):
    """A `[tool.devflow]` table that cannot be used; the message names the file and the key."""


def _matches(selector: str, code: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _specificity(selector: str) -> int:
    return 0 if selector == "ALL" else len(selector)


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    severity: tuple[tuple[str, str], ...] = ()
    respect_gitignore: bool = True
    # The folder patterns are relative to (the pyproject.toml's folder), and the file itself.
    root: str | None = None
    source: str | None = None

    # -- rule selection ------------------------------------------------------------------------
    def is_enabled(self, code: str, path: str | None = None) -> bool:
        """Whether a diagnostic with `code` is reported for `path` under this config."""
        best_select = max((_specificity(s) for s in (*self.select, *self.extend_select) if _matches(s, code)),
                          default=-1)
        best_ignore = max((_specificity(s) for s in self.ignore if _matches(s, code)), default=-1)
        if best_select < 0 or best_ignore >= best_select:
            return False
        if path is not None and self.per_file_ignores:
            for spec, codes in self._per_file_specs:
                if any(_matches(c, code) for c in codes) and spec.match_file(self._relative(path)):
                    return False
        return True

    def severity_for(self, code: str, default: str) -> str:
        """The severity set for the most specific selector matching `code`, else `default`."""
        best, level = -1, default
        for selector, value in self.severity:
            if _matches(selector, code) and _specificity(selector) > best:
                best, level = _specificity(selector), value
        return level

    # -- files ---------------------------------------------------------------------------------
    def is_excluded(self, path: str | Path, anchor: str | Path | None = None) -> bool:
        """Whether `path` (a file or folder) matches `exclude` / `extend-exclude`. Patterns are
        matched relative to the config's folder, or to `anchor` (a folder the user named even
        though it is excluded: what is inside is then judged from there)."""
        rel = self._relative(path) if anchor is None else _relative_to(path, anchor)
        if self._exclude_spec.match_file(rel):
            return True
        # A folder pattern ("build/") must also exclude a folder given without its slash.
        return Path(path).is_dir() and self._exclude_spec.match_file(rel.rstrip("/") + "/")

    def _relative(self, path: str | Path) -> str:
        p = Path(path)
        if self.root is not None:
            try:
                return Path(p).resolve().relative_to(Path(self.root).resolve()).as_posix()
            except ValueError:
                pass  # outside the project: match what we have (a bare name matches anywhere)
        return p.as_posix()

    @cached_property
    def _exclude_spec(self) -> pathspec.PathSpec:
        return pathspec.GitIgnoreSpec.from_lines([*self.exclude, *self.extend_exclude])

    @cached_property
    def _per_file_specs(self) -> list[tuple[pathspec.PathSpec, tuple[str, ...]]]:
        return [(pathspec.GitIgnoreSpec.from_lines([pattern]), codes) for pattern, codes in self.per_file_ignores]

    # -- building ------------------------------------------------------------------------------
    def with_overrides(self, select: list[str] | None = None, ignore: list[str] | None = None,
                       extend_select: list[str] | None = None) -> Config:
        """The command line on top of the file: `--select` replaces `select` and `extend-select`,
        `--ignore` and `--extend-select` add to what the file says."""
        from dataclasses import replace

        out = self
        if select is not None:
            out = replace(out, select=tuple(_check_selectors(select, "--select")), extend_select=())
        if extend_select:
            out = replace(out, extend_select=out.extend_select + tuple(_check_selectors(extend_select, "--extend-select")))
        if ignore:
            out = replace(out, ignore=out.ignore + tuple(_check_selectors(ignore, "--ignore")))
        return out


def _relative_to(path: str | Path, folder: str | Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(folder).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _known_codes() -> set[str] | None:
    try:
        from devflow.rules import RULES
    except Exception:  # the rule table is the engine's; without it, selectors are only syntax-checked
        return None
    return set(RULES) | {"E000", "E902", "E998", "E999"}


def _check_selectors(values: Any, where: str) -> list[str]:
    if isinstance(values, str):
        values = [v for v in re.split(r"[,\s]+", values) if v]
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{where}: expected a list of rule codes, got {values!r}")
    out = []
    known = _known_codes()
    for raw in values:
        v = raw.strip().upper()
        if not _SELECTOR.match(v):
            raise ConfigError(f"{where}: {raw!r} is not a rule code or prefix (like DEV101, DEV1 or ALL)")
        if known is not None and v != "ALL" and not any(c.startswith(v) for c in known):
            raise ConfigError(f"{where}: unknown rule selector {raw!r} (see `devflow rules`)")
        out.append(v)
    return out


def _patterns(values: Any, where: str) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{where}: expected a list of path patterns, got {values!r}")
    return tuple(values)


def parse_table(table: Any, source: str | None = None, root: str | None = None) -> Config:
    """A Config from the contents of a `[tool.devflow]` table (raises ConfigError)."""
    where = f"{source}: [tool.devflow]" if source else "[tool.devflow]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KNOWN_KEYS))})")
    kw: dict[str, Any] = {"root": root, "source": source}
    if "select" in table:
        kw["select"] = tuple(_check_selectors(table["select"], f"{where} select"))
    if "ignore" in table:
        kw["ignore"] = tuple(_check_selectors(table["ignore"], f"{where} ignore"))
    if "extend-select" in table:
        kw["extend_select"] = tuple(_check_selectors(table["extend-select"], f"{where} extend-select"))
    if "exclude" in table:
        kw["exclude"] = _patterns(table["exclude"], f"{where} exclude")
    if "extend-exclude" in table:
        kw["extend_exclude"] = _patterns(table["extend-exclude"], f"{where} extend-exclude")
    pfi: list[tuple[str, tuple[str, ...]]] = []
    for key in ("per-file-ignores", "extend-per-file-ignores"):
        if key in table:
            value = table[key]
            if not isinstance(value, dict):
                raise ConfigError(f"{where} {key}: expected a table of pattern = [codes], got {value!r}")
            for pattern, codes in value.items():
                pfi.append((pattern, tuple(_check_selectors(codes, f"{where} {key} {pattern!r}"))))
    kw["per_file_ignores"] = tuple(pfi)
    if "severity" in table:
        value = table["severity"]
        if not isinstance(value, dict):
            raise ConfigError(f"{where} severity: expected a table of CODE = \"error|warning|info|hint\"")
        levels = []
        for selector, level in value.items():
            (code,) = _check_selectors([selector], f"{where} severity")
            if level not in SEVERITIES:
                raise ConfigError(f"{where} severity {selector!r}: {level!r} is not one of {', '.join(SEVERITIES)}")
            levels.append((code, level))
        kw["severity"] = tuple(levels)
    if "respect-gitignore" in table:
        if not isinstance(table["respect-gitignore"], bool):
            raise ConfigError(f"{where} respect-gitignore: expected true or false")
        kw["respect_gitignore"] = table["respect-gitignore"]
    return Config(**kw)


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({e.reason})") from None


def _devflow_table(data: dict) -> Any:
    tool = data.get("tool")
    return tool.get("devflow") if isinstance(tool, dict) else None


def find_config_file(start: str | Path) -> Path | None:
    """The nearest pyproject.toml with a `[tool.devflow]` table at or above `start`."""
    here = Path(start).resolve()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                if _devflow_table(_read_toml(candidate)) is not None:
                    return candidate
            except ConfigError:
                # A broken pyproject.toml on the way up is only our business if it is ours.
                try:
                    ours = "tool.devflow" in candidate.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    ours = False
                if ours:
                    raise
    return None


def load_config(path: str | Path | None = None) -> Config:
    """The Config for `path` (see the module docstring). `None` starts from the current folder."""
    start = Path(path) if path is not None else Path.cwd()
    if start.suffix == ".toml":
        if not start.is_file():
            raise ConfigError(f"{start}: no such config file")
        data = _read_toml(start)
        # A pyproject.toml without our table is no config; a devflow-only .toml may be bare.
        table = _devflow_table(data) if start.name == "pyproject.toml" else _devflow_table(data) or data
        root = str(start.resolve().parent)
        return parse_table(table, str(start), root) if table is not None else Config(root=root, source=str(start))
    found = find_config_file(start)
    if found is None:
        return Config()
    return parse_table(_devflow_table(_read_toml(found)), str(found), str(found.resolve().parent))


@dataclass
class ConfigResolver:
    """One Config per folder for a run over many files (hierarchical pyproject.toml), or one
    `--config` file for all; the CLI's overrides are applied to each."""

    explicit: str | None = None
    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    _by_folder: dict[Path, Config] = field(default_factory=dict)
    _explicit: Config | None = None

    def for_path(self, path: str | Path) -> Config:
        if self.explicit is not None:
            if self._explicit is None:
                self._explicit = load_config(self.explicit).with_overrides(self.select, self.ignore, self.extend_select)
            return self._explicit
        folder = Path(path).resolve()
        if not folder.is_dir():
            folder = folder.parent
        if folder not in self._by_folder:
            found = find_config_file(folder)
            cached = next((c for c in self._by_folder.values() if c.source == (str(found) if found else None)), None)
            self._by_folder[folder] = cached or load_config(found if found else folder).with_overrides(
                self.select, self.ignore, self.extend_select)
        return self._by_folder[folder]
