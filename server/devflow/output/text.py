"""ruff-style text: one `path:line:col: CODE message` line per finding, then a summary."""

from __future__ import annotations

from devflow.output import Location, Report, error_location, locate, message_of


_BOLD, _RED, _CYAN, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"


def _paint(text: str, style: str, on: bool) -> str:
    return f"{style}{text}{_RESET}" if on else text


def _where(path: str, loc: Location, color: bool = False) -> str:
    cell = f"cell {loc.cell}:" if loc.cell is not None else ""
    return f"{_paint(path, _BOLD, color)}:{cell}{loc.line}:{loc.column}"


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith(("x", "s")) else f"{n} {word}s"


def render_text(report: Report) -> str:
    lines = []
    rows = [(f.path, error_location(f), f.error_code or "E902", "", message_of(f, f.result.error or ""))
            for f in report.errors()]
    for file, d in report.findings():
        marker = "[*] " if d.fix is not None and (report.unsafe_fixes or d.fix.applicability == "safe") else ""
        rows.append((file.path, locate(file, d.span), d.code, marker, message_of(file, d.message)))
    rows.sort(key=lambda r: (r[0], r[1].cell or 0, r[1].line, r[1].column, r[2]))
    color = report.color
    for path, loc, code, marker, message in rows:
        lines.append(f"{_where(path, loc, color)}: {_paint(code, _RED + _BOLD, color)} "
                     f"{_paint(marker, _CYAN, color) if marker else ''}{message}")
    if not report.quiet:
        lines.extend(_fixed_block(report))
        lines.extend(_summary(report))
    return "".join(line + "\n" for line in lines)


def _fixed_block(report: Report) -> list[str]:
    """What --fix changed, per file and code (ruff's --show-fixes)."""
    fixed = [f for f in sorted(report.files, key=lambda f: f.path) if f.fixed_codes]
    if not fixed:
        return []
    out = [f"Fixed {_plural(report.fixed, 'error')}:"]
    for f in fixed:
        out.append(f"- {f.path}:")
        for code in sorted(set(f.fixed_codes)):
            out.append(f"    {f.fixed_codes.count(code)} × {code}")
    return out


def _counted(report: Report, remaining: int) -> str:
    """`3 errors`, or `3 diagnostics (2 errors, 1 warning)` once some are not errors: a warning-only run
    must not read as failing (file errors such as E999 count as errors)."""
    others: dict[str, int] = {}
    for _, d in report.findings():
        if d.severity != "error":
            others[d.severity] = others.get(d.severity, 0) + 1
    if not others:
        return _plural(remaining, "error")
    parts = [_plural(remaining - sum(others.values()), "error")] if remaining > sum(others.values()) else []
    parts += [_plural(n, sev) for sev, n in sorted(others.items(), key=lambda kv: ("warning", "info", "hint").index(kv[0]))]
    return f"{_plural(remaining, 'diagnostic')} ({', '.join(parts)})"


def _summary(report: Report) -> list[str]:
    remaining, fixed = report.remaining, report.fixed
    out = []
    if remaining == 0:
        out.append(f"Found {_plural(fixed, 'error')} ({fixed} fixed, 0 remaining)." if fixed else "All checks passed!")
        return out
    if report.fix:
        out.append(f"Found {_plural(fixed + remaining, 'error')} ({fixed} fixed, {remaining} remaining).")
    else:
        out.append(f"Found {_counted(report, remaining)}.")
    safe = report.fixable(unsafe=False)
    every = report.fixable(unsafe=True)
    shown = every if report.unsafe_fixes else safe
    hidden = 0 if report.unsafe_fixes else every - safe
    hint = f" ({_plural(hidden, 'hidden fix')} can be enabled with the `--unsafe-fixes` option)" if hidden else ""
    if shown and not report.fix:
        out.append(f"[*] {shown} fixable with the `--fix` option{hint}.")
    elif hidden:
        out.append(f"No fixes available{hint}.")
    return out
