"""Placement probe: where every live tensor, module and optimizer state is, and who the culprit is.

Standard library + torch only, torch looked up lazily (never imported here: if the program has not
imported torch there is nothing to report).  This file is injected into debuggees by source (see
dap_expression.py), so it must not import anything else from devflow except the message parser,
which the injector loads beside it.

    placement_report(exc=None, ...) -> dict      JSON-serialisable
    placement_report_json(exc=None, ...) -> str  compact JSON (what the VS Code tracker evaluates)

Cheapest first: the failing traceback's frames (locals, shallow containers and attributes), the
nn.Module trees reachable from them and from gc, optimizers and GradScalers, then a gc scan for the
rest.  Past `max_names` names per device or `time_budget` seconds it keeps counting but stops naming.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import time

try:  # inside devflow
    from . import messages as _messages
except ImportError:  # injected by source: the injector registered the parser module first
    _messages = sys.modules.get("_devflow_runtime_messages")

REPORT_VERSION = 1
_ACCELERATOR_TYPES = ("cuda", "meta", "mps", "xpu", "hpu", "privateuseone", "mtia")
_MAX_TREE_NODES = 400
_MAX_ROOTS = 50  # module trees listed (best-named first); the rest are counted
_MAX_CULPRITS = 10
_MAX_CODE = 300
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _torch():
    return sys.modules.get("torch")


def _device_str(t) -> str:
    try:
        return str(t.device)
    except BaseException:  # noqa: BLE001 - exotic subclasses
        return "unknown"


def _nbytes(t) -> int:
    try:
        return int(t.nbytes)
    except BaseException:  # noqa: BLE001
        return 0


def _dtype(t) -> str:
    try:
        return str(t.dtype).replace("torch.", "")
    except BaseException:  # noqa: BLE001 - a hostile __torch_function__
        return "?"


def _shape(t) -> list:
    try:
        return [int(s) for s in t.shape]
    except BaseException:  # noqa: BLE001 - symbolic shapes
        return []


def _is_accelerator(dev: str | None) -> bool:
    return bool(dev) and dev.split(":")[0] in _ACCELERATOR_TYPES


def _same_device(a: str | None, b: str | None) -> bool:
    """'cuda' (from legacy wordings) matches 'cuda:0'."""
    if not a or not b:
        return False
    if a == b:
        return True
    return (":" not in a or ":" not in b) and a.split(":")[0] == b.split(":")[0]


# --------------------------------------------------------------------------------------------
# Frames


def _library_roots() -> list[str]:
    roots = []
    for p in {sys.prefix, sys.base_prefix, getattr(sys, "exec_prefix", "")}:
        if p:
            for sub in ("lib", "bin", "Scripts", "Lib"):  # bin: console scripts (`devflow`, `torchrun`)
                roots.append(os.path.join(os.path.realpath(p), sub))
    t = _torch()
    if t is not None and getattr(t, "__file__", None):
        roots.append(os.path.dirname(os.path.realpath(t.__file__)))
    if "__file__" in globals():
        # the whole devflow package (its CLI calls the script), also when run from a source checkout
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    else:
        roots.append("<devflow>")
    for extra in os.environ.get("DEVFLOW_LIBRARY_PATHS", "").split(os.pathsep):
        if extra:
            roots.append(os.path.realpath(extra))
    return roots


def _is_user_file(filename: str, roots: list[str]) -> bool:
    if not filename or filename.startswith("<") and not filename.startswith("<ipython"):
        return False
    if "site-packages" in filename or "dist-packages" in filename:
        return False
    real = os.path.realpath(filename) if not filename.startswith("<") else filename
    return not any(real == r or real.startswith(r + os.sep) for r in roots)


def _frames_from_exc(exc) -> list:
    """(frame, lineno) pairs from outermost to innermost."""
    out = []
    tb = getattr(exc, "__traceback__", None)
    while tb is not None:
        out.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    if out:
        # Callers above the handler (exceptions caught and re-raised keep only part of the stack).
        f = out[0][0].f_back
        callers = []
        while f is not None and len(callers) < 50:
            callers.append((f, f.f_lineno))
            f = f.f_back
        out = callers[::-1] + out
    return out


def _source_line(filename: str, lineno: int) -> str:
    try:
        import linecache

        return linecache.getline(filename, lineno).strip()[:_MAX_CODE]
    except BaseException:  # noqa: BLE001
        return ""


# --------------------------------------------------------------------------------------------
# Naming registry


class _Registry:
    """id(obj) -> (name, origin, priority); the lowest priority number wins."""

    def __init__(self):
        self.names: dict[int, tuple[str, str, int]] = {}
        self.keep: list = []  # keeps named objects alive (ids must stay unique while we run)
        self.aliases: dict[int, list[str]] = {}

    def offer(self, obj, name: str, origin: str, prio: int) -> bool:
        key = id(obj)
        cur = self.names.get(key)
        if prio < 60 and ".param_groups[" not in name:  # other user-visible names, for "also known as"
            al = self.aliases.setdefault(key, [])
            if name not in al and len(al) < 6:
                al.append(name)
        if cur is None or prio < cur[2] or (prio == cur[2] and len(name) < len(cur[0])):
            if cur is None:
                self.keep.append(obj)
            self.names[key] = (name, origin, prio)
            return True
        return False

    def get(self, obj):
        return self.names.get(id(obj))


class _Probe:
    def __init__(self, exc, max_names: int, time_budget: float, gc_scan: bool):
        self.torch = _torch()
        self.exc = exc
        self.max_names = max_names
        self.deadline = time.perf_counter() + time_budget
        self.gc_scan = gc_scan
        self.reg = _Registry()
        self.tensors: dict[int, object] = {}  # id -> tensor, every tensor we know of
        self.tensor_frames: dict[int, tuple[int, str]] = {}  # id -> (frame index, frame function)
        self.name_frames: dict[int, str] = {}
        self.modules: dict[int, object] = {}
        self.frame_modules: set = set()  # ids of modules some stack frame holds (the running model)
        self.optimizers: dict[int, object] = {}
        self.scalers: dict[int, object] = {}
        self.notes: list[str] = []
        self.truncated = False
        self._discovered: list[int] = []  # modules found in plain lists while naming (new roots)
        amp = getattr(self.torch, "amp", None)
        cuda_amp = getattr(getattr(self.torch, "cuda", None), "amp", None)
        self.scaler_classes = tuple(c for c in (getattr(amp, "GradScaler", None),
                                                getattr(cuda_amp, "GradScaler", None)) if isinstance(c, type))

    def out_of_time(self) -> bool:
        if time.perf_counter() > self.deadline:
            self.truncated = True
            return True
        return False

    # -- classification -------------------------------------------------------------------

    def is_tensor(self, o) -> bool:
        return isinstance(o, self.torch.Tensor)

    def is_module(self, o) -> bool:
        return isinstance(o, self.torch.nn.Module)

    def is_optimizer(self, o) -> bool:
        return isinstance(o, self.torch.optim.Optimizer)

    def is_scaler(self, o) -> bool:
        return bool(self.scaler_classes) and isinstance(o, self.scaler_classes)

    # -- frames -----------------------------------------------------------------------------

    def scan_value(self, name: str, value, prio: int, frame_idx: int, func: str, depth: int = 0,
                   obj_prio: int = 0):
        """Isolated: an object whose __getattr__ / __class__ / __torch_function__ raises anything
        (KeyboardInterrupt and SystemExit included) is skipped, the rest is still reported."""
        try:
            self._scan_value(name, value, prio, frame_idx, func, depth, obj_prio)
        except BaseException as e:  # noqa: BLE001
            self.hostile(name, e)

    def hostile(self, name: str, e: BaseException):
        if len(self.notes) < 20:
            self.notes.append(f"skipped {name}: inspecting it raised {type(e).__name__}")

    def _scan_value(self, name: str, value, prio: int, frame_idx: int, func: str, depth: int = 0,
                    obj_prio: int = 0):
        # Tensors take the innermost name (what the failing line says); modules, optimizers and
        # scalers the outermost one (`model`, not `self` inside forward): obj_prio.
        if self.is_tensor(value):
            self.tensors[id(value)] = value
            if self.reg.offer(value, name, "local", prio):
                self.name_frames[id(value)] = func  # the frame the shown name comes from
            self.tensor_frames.setdefault(id(value), (frame_idx, func))  # innermost frame seen
        elif self.is_module(value):
            self.modules[id(value)] = value
            self.frame_modules.add(id(value))
            is_self = name.split(".")[0] == "self"
            if not (is_self and obj_prio >= 100):  # torch's own `self` says nothing
                self.reg.offer(value, name, "local", obj_prio + (30 if is_self else 0))
        elif self.is_optimizer(value):
            self.optimizers[id(value)] = value
            self.reg.offer(value, name, "local", obj_prio)
        elif self.is_scaler(value):
            self.scalers[id(value)] = value
            self.reg.offer(value, name, "local", obj_prio)
        elif depth == 0:
            # shallow containers and plain objects' attributes (e.g. `self.action_scale`)
            items = ()
            if isinstance(value, (list, tuple)):
                items = ((f"{name}[{i}]", v) for i, v in enumerate(value[:64]))
            elif isinstance(value, dict):
                items = ((f"{name}[{k!r}]", v) for k, v in list(value.items())[:64]
                         if isinstance(k, (str, int)))
            elif hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
                try:
                    attrs = vars(value)
                except BaseException:
                    attrs = {}
                if isinstance(attrs, dict):
                    items = ((f"{name}.{k}", v) for k, v in list(attrs.items())[:64]
                             if not k.startswith("__"))
            for sub_name, sub in items:
                self.scan_value(sub_name, sub, prio + 1, frame_idx, func, depth + 1, obj_prio + 1)

    def scan_frames(self, frames: list, roots: list[str]):
        """Innermost frames name things first (their names are what the user sees on screen)."""
        user = []
        n = len(frames)
        for idx in range(n - 1, -1, -1):
            frame, lineno = frames[idx]
            code = frame.f_code
            is_user = _is_user_file(code.co_filename, roots) and code.co_name not in (
                "__torch_dispatch__", "__torch_function__")
            if is_user:
                user.append((idx, frame, lineno))
            # user frames name better than library frames; deeper user frames first
            prio = (10 if is_user else 60) + (n - 1 - idx)
            try:
                local_items = list(frame.f_locals.items())
            except BaseException:  # noqa: BLE001
                continue
            for name, value in local_items:
                if name.startswith("__") and name != "__exception__":
                    continue
                if name == "__exception__":
                    continue
                self.scan_value(name, value, prio, idx, code.co_name, obj_prio=(10 if is_user else 100) + idx)
        return user

    # -- modules ------------------------------------------------------------------------------

    def name_modules(self):
        """Roots = modules that are nobody's child; name every parameter / buffer under them.

        Roots are named best-first, one at a time: naming one tree can give a better name to
        another root (a head kept in a plain Python list, `model.heads[0]`, is its own root)."""
        children = set()
        for m in list(self.modules.values()):
            try:
                for _, c in m.named_modules():
                    if c is not m:
                        children.add(id(c))
                        self.modules.setdefault(id(c), c)
            except BaseException:  # noqa: BLE001
                pass
        import heapq

        pending = {k: m for k, m in self.modules.items() if k not in children}
        prio = lambda k: (self.reg.get(pending[k]) or ("", "", 1 << 30))[2]  # noqa: E731
        heap = [(prio(k), k) for k in pending]
        heapq.heapify(heap)
        queued = set(pending)
        self.roots = []
        unnamed = 0
        while heap:
            p, key = heapq.heappop(heap)
            if key not in pending:
                continue
            if prio(key) != p:  # renamed since queued (e.g. found in a parent's list): requeue
                heapq.heappush(heap, (prio(key), key))
                continue
            root = pending.pop(key)
            if self.out_of_time():
                self.notes.append("time budget reached while naming modules: the rest is counted, not named")
                break
            rn = self.reg.get(root)
            if rn is None:
                unnamed += 1
                root_name = f"<{type(root).__name__}#{unnamed}>"
            else:
                root_name = rn[0]
            self.reg.offer(root, root_name, "module", 5)
            self.roots.append((root_name, root))
            try:
                named = list(root.named_modules())
            except BaseException:  # noqa: BLE001
                continue
            for sub, mod in named:
                try:
                    self._name_module(root_name, sub, mod, pending)
                except BaseException as e:  # noqa: BLE001 - one hostile module, not the report
                    self.hostile(f"{root_name}.{sub}", e)
            while self._discovered:
                k = self._discovered.pop()
                if k in pending and k not in queued:
                    queued.add(k)
                    heapq.heappush(heap, (prio(k), k))

    def _name_module(self, root_name: str, sub: str, mod, pending: dict):
        full = f"{root_name}.{sub}" if sub else root_name
        self.reg.offer(mod, full, "module", 5)
        for kind, items in (("parameter", mod._parameters), ("buffer", mod._buffers)):
            for pn, t in list(items.items()):
                if t is None:
                    continue
                self.tensors[id(t)] = t
                self.reg.offer(t, f"{full}.{pn}", kind, 3)
                g = getattr(t, "grad", None) if kind == "parameter" else None
                if g is not None:
                    self.tensors[id(g)] = g
                    self.reg.offer(g, f"{full}.{pn}.grad", "grad", 3)
        self._name_unregistered(mod, full, pending)

    def _name_unregistered(self, mod, full: str, pending: dict):
        """Plain attributes that Module.to() does not move: tensors, and modules or tensors held
        in Python lists / tuples / dicts (instead of nn.ModuleList / ModuleDict)."""
        try:
            attrs = list(vars(mod).items())
        except BaseException:
            return
        for an, av in attrs:
            if an.startswith("_"):
                continue
            if self.is_tensor(av):
                self.tensors[id(av)] = av
                self.reg.offer(av, f"{full}.{an}", "attribute", 4)
                continue
            if isinstance(av, (list, tuple)):
                items = [(f"{full}.{an}[{i}]", v) for i, v in enumerate(av[:64])]
            elif isinstance(av, dict):
                items = [(f"{full}.{an}[{k!r}]", v) for k, v in list(av.items())[:64] if isinstance(k, (str, int))]
            else:
                continue
            for name, v in items:
                if self.is_tensor(v):
                    self.tensors[id(v)] = v
                    self.reg.offer(v, name, "attribute", 4)
                elif self.is_module(v):
                    self.reg.offer(v, name, "module", 4)
                    if id(v) not in self.modules:
                        self.modules[id(v)] = v
                        pending[id(v)] = v
                        self._discovered.append(id(v))

    def module_tree(self):
        budget = [_MAX_TREE_NODES]

        def node(name, mod, short):
            budget[0] -= 1
            devs: dict[str, int] = {}
            own: dict[str, int] = {}
            try:
                for t in list(mod._parameters.values()) + list(mod._buffers.values()):
                    if t is not None:
                        d = _device_str(t)
                        own[d] = own.get(d, 0) + int(t.nelement())
            except BaseException:  # noqa: BLE001
                pass
            kids = []
            for cn, child in list(getattr(mod, "_modules", {}).items()):
                if child is None:
                    continue
                if budget[0] <= 0:
                    self.truncated = True
                    kids.append({"name": f"{name}.{cn}", "short": cn, "type": type(child).__name__,
                                 "elided": True, "devices": {}, "own_devices": {}, "split": False,
                                 "children": []})
                    continue
                kids.append(node(f"{name}.{cn}", child, cn))
            for d, c in own.items():
                devs[d] = devs.get(d, 0) + c
            for k in kids:
                for d, c in k["devices"].items():
                    devs[d] = devs.get(d, 0) + c
            return {"name": name, "short": short, "type": type(mod).__name__, "devices": devs,
                    "own_devices": own, "split": len(devs) > 1, "children": kids}

        out = []
        for i, (n, m) in enumerate(self.roots):
            if i >= _MAX_ROOTS or budget[0] <= 0:
                rest = len(self.roots) - i
                self.truncated = True
                out.append({"name": f"<{rest} more module trees>", "short": f"+{rest} more", "type": "",
                            "elided": True, "devices": {}, "own_devices": {}, "split": False,
                            "children": []})
                break
            out.append(node(n, m, n))
        return out

    # -- optimizers and scalers ------------------------------------------------------------------

    def optimizer_reports(self):
        out = []
        for i, (oid, opt) in enumerate(list(self.optimizers.items())):
            rn = self.reg.get(opt)
            oname = rn[0] if rn else f"<{type(opt).__name__}#{i}>"
            self.reg.offer(opt, oname, "optimizer", 5)
            param_devs: dict[str, int] = {}
            state_devs: dict[str, int] = {}
            mismatches = []
            try:
                groups = opt.param_groups
                state = opt.state
            except BaseException:  # noqa: BLE001
                continue
            for gi, group in enumerate(groups):
                for pi, p in enumerate(group.get("params", [])):
                    pd = _device_str(p)
                    param_devs[pd] = param_devs.get(pd, 0) + 1
                    pn = self.reg.get(p)
                    pname = pn[0] if pn else f"param_groups[{gi}]['params'][{pi}]"
                    self.tensors[id(p)] = p
                    self.reg.offer(p, f"{oname}.param_groups[{gi}]['params'][{pi}]", "parameter", 6)
                    st = state.get(p) if hasattr(state, "get") else None
                    if not st:
                        continue
                    for key, v in list(st.items()):
                        if not self.is_tensor(v):
                            continue
                        sname = f"{oname}.state[{pname}][{key!r}]"
                        self.tensors[id(v)] = v
                        self.reg.offer(v, sname, "optimizer-state", 2)
                        sd = _device_str(v)
                        state_devs[sd] = state_devs.get(sd, 0) + 1
                        legal_step = key == "step" and (sd == "cpu" and v.dim() == 0)
                        if sd != pd and not legal_step:
                            mismatches.append({"name": sname, "device": sd, "param": pname,
                                               "param_device": pd, "shape": _shape(v)})
            out.append({"name": oname, "type": type(opt).__name__, "param_devices": param_devs,
                        "state_devices": state_devs, "mismatches": mismatches[: self.max_names],
                        "mismatch_count": len(mismatches)})
        return out

    def scaler_reports(self):
        out = []
        for i, sc in enumerate(self.scalers.values()):
            rn = self.reg.get(sc)
            sname = rn[0] if rn else f"<GradScaler#{i}>"
            entry = {"name": sname, "device": str(getattr(sc, "_device", "")), "tensors": {}}
            for attr in ("_scale", "_growth_tracker"):
                t = getattr(sc, attr, None)
                if t is not None and self.is_tensor(t):
                    self.tensors[id(t)] = t
                    self.reg.offer(t, f"{sname}.{attr}", "scaler-state", 4)
                    entry["tensors"][attr] = _device_str(t)
            out.append(entry)
        return out

    # -- gc -------------------------------------------------------------------------------------

    def gc_scan_objects(self) -> list:
        """One pass over gc: collects modules, optimizers and scalers, and returns every live
        tensor (counted later, once naming is done).  Classification is cached per type: the loop
        does one dict lookup per object, which keeps 1M live tensors within budget."""
        torch = self.torch
        kinds: dict = {}
        tensors: list = []
        try:
            objs = gc.get_objects()
        except BaseException:  # noqa: BLE001
            return tensors
        tensor_cls, module_cls, optim_cls = torch.Tensor, torch.nn.Module, torch.optim.Optimizer
        scaler_cls = self.scaler_classes
        add = tensors.append
        for o in objs:
            tp = type(o)
            k = kinds.get(tp)
            if k is None:
                try:
                    k = (1 if issubclass(tp, tensor_cls) else 2 if issubclass(tp, module_cls)
                         else 3 if issubclass(tp, optim_cls) else 4 if scaler_cls and issubclass(tp, scaler_cls)
                         else 0)
                except BaseException:
                    k = 0
                kinds[tp] = k
            if k == 0:
                continue
            if k == 1:
                add(o)
            elif k == 2:
                self.modules.setdefault(id(o), o)
            elif k == 3:
                self.optimizers.setdefault(id(o), o)
            else:
                self.scalers.setdefault(id(o), o)
        del objs
        return tensors

    def count_unnamed(self, tensors: list) -> dict:
        """Counts and bytes by device of the tensors nobody named (the aggregate), plus a sample
        of each device's first few for the listing.  Keyed by torch.device: str() per tensor
        would cost more than everything else together."""
        known = self.tensors
        cap = self.max_names
        counts: dict = {}
        for t in tensors:
            if id(t) in known:
                continue
            try:
                dev = t.device
                c = counts.get(dev)
                if c is None:
                    counts[dev] = c = [0, 0, []]
                c[0] += 1
                c[1] += t.nbytes
                if len(c[2]) < cap:
                    c[2].append(t)
            except BaseException:  # noqa: BLE001 - exotic subclasses
                continue
        return {str(d): c for d, c in counts.items()}


# --------------------------------------------------------------------------------------------
# Report


def _rank():
    for var in ("RANK", "LOCAL_RANK"):
        v = os.environ.get(var)
        if v is not None and v.isdigit():
            return {"rank": int(v), "local_rank": int(os.environ.get("LOCAL_RANK", v) or 0),
                    "world_size": int(os.environ.get("WORLD_SIZE", "1") or 1)}
    return None


def placement_report(exc=None, *, max_names: int = 200, time_budget: float = 2.0,
                     gc_scan: bool = True, frames=None) -> dict:
    """Build the placement report for `exc` (default: the exception being handled, if any)."""
    start = time.perf_counter()
    if exc is None:
        exc = sys.exc_info()[1]
    if isinstance(exc, tuple) and len(exc) == 3:  # pydevd's __exception__ = (type, value, tb)
        exc = exc[1]
    report: dict = {"version": REPORT_VERSION, "tool": "devflow", "pid": os.getpid(), "rank": _rank(),
                    "torch": None, "error": None, "location": None, "frames": [], "devices": {},
                    "modules": [], "optimizers": [], "scalers": [], "culprit": None, "notes": [],
                    "truncated": False, "elapsed_s": 0.0}
    if exc is not None:
        try:
            text = str(exc)
        except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
            text = ""
        parsed = _messages.parse_message(text, type(exc).__name__) if _messages else None
        report["error"] = {"type": type(exc).__name__, "message": text[:4000], "parsed": parsed,
                           "cross_device": parsed is not None}
    torch = _torch()
    if torch is None:
        report["notes"].append("torch is not loaded in this process: no tensors to report")
        report["elapsed_s"] = round(time.perf_counter() - start, 4)
        return report
    report["torch"] = getattr(torch, "__version__", "?")

    probe = _Probe(exc, max_names, time_budget, gc_scan)
    roots = _library_roots()
    frame_list = frames if frames is not None else _frames_from_exc(exc)
    user = probe.scan_frames(frame_list, roots)
    for idx, frame, lineno in sorted(user, key=lambda u: u[0]):
        report["frames"].append({"file": frame.f_code.co_filename, "line": lineno,
                                 "function": frame.f_code.co_name,
                                 "code": _source_line(frame.f_code.co_filename, lineno)})
    if report["frames"]:
        report["location"] = report["frames"][-1]

    gc_tensors: list = []
    if gc_scan:
        import warnings

        with warnings.catch_warnings():  # touching deprecated torch aliases warns
            warnings.simplefilter("ignore")
            gc_tensors = probe.gc_scan_objects()
    # Each part on its own: an object that raises while one part inspects it costs that part only.
    _part(probe, "naming modules", probe.name_modules)
    report["optimizers"] = _part(probe, "optimizers", probe.optimizer_reports, [])
    report["scalers"] = _part(probe, "GradScalers", probe.scaler_reports, [])
    report["modules"] = _part(probe, "module trees", probe.module_tree, [])
    aggregate = _part(probe, "counting tensors", lambda: probe.count_unnamed(gc_tensors), {})
    del gc_tensors

    report["devices"] = _part(probe, "tensors by device", lambda: _group_by_device(probe, aggregate, max_names), {})
    report["culprit"] = _part(probe, "the culprit", lambda: _find_culprit(probe, report, user), None)
    report["notes"].extend(probe.notes)
    report["truncated"] = probe.truncated
    report["elapsed_s"] = round(time.perf_counter() - start, 4)
    # Release our references to the debuggee's objects before returning.
    probe.reg.keep.clear()
    return report


def _part(probe: _Probe, what: str, fn, default=None):
    try:
        return fn()
    except BaseException as e:  # noqa: BLE001 - hostile objects raise anything, even SystemExit
        probe.notes.append(f"{what}: skipped, an object raised {type(e).__name__} while inspected")
        return default


def _tensor_entry(probe: _Probe, t, name_info) -> dict:
    name, origin, _ = name_info if name_info else (None, "gc", 0)
    e = {"name": name, "origin": origin, "device": _device_str(t), "shape": _shape(t),
         "dtype": _dtype(t), "bytes": _nbytes(t)}
    if origin == "local" and id(t) in probe.name_frames:
        e["frame"] = probe.name_frames[id(t)]
    aka = [a for a in probe.reg.aliases.get(id(t), ()) if a != name][:3]
    if aka:
        e["aliases"] = aka
    return e


_ORIGIN_ORDER = {"local": 0, "optimizer-state": 1, "parameter": 2, "buffer": 3, "attribute": 4,
                 "grad": 5, "scaler-state": 6, "gc": 9}


def _group_by_device(probe: _Probe, aggregate: dict, max_names: int) -> dict:
    groups: dict[str, dict] = {}
    for tid, t in probe.tensors.items():
        d = _device_str(t)
        g = groups.get(d)
        if g is None:
            groups[d] = g = {"count": 0, "bytes": 0, "named": 0, "tensors": [], "_cand": []}
        g["count"] += 1
        g["bytes"] += _nbytes(t)
        info = probe.reg.get(t)
        if info:
            g["named"] += 1
        g["_cand"].append((t, info))
    for d, (c, b, sample) in aggregate.items():
        g = groups.setdefault(d, {"count": 0, "bytes": 0, "named": 0, "tensors": [], "_cand": []})
        g["count"] += c
        g["bytes"] += b
        g["_cand"].extend((t, None) for t in sample)
    for d, g in groups.items():
        cand = g.pop("_cand")
        # user-visible names first; names taken from torch-internal locals (prio >= 60) last
        cand.sort(key=lambda ti: (0 if ti[1] and ti[1][2] < 60 else 1 if ti[1] else 2,
                                  _ORIGIN_ORDER.get(ti[1][1] if ti[1] else "gc", 9),
                                  ti[1][2] if ti[1] else 1 << 30, ti[1][0] if ti[1] else ""))
        shown = cand[:max_names]
        g["tensors"] = [_tensor_entry(probe, t, info) for t, info in shown]
        g["unlisted"] = g["count"] - len(shown)
        if g["unlisted"] > 0:
            probe.truncated = True
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]["bytes"]))


# --------------------------------------------------------------------------------------------
# Culprit


def _param_elements_by_device(probe: _Probe) -> dict:
    """Parameter + buffer elements per device over every module tree and optimizer (each tensor
    once): where the program put its model is where it means to compute."""
    seen: set = set()
    by_dev: dict[str, int] = {}

    def add(t):
        if t is None or id(t) in seen:
            return
        seen.add(id(t))
        d = _device_str(t)
        try:
            n = int(t.nelement())
        except BaseException:  # noqa: BLE001
            n = 0
        by_dev[d] = by_dev.get(d, 0) + n + 1

    roots = [r for _, r in getattr(probe, "roots", [])]
    # The model the failing stack runs, when it can be told from the rest of the process's modules
    # (a teacher, an EMA copy or an unrelated model elsewhere in memory does not vote).
    running = []
    for root in roots:
        try:
            if any(id(m) in probe.frame_modules for m in root.modules()):
                running.append(root)
        except BaseException:  # noqa: BLE001
            pass
    for root in running or roots:
        try:
            for t in root.parameters():
                add(t)
            for t in root.buffers():
                add(t)
        except BaseException:  # noqa: BLE001 - a broken module says nothing
            pass
    for opt in list(probe.optimizers.values()):
        try:
            for group in opt.param_groups:
                for p in group.get("params", []):
                    add(p)
        except BaseException:  # noqa: BLE001
            pass
    return by_dev


def _user_locals_on(probe: _Probe, device: str) -> bool:
    """A tensor the user's own code holds in a local on `device` (an input they moved there)."""
    for tid, t in probe.tensors.items():
        info = probe.reg.get(t)
        if info and info[1] == "local" and info[2] < 60 and _same_device(_device_str(t), device):
            return True
    return False


