"""Project helpers that move what they are given: `def move_device_like(src, dst): return src.to(dst.device)`
(detectron2's way to cast an input to the model's device, scripted so that tracing keeps the device a run-time
value). `x = helper(x, self.conv.weight)` as forward()'s first use of `x` moves the caller's input as
`x = x.to(...)` would. A decorator from torch.jit (script_if_tracing, script, ignore ...) compiles the same
Python semantics; any other decorator may wrap the function into something else and is not looked through."""

from __future__ import annotations

import ast

from devflow.analysis.index import FileIndex


def moved_param(fn, index) -> int | None:
    """The position of the parameter `fn` returns moved to a device (`return p.to(...)` / `.cuda(...)` as its
    only statement, a docstring aside), or None."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _plain_or_jit(fn, index):
        return None
    body = [st for st in fn.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr in ("to", "cuda") and isinstance(f.value, ast.Name)):
        return None
    if f.attr == "to" and not _device_argument(call):
        return None
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return params.index(f.value.id) if f.value.id in params else None


def _device_argument(call: ast.Call) -> bool:
    """`.to(u.device)`, `.to(device=...)`, `.to("cuda")`: a move, not a dtype cast."""
    if any(k.arg == "device" for k in call.keywords):
        return True
    a = call.args[0] if call.args else None
    return isinstance(a, ast.Attribute) and a.attr == "device" or isinstance(a, ast.Constant) and isinstance(a.value, str)


def _plain_or_jit(fn, index) -> bool:
    for d in fn.decorator_list:
        q = index.qualify(FileIndex.dotted(d.func if isinstance(d, ast.Call) else d) or "") if index is not None else ""
        if not q.startswith("torch.jit."):
            return False
    return True


def project_function(interp, name: str, home):
    """The project function (its def and the index of its file) that `name` means in the module whose index is
    `home` (defined there or imported into it), or None."""
    unit = interp.unit_of_index(home) if interp.units else None
    frame = unit.module_frame if unit is not None else interp.module_frame
    f = frame.env.get(name)
    if f is None and name in home.aliases and interp.project is not None:
        f = interp.project_val(home.aliases[name])  # `from wrappers import move_device_like`
    if f is None or f.kind != "func" or f.func is None or not isinstance(f.func.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    unit_of_fn = getattr(f.func, "unit", None)
    return f.func.node, unit_of_fn.index if unit_of_fn is not None else home
