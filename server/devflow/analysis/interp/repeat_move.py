"""Repeating a model's recorded move: the fix of a submodule built after the move (DEV101, DEV102).

`model.to(device)` moves every submodule the model has at that moment; one built later (timm's
`reset_classifier()` one call deeper, `model.head.fc = nn.Linear(...)`) stays on cpu. The fix repeats
the move that placed the model, where it is still the same move: in the scope that made it, the
receiver still that model, no name the move reads rebound since, and a move that names a device
(`.to(torch.float16)` changes the dtype only and would leave the new layer on cpu).
"""

from __future__ import annotations

import ast

from devflow.analysis.interp.frames import DTYPES, Frame, is_dotted_name
from devflow.analysis.values import Obj, Origin

_SIMPLE = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)


def record_move(interp, origin: Origin, recv_text: str, move_text: str, frame: Frame) -> None:
    """Remember a module move (every object it placed shares `origin`): its receiver and call text,
    the frame and the statement that made it. `model = Net().to(d)` is repeated as `model.to(d)`."""
    st = frame.stmt_stack[-1] if frame.stmt_stack else None
    if not is_dotted_name(recv_text) and isinstance(st, (ast.Assign, ast.AnnAssign)):
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        if len(targets) == 1 and isinstance(targets[0], (ast.Name, ast.Attribute)):
            recv_text = interp.text(targets[0])
    interp.moves_made[id(origin)] = (origin, recv_text, move_text, frame)


def repeated_move(interp, parent: Obj, frame: Frame, at_line: int) -> tuple[str, str] | None:
    """(receiver, `.to(...)` text) of the move that placed `parent` (its own, or its model's), when
    repeating it after line `at_line` of `frame` moves the same model to the same device."""
    moved = parent.moved
    rec = interp.moves_made.get(id(moved)) if moved is not None else None
    if rec is None or rec[0] is not moved:
        return None
    _, recv, mc, mframe = rec
    if mframe is not frame or not is_dotted_name(recv) or not _names_a_device(mc):
        return None
    held = _resolve(interp, recv, frame)
    if held is None or held.moved is not moved:
        return None  # the name now holds another model (or the model was moved again since)
    names = {recv.split(".", 1)[0]} | _reads(mc)
    if _rebound_between(frame.node, names, moved.span.line, at_line):
        return None
    return recv, mc


def move_text_after(interp, moved_obj: Obj, frame: Frame, at_line: int) -> str | None:
    """The move call text (`.to(device)`) that placed `moved_obj`, when applying it to the model's
    new holder after line `at_line` (`model = convert(model)`: the name holds the converted model)
    moves it the same way: same scope, a move that names a device, none of its names rebound since."""
    moved = moved_obj.moved
    rec = interp.moves_made.get(id(moved)) if moved is not None else None
    if rec is None or rec[0] is not moved or rec[3] is not frame or not _names_a_device(rec[2]):
        return None
    if _rebound_between(frame.node, _reads(rec[2]), moved.span.line, at_line - 1):
        return None
    return rec[2]


def _resolve(interp, dotted: str, frame: Frame) -> Obj | None:
    parts = dotted.split(".")
    v = interp.lookup(parts[0], frame)
    for p in parts[1:]:
        if v is None or v.obj is None:
            return None
        v = v.obj.attrs.get(p)
    return v.obj if v is not None and v.kind == "module" else None


def _call_of(mc: str) -> ast.Call | None:
    try:
        node = ast.parse("_" + mc, mode="eval").body
    except SyntaxError:
        return None
    return node if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None


def _names_a_device(mc: str) -> bool:
    """`.cuda()`, `.to(device)`, `.to("cuda", dtype)`, `.to(device=d)`: not `.to(torch.float16)`."""
    call = _call_of(mc)
    if call is None or call.func.attr not in ("to", "cuda"):
        return False
    if call.func.attr == "cuda":
        return True
    cand = next((k.value for k in call.keywords if k.arg == "device"), call.args[0] if call.args else None)
    if cand is None or isinstance(cand, ast.Starred):
        return False
    if isinstance(cand, ast.Attribute) and cand.attr in DTYPES:
        return False  # `torch.float16`
    return not (isinstance(cand, ast.Name) and cand.id == "dtype")


def _reads(mc: str) -> set[str]:
    call = _call_of(mc)
    if call is None:
        return set()
    return {n.id for n in ast.walk(call) if isinstance(n, ast.Name) and n.id != "_"}


def _rebound_between(scope: ast.AST, names: set[str], lo: int, hi: int) -> bool:
    """Whether `scope` (a function or the module, not its nested functions or classes) binds one of
    `names` on a line after `lo` and up to `hi`."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if getattr(n, "name", None) in names and lo < n.lineno <= hi:
                return True
            continue
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in names and lo < n.lineno <= hi:
            return True
        if isinstance(n, (ast.Import, ast.ImportFrom)) and lo < n.lineno <= hi and \
                any((a.asname or a.name).split(".")[0] in names for a in n.names):
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False


def simple_statement(st) -> bool:
    """A statement after which another one can be inserted at the same indentation."""
    return isinstance(st, _SIMPLE)