def _running_root_names(probe: _Probe) -> set:
    """Root names (first component) of the module trees the failing stack holds."""
    out = set()
    for name, root in getattr(probe, "roots", []):
        try:
            if any(id(m) in probe.frame_modules for m in root.modules()):
                out.add(name.split(".")[0].split("[")[0])
        except BaseException:  # noqa: BLE001
            pass
    return out


def _intended_device(probe: _Probe, candidates: list[str]) -> tuple[str | None, str]:
    """The device the program means to compute on, among the message's devices, and why.

    - the model is split: the device holding most parameter/buffer elements (the few elsewhere
      were added or built after the move);
    - the model is all on one device: that device, unless it is the cpu and the user's own locals
      sit on an accelerator (the inputs were moved, the model never was);
    - no model: None (the caller falls back on the message)."""
    by_dev = _param_elements_by_device(probe)
    on_cand: dict[str, int] = {}
    for d, n in by_dev.items():
        c = next((c for c in candidates if _same_device(d, c)), None)
        if c is not None:
            on_cand[d] = on_cand.get(d, 0) + n
    total = sum(by_dev.values())
    if len(on_cand) >= 2:
        ranked = sorted(on_cand.items(), key=lambda kv: -kv[1])
        if ranked[0][1] == ranked[1][1]:
            return None, ""
        share = 100 * ranked[0][1] // max(total, 1)
        return ranked[0][0], f"{share}% of the model's parameters are on {ranked[0][0]}"
    if len(on_cand) == 1:
        home = next(iter(on_cand))
        if not _is_accelerator(home):
            for c in candidates:
                if _is_accelerator(c) and _user_locals_on(probe, c):
                    return c, f"the inputs were moved to {c}, the model's parameters all stayed on {home}"
        return home, f"the model's parameters are on {home}"
    return None, ""


