"""The server's settings: command-line options of `devflow serve` plus the client's settings.

Client contract (VS Code client, initializationOptions / didChangeConfiguration):
{"settings": SETTINGS, "folders": [{"uri": FOLDER_URI, "settings": SETTINGS}, ...]} where SETTINGS is
{"enable": bool, "severity": {CODE_OR_FAMILY: "error"|"warning"|"information"|"hint"},
"args": [str], "inlayHints": {"enable": bool}, "lintOnChange": bool, "debounceMs": int,
"timeBudgetMs": int (0: no limit), "exclude": [glob]}. "settings" applies outside every workspace folder, each folder's
object to the files in it (see folder_settings.py). `args` are `devflow serve` options read per
folder: --select/--ignore/--extend-select, --config, --time-budget-ms.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from typing import Any

SEVERITIES = ("error", "warning", "information", "hint")
DEFAULT_DEBOUNCE_MS = 150
# The analysis of one file stops after this long and says it checked the file in part: a
# pathological file (tens of thousands of lines) must not hold a worker for tens of seconds.
DEFAULT_TIME_BUDGET_MS = 3000


@dataclass(frozen=True)
class Settings:
    enable: bool = True
    severity: dict[str, str] = field(default_factory=dict)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    config_path: str | None = None
    inlay_hints: bool = False
    lint_on_change: bool = True
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    time_budget_ms: int = DEFAULT_TIME_BUDGET_MS
    log_level: str = "info"
    exclude: tuple[str, ...] = ()  # devflow.exclude globs (see excludes.py)
    unknown_args: tuple[str, ...] = ()

    def severity_of(self, code: str, default: str) -> str:
        """The user's severity for `code`: the longest matching code or family prefix wins."""
        best = None
        for key, value in self.severity.items():
            if code.startswith(key) and (best is None or len(key) > len(best)):
                best = key
        return self.severity[best] if best is not None else default

    def selects(self, code: str) -> bool:
        """select / ignore by code or family prefix ("DEV1", "DEV101"); the longer match wins."""
        def longest(prefixes: tuple[str, ...]) -> int:
            return max((len(p) for p in prefixes if code.startswith(p)), default=-1)

        sel = longest(self.select) if self.select else 0
        ign = longest(self.ignore)
        return sel >= 0 and (ign < 0 or sel > ign)

def _split_codes(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out.extend(c.strip().upper() for c in v.split(",") if c.strip())
    return tuple(out)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="devflow serve", description="devflow language server (LSP over stdio)")
    p.add_argument("--log-level", default=None, choices=["error", "warning", "info", "debug"])
    p.add_argument("--select", action="append", help="codes or families to report (comma-separated)")
    p.add_argument("--ignore", action="append", help="codes or families to leave out (comma-separated)")
    p.add_argument("--extend-select", action="append", help="codes added to the selection")
    p.add_argument("--config", default=None, help="pyproject.toml to read [tool.devflow] from")
    p.add_argument("--time-budget-ms", type=int, default=None,
                   help=f"stop checking a file after this long, saying so (default {DEFAULT_TIME_BUDGET_MS}; 0: no limit)")
    p.add_argument("--stdio", action="store_true", help="speak LSP over stdio (the default)")
    return p


def parse_args(argv: list[str], base: Settings | None = None, strict: bool = True) -> Settings:
    """Settings from `devflow serve` options (strict: errors exit) or the client's "args"
    setting (lenient: unknown options are kept in `unknown_args` and logged)."""
    base = base or Settings()
    parser = _parser()
    if strict:
        ns = parser.parse_args(argv)
        unknown: list[str] = []
    else:
        try:
            ns, unknown = parser.parse_known_args(argv)
        except SystemExit:  # a malformed option value in the client's settings
            return replace(base, unknown_args=tuple(argv))
    select = _split_codes(ns.select) or base.select
    if ns.extend_select:
        select = (select or ()) + _split_codes(ns.extend_select)
    return replace(
        base,
        select=select,
        ignore=base.ignore + _split_codes(ns.ignore),
        config_path=ns.config or base.config_path,
        log_level=ns.log_level or base.log_level,
        time_budget_ms=max(0, ns.time_budget_ms) if ns.time_budget_ms is not None else base.time_budget_ms,
        unknown_args=tuple(unknown),
    )


def from_client(raw: Any, cli: Settings) -> Settings:
    """Merge the client's settings object (any shape: bad values fall back to defaults) over
    the command-line settings `cli`."""
    if not isinstance(raw, dict):
        return cli
    if isinstance(raw.get("settings"), dict):  # initializationOptions wrap them
        raw = raw["settings"]
    s = cli
    if isinstance(raw.get("enable"), bool):
        s = replace(s, enable=raw["enable"])
    sev = raw.get("severity")
    if isinstance(sev, dict):
        s = replace(s, severity={str(k).upper(): v for k, v in sev.items() if v in SEVERITIES})
    hints = raw.get("inlayHints")
    if isinstance(hints, dict) and isinstance(hints.get("enable"), bool):
        s = replace(s, inlay_hints=hints["enable"])
    if isinstance(raw.get("lintOnChange"), bool):
        s = replace(s, lint_on_change=raw["lintOnChange"])
    debounce = raw.get("debounceMs")
    if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and 0 <= debounce <= 10_000:
        s = replace(s, debounce_ms=int(debounce))
    budget = raw.get("timeBudgetMs")
    if isinstance(budget, (int, float)) and not isinstance(budget, bool) and 0 <= budget <= 3_600_000:
        s = replace(s, time_budget_ms=int(budget))
    exclude = raw.get("exclude")
    if isinstance(exclude, list):
        s = replace(s, exclude=tuple(g for g in exclude if isinstance(g, str) and g.strip()))
    args = raw.get("args")
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        s = parse_args(args, s, strict=False)
    return s
