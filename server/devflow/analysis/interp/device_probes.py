"""Device probes: a `try` whose body only tries a device out (`torch.zeros(1).to(device)`,
`torch.tensor(0, device=device)`, kept or thrown away, next to warnings and plain assignments) reaches
its handlers only when that device is unavailable or invalid. The analysis runs on a machine with CUDA
(see records.py), where a probe of a known device succeeds: the handler's fallback (`device = "cpu"`)
does not run there, as the else side of `"cuda" if torch.cuda.is_available() else "cpu"` does not.
A probe of a device the analysis does not know (a string read at run time) may fail: handlers join."""

from __future__ import annotations

import ast

from devflow.analysis import torch_api as T
from devflow.analysis.lattice import concrete

_NO_DEVICE = object()  # `.cuda()`: the current GPU, always a device
_QUIET_CALLS = frozenset({"warnings.warn", "print"})


def probe_only(interp, body, frame) -> bool:
    """True when `body` (already run in `frame`) probes at least one known device and does nothing that
    could raise for another reason."""
    probes = 0
    for st in body:
        if isinstance(st, ast.Pass):
            continue
        if isinstance(st, ast.Expr):
            value = st.value
        elif isinstance(st, ast.Assign) and all(isinstance(t, (ast.Name, ast.Attribute)) for t in st.targets):
            value = st.value
        else:
            return False
        dev = _probed_device(interp, value, frame)
        if dev is not None:
            if dev is not _NO_DEVICE and not _known_device(interp, dev, frame):
                return False
            probes += 1
        elif not _quiet(interp, value, frame):
            return False
    return probes > 0


def _probed_device(interp, value, frame):
    """The device expression a probe tries: `<fresh tensor>.to(d)` / `.cuda()`, `torch.<factory>(..., device=d)`."""
    if not isinstance(value, ast.Call):
        return None
    f = value.func
    if isinstance(f, ast.Attribute) and f.attr in ("to", "cuda") and isinstance(f.value, ast.Call) \
            and _probed_device(interp, f.value, frame) is None and _fresh(interp, f.value, frame):
        if f.attr == "cuda" and not value.args and not value.keywords:
            return _NO_DEVICE
        if f.attr == "to" and len(value.args) == 1 and not value.keywords:
            return value.args[0]
        return None
    if _fresh(interp, value, frame):
        return next((k.value for k in value.keywords if k.arg == "device"), None)
    return None


def _fresh(interp, call: ast.Call, frame) -> bool:
    """A torch factory call of constants (`torch.zeros(1)`, `torch.tensor(0)`): a new tensor nothing else
    holds, whose making cannot fail but for its device (data the program passes could)."""
    q = interp.qualname(call.func, frame)
    return q is not None and q.startswith("torch.") and q.rsplit(".", 1)[-1] in T.FACTORIES \
        and all(_constant(a) for a in call.args) \
        and all(k.arg in ("device", "dtype", "requires_grad") for k in call.keywords)


def _constant(e) -> bool:
    if isinstance(e, ast.Constant):
        return True
    if isinstance(e, (ast.Tuple, ast.List)):
        return all(_constant(x) for x in e.elts)
    return isinstance(e, ast.UnaryOp) and _constant(e.operand)


def _known_device(interp, expr, frame) -> bool:
    if not isinstance(expr, (ast.Name, ast.Attribute, ast.Constant)):
        return False
    v = interp.eval(expr, frame)
    if v.kind == "const" and isinstance(v.const, str):
        return concrete(v.const) is not None
    return v.kind == "device" and v.dev is not None and v.dev.known


def _quiet(interp, value, frame) -> bool:
    """A value or call that does not raise: a name, constant or attribute read; a warning, print or log line."""
    if isinstance(value, (ast.Name, ast.Constant, ast.Attribute)):
        return True
    if isinstance(value, ast.Call):
        q = interp.qualname(value.func, frame)
        return q is not None and (q in _QUIET_CALLS or q.startswith("logging."))
    return False