def _pick_odd_device(probe: _Probe, parsed: dict) -> tuple[str | None, str | None, str]:
    """(odd, expected, why).  Decided from the placement, not from which argument the message
    happens to name first (torch names the first argument that differs from the first tensor's
    device: with the input on cuda and a head left on cpu it names the input).  Without a model
    to decide: a CPU tensor among accelerator tensors is the odd one (something never moved),
    then the message's own found / expected."""
    found, expected = parsed.get("found_device"), parsed.get("expected_device")
    devices = [d for d in (parsed.get("devices") or []) if d]
    if parsed.get("family") in ("meta-copy", "index-device", "numpy-cuda", "deserialize-cuda",
                                "dataparallel-module-device", "ddp-device-ids", "generator-device"):
        # one-sided messages: the wording itself says what is odd (DataParallel / DDP / a generator
        # state the device they need; the others name the one device involved)
        return found, expected, ""
    cands = list(dict.fromkeys(devices + [d for d in (found, expected) if d]))
    if len(cands) >= 2:
        home, why = _intended_device(probe, cands)
        if home:
            odd = [d for d in cands if not _same_device(d, home)]
            if odd:
                return odd[0], home, why
        a, b = cands[0], cands[1]
        if (a == "cpu") != (b == "cpu") and len(cands) == 2:
            return "cpu", (b if a == "cpu" else a), ""
        if found and expected and parsed.get("family") != "meta-expected-device":
            return found, expected, ""
        return b, a, ""
    if found and parsed.get("family") != "meta-copy":
        return found, expected, ""
    return found, expected, ""


