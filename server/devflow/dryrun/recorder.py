"""Findings of one dry run. A finding is keyed by (user's file, line, kind): the first occurrence
keeps the op, the operands' devices and origins and the Python stack; later ones add to `count`.

"User code" is every file outside the Python installation, site-packages, torch and devflow: the
script, its sibling modules and the user's own packages."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import sysconfig
import threading

import torch

from devflow.rules.registry import DYNAMIC_RULES  # noqa: E402 - light import

KINDS = {code: info.summary for code, info in DYNAMIC_RULES.items()}

_LIB_ROOTS: tuple[str, ...] = ()
_lock = threading.Lock()


def _init_roots():
    global _LIB_ROOTS
    roots = {os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.add(p)
    roots.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    _LIB_ROOTS = tuple(os.path.realpath(r) + os.sep for r in roots if r)


_user_cache: dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    hit = _user_cache.get(filename)
    if hit is None:
        if filename.startswith("<") or not filename:
            hit = False
        else:
            real = os.path.realpath(filename)
            hit = not real.startswith(_LIB_ROOTS)
        _user_cache[filename] = hit
    return hit


def user_frames(limit: int = 12, frame=None) -> list[tuple[str, int, str]]:
    """The user's frames on the current stack, innermost first."""
    f = frame or sys._getframe(1)
    out = []
    while f is not None and len(out) < limit:
        code = f.f_code
        if is_user_file(code.co_filename):
            out.append((code.co_filename, f.f_lineno, code.co_name))
        f = f.f_back
    return out


def here(kind: str, callers: int = 2):
    """(kind, file, line, previous origin, outer user frames) of the innermost user frame - the
    allocation stack, up to `callers` outer user frames - or None inside library-only code."""
    f = sys._getframe(1)
    while f is not None:
        if is_user_file(f.f_code.co_filename):
            outer = []
            g = f.f_back
            while g is not None and len(outer) < callers:
                if is_user_file(g.f_code.co_filename):
                    outer.append((g.f_code.co_filename, g.f_lineno))
                g = g.f_back
            return (kind, f.f_code.co_filename, f.f_lineno, None, tuple(outer))
        f = f.f_back
    return None


class Recorder:
    def __init__(self):
        self.findings: dict[tuple, dict] = {}
        self.out_path: str | None = None
        self.events = 0
        self._muted = 0

    @contextlib.contextmanager
    def muted(self):
        """Record nothing inside (the dry run's own bookkeeping runs user-side functions)."""
        self._muted += 1
        try:
            yield
        finally:
            self._muted -= 1

    def add(self, kind: str, message: str, op: str, operands: list[dict], frames, severity="error",
            extra: dict | None = None):
        if self._muted:
            return
        if not frames:
            frames = [("<library>", 0, "")]
        path, line, _ = frames[0]
        key = (path, line, kind)
        with _lock:
            self.events += 1
            found = self.findings.get(key)
            if found is not None:
                found["count"] += 1
                return
            self.findings[key] = {
                "code": kind, "path": path, "line": line, "message": message, "op": op, "count": 1,
                "severity": severity, "operands": operands,
                "stack": [{"path": p, "line": n, "function": fn} for p, n, fn in frames],
                **(extra or {}),
            }
            self.save()

    def save(self, status: dict | None = None):
        if self.out_path is None:
            return
        findings = list(self.findings.values()) if self.worker else self._with_workers(final=status is not None)
        doc = {"findings": findings, "status": status or {"state": "running"}}
        tmp = self.out_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, self.out_path)

    # DataLoader workers (forked processes) record into files of their own; the main process adds
    # them to its findings on each save, as if the worker's op had run in the main process.
    worker = False

    def _after_fork(self):
        if self.out_path is None:
            return
        self.findings = {}
        self.worker = True
        self.out_path = f"{self.out_path.split(_WORKER)[0]}{_WORKER}{os.getpid()}"

    def _in_mp_child(self):
        # a multiprocessing child (DataLoader worker): the counts of its findings are written when
        # it ends (multiprocessing clears finalizers made before this point)
        if self.worker:
            from multiprocessing import util
            util.Finalize(None, self.save, exitpriority=100)

    def _with_workers(self, final: bool) -> list[dict]:
        import copy
        import glob

        merged = {k: dict(v) for k, v in self.findings.items()}
        for path in sorted(glob.glob(glob.escape(self.out_path) + _WORKER + "*")):
            if path.endswith(".tmp"):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    found = json.load(f).get("findings", [])
            except (OSError, ValueError):
                continue
            for w in found:
                key = (w["path"], w["line"], w["code"])
                if key in merged:
                    merged[key]["count"] += w["count"]
                else:
                    merged[key] = copy.deepcopy(w)
            if final:
                os.unlink(path)
        return list(merged.values())


_WORKER = ".worker-"
RECORDER = Recorder()
os.register_at_fork(after_in_child=RECORDER._after_fork)


def _register_mp(recorder):
    from multiprocessing import util
    util.register_after_fork(recorder, Recorder._in_mp_child)


_register_mp(RECORDER)


def operand_json(name: str, tensor) -> dict:
    origin = getattr(tensor, "origin", None)
    from devflow.dryrun.vtensor import vdevice
    d = {"name": name, "device": str(vdevice(tensor)), "shape": list(tensor.shape), "dtype": str(tensor.dtype)}
    d["origins"] = origins_json(origin)
    return d


def origins_json(origin) -> list[dict]:
    """origin is a chain: (kind, file, line, previous origin, outer user frames)."""
    out = []
    while origin and len(out) < 8:
        item = {"kind": origin[0], "path": origin[1], "line": origin[2]}
        if len(origin) > 4 and origin[4]:
            item["callers"] = [{"path": p, "line": n} for p, n in origin[4]]
        out.append(item)
        origin = origin[3] if len(origin) > 3 else None
    return out


def record_mix(func, mix):
    frames = user_frames(frame=sys._getframe(2))
    op = func._schema.name.replace("aten::", "aten.")
    RECORDER.add(mix.kind, mix.message, op, [operand_json(o.name, o.tensor) for o in mix.operands], frames)


def record_error(kind: str, message: str, exc_type: str, tensors: list, severity="error", frames=None,
                 extra=None):
    frames = frames or user_frames(frame=sys._getframe(1))
    RECORDER.add(kind, message, exc_type, [operand_json(f"arg{i}", t) for i, t in enumerate(tensors)], frames,
                 severity=severity, extra=extra)


_init_roots()
