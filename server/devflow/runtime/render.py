"""Human text rendering of a placement report (the dict built by probe.placement_report).

Standard library only; used by `devflow run`, `devflow.runtime.install()` and the debug console.
"""

from __future__ import annotations

import os


def _fmt_bytes(n: int) -> str:
    step = 1024.0
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < step or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= step
    return f"{n} B"


def _fmt_devs(devs: dict) -> str:
    return ", ".join(f"{d}: {c:,}" for d, c in sorted(devs.items(), key=lambda kv: -kv[1])) or "no tensors"


def _fmt_tensor(t: dict) -> str:
    shape = "x".join(str(s) for s in t.get("shape") or []) or "scalar"
    name = t.get("name") or "(unnamed)"
    return f"{name}  [{shape} {t.get('dtype')}]  {t.get('origin')}"


def render_text(report: dict, *, max_per_device: int = 12, color: bool = False) -> str:
    """The report as text: culprit first, then modules, optimizers, tensors by device."""
    red = "\x1b[1;31m" if color else ""
    bold = "\x1b[1m" if color else ""
    off = "\x1b[0m" if color else ""
    lines: list[str] = []
    add = lines.append
    rank = report.get("rank")
    head = "devflow: device placement report"
    if rank:
        head += f" (rank {rank.get('rank')} of {rank.get('world_size')})"
    add(f"{bold}{head}{off}")
    if report.get("probe_error"):
        add(f"  the probe failed: {report['probe_error']}")
        return "\n".join(lines) + "\n"
    err = report.get("error") or {}
    if err:
        add(f"  error: {err.get('type')}: {(err.get('message') or '').splitlines()[0][:300] if err.get('message') else ''}")
        parsed = err.get("parsed") or {}
        bits = [f"{k} {parsed[k]}" for k in ("op", "argument") if parsed.get(k)]
        if parsed:
            add(f"  kind: {parsed.get('family')}" + (f" ({', '.join(bits)})" if bits else ""))
    c = report.get("culprit")
    if c:
        add(f"{red}  culprit: {c.get('summary')}{off}")
        if c.get("file"):
            add(f"    at {c.get('file')}:{c.get('line')} in {c.get('function')}")
            if c.get("code"):
                add(f"      {c['code']}")
        created = c.get("created")
        if created:
            add(f"    set at {created.get('file')}:{created.get('line')}: {created.get('code')}")
        if c.get("intended_by"):
            add(f"    intended device: {c['intended_by']}")
        for t in (c.get("tensors") or [])[:5]:
            add(f"    - {_fmt_tensor(t)} on {t.get('device')}")
        if c.get("hint"):
            add(f"    hint: {c['hint']}")
    for note in report.get("notes") or []:
        add(f"  note: {note}")
    mods = report.get("modules") or []
    if mods:
        add("  modules (parameter + buffer elements by device):")
        budget = [40]

        def walk(node: dict, depth: int):
            if budget[0] <= 0:
                return
            budget[0] -= 1
            flag = "  <- split across devices" if node.get("split") else ""
            add(f"    {'  ' * depth}{node.get('short') or node.get('name')} ({node.get('type')}): "
                f"{_fmt_devs(node.get('devices') or {})}{flag}")
            # Only descend into split modules: uniform subtrees say nothing new.
            if node.get("split") or depth == 0:
                for k in node.get("children") or []:
                    walk(k, depth + 1)

        for m in mods[:10]:
            walk(m, 0)
        if len(mods) > 10:
            add(f"    ... {len(mods) - 10} more module trees")
    for o in report.get("optimizers") or []:
        add(f"  optimizer {o['name']} ({o['type']}): params on {_fmt_devs(o['param_devices'])}; "
            f"state on {_fmt_devs(o['state_devices'])}")
        for m in o.get("mismatches", [])[:5]:
            add(f"    ! {m['name']} on {m['device']}, its parameter on {m['param_device']}")
        if o.get("mismatch_count", 0) > 5:
            add(f"    ... {o['mismatch_count'] - 5} more state tensors on the wrong device")
    for s in report.get("scalers") or []:
        add(f"  GradScaler {s['name']}: {s.get('tensors')}")
    devs = report.get("devices") or {}
    if devs:
        add("  tensors by device:")
        for d, g in devs.items():
            add(f"    {d}: {g['count']:,} tensors, {_fmt_bytes(g['bytes'])}")
            for t in g.get("tensors", [])[:max_per_device]:
                add(f"      {_fmt_tensor(t)}")
            more = g["count"] - min(len(g.get("tensors", [])), max_per_device)
            if more > 0:
                add(f"      ... {more:,} more")
    if report.get("truncated"):
        add("  (report truncated: name cap or time budget reached; counts are complete)")
    frames = report.get("frames") or []
    if frames:
        add("  user frames (innermost last):")
        for f in frames[-6:]:
            add(f"    {os.path.basename(f['file'])}:{f['line']} {f['function']}: {f.get('code', '')}")
    return "\n".join(lines) + "\n"