def _idents(code: str) -> set:
    return set(_IDENT.findall(code or ""))


def _find_culprit(probe: _Probe, report: dict, user: list) -> dict | None:
    err = report.get("error") or {}
    parsed = err.get("parsed")
    loc = report.get("location") or {}
    if not parsed:
        return None
    culprit = {"family": parsed.get("family"), "op": parsed.get("op"), "argument": parsed.get("argument"),
               "device": None, "expected_device": None, "tensors": [], "module": None,
               "optimizer": None, "whole_module": False, "file": loc.get("file"), "line": loc.get("line"),
               "function": loc.get("function"), "code": loc.get("code"), "hint": parsed.get("hint"),
               "summary": ""}
    odd, expected, why = _pick_odd_device(probe, parsed)
    culprit["intended_by"] = why
    # Devices in messages may be unindexed ("cuda"); use the concrete device of live tensors.
    live = list(report["devices"].keys())
    for d in live:
        if odd and _same_device(d, odd):
            odd = d
        elif expected and _same_device(d, expected):
            expected = d
    culprit["device"], culprit["expected_device"] = odd, expected
    if not odd:
        culprit["summary"] = _summary(culprit, parsed)
        return culprit

    code_names = _idents(loc.get("code", ""))
    innermost_user_idx = user[0][0] if user else -1
    optim_in_stack = False  # the error passed through optimizer / AMP code
    tb = getattr(probe.exc, "__traceback__", None)
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if "/torch/optim/" in fn or "/torch/amp/" in fn:
            optim_in_stack = True
        tb = tb.tb_next
    mism = {m["name"] for o in report["optimizers"] for m in o["mismatches"]}
    expected_split = set()
    running = _running_root_names(probe)
    for root in report["modules"]:
        _collect_split(root, expected, expected_split)

    scored = []
    for tid, t in probe.tensors.items():
        d = _device_str(t)
        if not _same_device(d, odd):
            continue
        info = probe.reg.get(t)
        name, origin = (info[0], info[1]) if info else (None, "gc")
        score = 0
        root = name.split(".")[0].split("[")[0] if name else ""
        fr = probe.tensor_frames.get(tid)
        library_name = bool(info) and info[2] >= 60  # only named by a torch-internal local
        if fr is not None and fr[0] > innermost_user_idx >= 0:
            score += 20 if library_name else 60  # an argument of the failing library call
        if fr is not None and fr[0] == innermost_user_idx:
            score += 40
        if root and root in code_names:
            score += 50
        if name in mism:
            score += 90 if optim_in_stack else 30
        if origin in ("parameter", "buffer", "attribute") and name:
            owner = name.rsplit(".", 1)[0]
            if any(owner == s or owner.startswith(s + ".") for s in expected_split):
                score += 45
            if running and name.split(".")[0].split("[")[0] not in running and fr is None:
                score -= 70  # a module tree nothing on the failing stack holds (found by gc)
            if origin == "attribute":
                score += 10  # an unregistered tensor attribute never follows Module.to()
        if parsed.get("family") == "dataparallel-module-device" and origin in ("parameter", "buffer"):
            score += 60  # the message is about the wrapped module's own parameters and buffers
        arg = parsed.get("argument")
        if arg and name and re.split(r"[.\[]", name)[-1].strip("'\"]") == arg:
            score += 25  # the message names the argument (`weight`, `mat2`, `index`)
        if origin == "grad":
            score -= 20
        if not name:
            score -= 50
        elif library_name:
            score -= 10
        scored.append((score, name or "", t, info, library_name or not name))
    scored.sort(key=lambda s: (-s[0], -_nbytes(s[2]), s[1]))
    positive = [s for s in scored if s[0] > 0]
    # Names of torch-internal locals (`mat2`, `args[1]`) only when nothing better is known.
    top = ([s for s in positive if not s[4]] or positive or scored[:3])[:_MAX_CULPRITS]
    culprit["tensors"] = []
    for sc, _, t, info, weak in top:
        e = _tensor_entry(probe, t, info)
        e["score"] = sc
        if weak and info:
            e["library_name"] = True
        culprit["tensors"].append(e)

    best = culprit["tensors"][0] if culprit["tensors"] else None
    if best and best.get("name") and best["origin"] in ("parameter", "buffer", "attribute", "grad"):
        owner = best["name"].rsplit(".", 1)[0]
        if best["origin"] == "grad":
            owner = owner.rsplit(".", 1)[0]
        if best["origin"] in ("parameter", "buffer"):
            owner, whole = _widest_module_on(report["modules"], owner, odd)
            culprit["whole_module"] = whole
        culprit["module"] = owner
    if best and best.get("origin") == "optimizer-state":
        culprit["optimizer"] = best["name"].split(".state[")[0]
    fidx = {}
    if top:
        fr = probe.tensor_frames.get(id(top[0][2]))
        if best is not None and fr is not None:
            best["_t"] = top[0][2]
            fidx[id(top[0][2])] = fr[0]
    culprit["created"] = _creation_site(culprit, user, fidx)
    if best is not None:
        best.pop("_t", None)
    culprit["summary"] = _summary(culprit, parsed)
    return culprit


def _assign_rx(attr: str):
    # `attr = ...`, `obj.attr = ...`, `attr: T = ...`; not `==`, not keyword arguments `f(attr=...)`
    return re.compile(r"^\s*(?:[\w\[\]'\".]+\.)?" + re.escape(attr) + r"\s*(?::[^=]*)?=(?!=)")


def _creation_site(culprit: dict, user: list, frames_by_idx: dict) -> dict | None:
    """Where the odd object was last assigned, read from the user's source: for a module or an
    attribute, the last assignment of that attribute before the outermost user frame's current
    line in its file (else anywhere in the user's files); for a local, the last assignment in its
    own function before the failing line.  None when the source does not say."""
    best = culprit["tensors"][0] if culprit.get("tensors") else None
    target = culprit.get("module") or (best or {}).get("name")
    if not target or target.startswith("<") or (best and best.get("library_name") and not culprit.get("module")):
        return None  # torch's own names (`args[0]`, `mat2`) say nothing about the user's source
    if best and best.get("origin") == "local" and not culprit.get("module") and "[" in target:
        return None  # an element of a local container: the container's line is not the element's
    try:
        import linecache

        last = re.split(r"[.\[]", target.rstrip("]"))
        attr = next((p for p in reversed(last) if _IDENT.fullmatch(p or "")), None)
        if target.endswith("]"):  # model.heads[0] -> the list attribute `heads`
            attr = _IDENT.findall(target.rsplit("[", 1)[0])[-1]
        if not attr:
            return None
        rx = _assign_rx(attr)
        if best and best.get("origin") == "local" and not culprit.get("module") and "." not in target \
                and "[" not in target:
            fidx = frames_by_idx.get(id(best.get("_t")))
            for idx, frame, lineno in user:
                if fidx is not None and idx != fidx:
                    continue
                code = frame.f_code
                for ln in range(lineno - 1, code.co_firstlineno - 1, -1):
                    text = linecache.getline(code.co_filename, ln)
                    if rx.match(text):
                        return {"file": code.co_filename, "line": ln, "code": text.strip()[:_MAX_CODE]}
                if fidx is not None:
                    break
            return None
        if not user:
            return None
        outer_idx, outer_frame, outer_line = min(user, key=lambda u: u[0])
        files = list(dict.fromkeys([outer_frame.f_code.co_filename] + [f.f_code.co_filename for _, f, _ in user]))
        fallback = None
        for fn in files:
            lines = linecache.getlines(fn)
            limit = outer_line - 1 if fn == outer_frame.f_code.co_filename else len(lines)
            for ln in range(min(limit, len(lines)), 0, -1):
                if rx.match(lines[ln - 1]):
                    site = {"file": fn, "line": ln, "code": lines[ln - 1].strip()[:_MAX_CODE]}
                    if fn == outer_frame.f_code.co_filename:
                        return site
                    fallback = fallback or site
                    break
        return fallback
    except BaseException:  # noqa: BLE001 - reading source is best effort
        return None


def _widest_module_on(roots: list, owner: str, device: str) -> tuple[str, bool]:
    """The highest module on the path to `owner` whose whole subtree is on `device` (a model that
    was never moved is the culprit, not its first layer); whether that is the entire tree."""
    for root in roots:
        if not (owner == root["name"] or owner.startswith(root["name"] + ".")):
            continue
        node, path = root, [root]
        while node["name"] != owner:
            nxt = next((k for k in node["children"] if owner == k["name"] or owner.startswith(k["name"] + ".")), None)
            if nxt is None:
                break
            node = nxt
            path.append(node)
        for i, n in enumerate(path):
            devs = n.get("devices") or {}
            if devs and all(_same_device(d, device) for d in devs):
                return n["name"], i == 0
        return owner, False
    return owner, False


def _collect_split(node: dict, expected: str | None, out: set):
    """Modules holding tensors on the odd device while their parent is on the expected one."""
    devs = node.get("devices") or {}
    if node.get("split") or (expected and any(_same_device(d, expected) for d in devs)):
        for k in node.get("children", []):
            kd = k.get("devices") or {}
            if kd and expected and not any(_same_device(d, expected) for d in kd):
                out.add(k["name"])
            _collect_split(k, expected, out)
        od = node.get("own_devices") or {}
        if od and expected and not any(_same_device(d, expected) for d in od) and node.get("split"):
            out.add(node["name"])


def _summary(c: dict, parsed: dict) -> str:
    where = f" at {os.path.basename(c['file'] or '?')}:{c['line']}" if c.get("line") else ""
    if not c.get("tensors"):
        base = parsed.get("hint") or f"cross-device error ({parsed.get('family')})"
        if c.get("device") and c.get("expected_device") and not parsed.get("hint"):
            base = f"something on {c['device']} met {c['expected_device']}: {base}"
        return base + where
    t = c["tensors"][0]
    kind = {"parameter": "parameter", "buffer": "buffer", "attribute": "plain tensor attribute",
            "optimizer-state": "optimizer state", "grad": "gradient", "scaler-state": "GradScaler state",
            "local": f"local in {t.get('frame')}()" if t.get("frame") else "tensor"}.get(t["origin"], "tensor")
    if t.get("aliases"):
        kind += f", also {t['aliases'][0]}"
    if t.get("library_name") or not t["name"]:
        s = f"a temporary {t['dtype']}{t['shape']} tensor"
        if t["name"]:
            s += f" (torch calls it `{t['name']}`)"
        s += f" is on {t['device']}"
    else:
        s = f"{t['name']} ({kind}) is on {t['device']}"
    if c.get("expected_device"):
        s += f", the rest is on {c['expected_device']}"
    elif parsed.get("family") == "index-device":
        s += ", indexed by indices on another device"
    mod = c.get("module") or ""
    if t["origin"] == "attribute" and (t["name"] or "").endswith("]"):
        s += "; it sits in a plain Python list/dict, which Module.to() does not move"
    elif t["origin"] == "attribute":
        s += "; a plain tensor attribute does not follow Module.to() (register_buffer it)"
    elif mod.endswith("]"):
        s += f"; {mod} sits in a plain Python list/dict, which Module.to() does not move (use nn.ModuleList/ModuleDict)"
    elif mod and c.get("whole_module"):
        s += f"; {mod} is entirely on {t['device']}: it was never moved"
    elif mod and t["origin"] != "optimizer-state":
        s += f"; module {mod} was not moved"
    elif t["origin"] == "optimizer-state":
        s += "; the optimizer state was loaded or created on another device than its parameters"
    s += where
    site = c.get("created")
    if site:
        what = mod or t["name"] or "it"
        s += f" ({what} set at {os.path.basename(site['file'])}:{site['line']})"
    # The message's own words, as supporting detail (torch names the first argument that differs
    # from the first tensor, which is not necessarily the odd one).
    detail = [x for x in (parsed.get("argument") and f"argument {parsed['argument']}",
                          parsed.get("op") and f"in {parsed['op']}") if x]
    if detail:
        s += f" (torch: {' '.join(detail)})"
    return s


def placement_report_json(exc=None, **kwargs) -> str:
    """Compact JSON; never raises (a failure is reported inside the JSON)."""
    try:
        rep = placement_report(exc, **kwargs)
    except BaseException as e:  # noqa: BLE001 - the probe must never break the debuggee
        rep = {"version": REPORT_VERSION, "tool": "devflow", "probe_error": f"{type(e).__name__}: {e}"}
    return json.dumps(rep, separators=(",", ":"), default=str)
