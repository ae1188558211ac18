"""The abstract interpreter: runs a file's code over the device lattice, one pass per function body.

Module-level code runs first (with `if __name__ == "__main__":` taken); calls to functions, methods
and classes of the same file are followed with the callers' abstract arguments (depth-limited,
memoised). Functions never reached that way run once on their own with unknown arguments.
Whatever is unknown stays unknown and is never reported.
"""

from __future__ import annotations

import ast
import re

from devflow.analysis import torch_api as T
from devflow.analysis.walk import walk
from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.index import ClassInfo, FileIndex
from devflow.analysis.lattice import CPU, CUDA, TOP, Dev, concrete, definitely_differ, join
from devflow.analysis.values import COLLATED, ENCODING, UNKNOWN, Obj, Origin, Val
from devflow.lines import split_lines
from devflow.model import Span

MAX_DEPTH = 7
DEVICE_WORDS = ("device", "dev")
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def span_of(node: ast.AST) -> Span:
    return Span(node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)


class FuncRef:
    __slots__ = ("node", "closure", "owner", "kind")

    def __init__(self, node, closure, owner: ClassInfo | None = None, kind: str = "function"):
        self.node = node
        self.closure = closure  # defining Frame (for nested functions) or None
        self.owner = owner
        self.kind = kind  # function | method | staticmethod | classmethod


class Frame:
    __slots__ = ("node", "env", "parent", "call_node", "returns", "closure", "assigned", "params", "pending_names",
                 "stmt_stack")

    def __init__(self, node, parent, call_node, closure=None):
        self.node = node
        self.env: dict[str, Val] = {}
        self.parent = parent
        self.call_node = call_node
        self.returns: Val | None = None
        self.closure = closure
        self.assigned: dict[str, int] = {}
        self.params: set[str] = set()
        self.pending_names: dict[str, Finding] = {}
        self.stmt_stack: list[ast.stmt] = []


_DECO_CACHE: dict[int, tuple] = {}


def _decorators(node) -> set[str]:
    hit = _DECO_CACHE.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    out = _decorators_of(node)
    if len(_DECO_CACHE) > 50000:
        _DECO_CACHE.clear()
    _DECO_CACHE[id(node)] = (node, out)
    return out


def _decorators_of(node) -> set[str]:
    out = set()
    for d in getattr(node, "decorator_list", ()):
        name = FileIndex.dotted(d.func if isinstance(d, ast.Call) else d) or ""
        out.add(name.rsplit(".", 1)[-1])
    return out


class Interpreter:
    def __init__(self, tree: ast.Module, source: str, index: FileIndex, budget: int):
        self.tree = tree
        self.source = source
        self.lines = split_lines(source)  # Python's line breaks (devflow.lines), as ast numbers lines
        self._blines: dict[int, bytes] = {}
        self.index = index
        self.budget = budget
        self.findings: dict[tuple, Finding] = {}
        self.mix_origins: set = set()
        # (line, col, end_line, end_col) in ast coordinates -> (name, dev, reason, kind, is_assignment)
        self.hints: dict[tuple, tuple | None] = {}
        self.default_dev: Dev = CPU
        self.default_origin: Origin | None = None
        self.memo: dict = {}
        self.visited: set[int] = set()
        self.active: set[int] = set()
        self.depth = 0
        self.module_frame = Frame(tree, None, None)
        self._frames: list[Frame] = [self.module_frame]  # for release()
        self.builds_modules_cache: dict[int, bool] = {}
        self.sym_names: dict = {}
        self.frame: Frame = self.module_frame
        self._all_modules: list[Obj] = []
        self.standalone = False
        self.moved_classes: set[str] = set()
        self.tensor_attrs: dict[tuple[str, str], list] = {}
        self._cur_move = (None, None)
        # Per call node (by id; the tree is never written to): the receiver last evaluated, and
        # whether the call went into a same-file function.
        self._recv: dict[int, Val] = {}
        self._spread: dict[int, list[tuple[Val, str]]] = {}  # call -> tensor containers passed as **batch
        self._interproc: set[int] = set()
        self._optimizers: list[Obj] = []

    # ----------------------------------------------------------------- driver
    def run(self) -> None:
        _DECO_CACHE.clear()  # per file: never keeps another file's tree alive
        self.exec_block(self.tree.body, self.module_frame)
        top = set()
        for st in self.tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                top.add(id(st))
            elif isinstance(st, (ast.If, ast.Try)):
                top.update(id(n) for n in walk(st) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        calls = _call_counts(self.source, {fn.name for fn in self.index.functions})
        for fn in self.index.functions:
            if id(fn) in self.visited or self.budget <= 0:
                continue
            owner = self.index.parent_class.get(id(fn))
            if owner is None and id(fn) not in top:
                continue  # nested functions run with their parent
            # an uncalled top-level function is an entry point (main() run by fire/typer/...): follow its calls
            entry = owner is None and calls.get(fn.name, 0) <= 1 and not fn.decorator_list
            self.run_standalone(fn, owner, follow=entry)

    def run_standalone(self, fn, owner: ClassInfo | None, follow: bool = False) -> None:
        self.standalone = not follow  # callees get their own pass: do not follow calls from here
        decos = _decorators(fn)
        self_val = None
        if owner is not None and "staticmethod" not in decos:
            if "classmethod" in decos:
                self_val = Val("class", func=owner)
            else:
                obj = Obj("module" if owner.is_module else "instance", cls=owner, qual=owner.name)
                obj.dev = TOP
                obj.standalone = True  # type: ignore[attr-defined]
                self_val = Val("module" if owner.is_module else "obj", obj=obj, text="self")
        args: list[Val] = []
        if owner is not None and owner.is_module and fn.name == "forward" and self_val is not None:
            args = self._module_device_inputs(fn, owner, self_val)
        kind = "function" if self_val is None else ("classmethod" if self_val.kind == "class" else "method")
        self.call_function(FuncRef(fn, None, owner, kind), args, {}, self_val, None, standalone=True)

    def _module_device_inputs(self, fn, owner: ClassInfo, self_val: Val) -> list[Val]:
        """forward() on its own: its tensor inputs and its torch.nn layers share "the module's device".

        Only inputs used as tensors (`x.shape`, `x.size()`, `x.device`, ...) count, and only layers
        built in __init__ from torch.nn (Linear, Conv, Embedding, ...): a cpu tensor made in forward
        without device= that meets them fails as soon as the module runs on an accelerator.
        """
        dev = Dev("sym", key=("module-device", owner.name), text="the module's device", accel=True)
        used: set[str] = set()
        for n in walk(fn):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.attr in _TENSOR_ATTRS:
                used.add(n.value.id)
        a = fn.args
        params = [p for p in a.posonlyargs + a.args][1:]
        args = []
        for p in params:
            ann = ast.unparse(p.annotation) if p.annotation is not None else ""
            is_tensor = p.arg in used or ann.endswith("Tensor")
            args.append(Val("tensor", dev, Origin(span_of(p), f"input of `{owner.name}.forward()`, on the module's device"),
                            text=p.arg) if is_tensor else UNKNOWN)
        init = owner.methods.get("__init__")
        if init is not None:
            obj = self_val.obj
            for st in init.body:
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Attribute) \
                        and isinstance(st.targets[0].value, ast.Name) and st.targets[0].value.id == "self" \
                        and isinstance(st.value, ast.Call):
                    q = self.index.qualify(FileIndex.dotted(st.value.func) or "")
                    last = q.rsplit(".", 1)[-1]
                    # torch.nn layers only: a same-file submodule may take cpu metadata on purpose
                    if q.startswith("torch.nn.") and last[:1].isupper() and last not in T.PARAM_FREE_MODULES \
                            and not q.startswith(("torch.nn.functional", "torch.nn.utils", "torch.nn.init")) \
                            and last not in ("Parameter", "ModuleList", "ModuleDict", "Sequential"):
                        sub = Obj("module", qual=q, dev=dev, origin=Origin(span_of(st), f"a submodule of `{owner.name}`"))
                        obj.attrs[st.targets[0].attr] = Val("module", obj=sub)
        return args

    def release(self) -> None:
        """Break the reference cycles of a finished run (frames hold values whose objects point back
        at frames, optimizers and modules point at each other), so that reference counting frees
        the run, and the syntax tree it holds, at once instead of leaving ~30k objects to the
        cyclic collector per analysis (an editor server runs hundreds)."""
        for f in self._frames:
            f.env = {}
            f.returns = f.parent = f.closure = f.call_node = None
            f.pending_names = {}
            f.stmt_stack = []
        self._frames = []
        for opt in self._optimizers:  # an optimizer and the modules whose parameters it holds
            opt.modules = []
        self._optimizers = []
        self._all_modules = []
        self.memo.clear()
        self._recv = {}
        self._spread = {}

    def scope_of(self, line: int):
        """The innermost function whose body holds `line` (None at module level)."""
        if not hasattr(self, "_ranges"):
            self._ranges = sorted(((f.lineno, f.end_lineno or f.lineno, f) for f in self.index.functions),
                                  key=lambda r: (r[0], -r[1]))
        best = None
        for start, end, fn in self._ranges:
            if start > line:
                break
            if start <= line <= end:
                best = fn
        return best

    # ----------------------------------------------------------------- findings
    def add(self, f: Finding) -> Finding:
        key = (f.code, f.span)
        if key not in self.findings:
            self.findings[key] = f
        return self.findings[key]

    def text(self, node: ast.AST) -> str:
        """Source text of a node (ast columns are UTF-8 byte offsets); one line at most."""
        try:
            line, end = node.lineno, node.end_lineno
            if line == end:
                b = self._bline(line)
                if b is not None:
                    return b[node.col_offset:node.end_col_offset].decode("utf-8", errors="replace")
            return ast.unparse(node)
        except Exception:  # noqa: BLE001
            return "?"

    def _bline(self, n: int) -> bytes | None:
        cache = self._blines
        b = cache.get(n)
        if b is None and 0 < n <= len(self.lines):
            b = cache[n] = self.lines[n - 1].encode("utf-8")
        return b

    def hint(self, target: ast.AST, name: str, val: Val) -> None:
        dev = val.device
        if val.kind not in ("tensor", "module") or dev is None or not dev.known:
            return
        self._put_hint(target, name, val, dev, True)

    def use_hint(self, node, val: Val) -> None:
        dev = val.device
        if dev is None or not dev.known:
            return
        self._put_hint(node, node.id, val, dev, False)

    def _put_hint(self, node, name: str, val: Val, dev: Dev, is_assignment: bool) -> None:
        """Raw hints, keyed by the node's ast position; the engine makes DeviceHints of those kept.
        A place seen with two different devices (two calls of one function) gets no hint."""
        key = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        old = self.hints.get(key, False)
        if old is None:
            return
        if old is not False and old[1].render() != dev.render():
            self.hints[key] = None
            return
        reason = (val.obj.moved or val.obj.origin) if val.kind == "module" and val.obj else val.origin
        self.hints[key] = (name, dev, reason.reason if reason else "", val.kind, is_assignment)

    # ----------------------------------------------------------------- statements
    def exec_block(self, stmts, frame: Frame) -> bool:
        """Run statements; True when the block always ends in return/raise/break/continue."""
        for st in stmts:
            self.budget -= 1
            if self.budget <= 0:
                return False
            handler = _STMT_HANDLERS.get(type(st))
            if handler is None:
                continue
            frame.stmt_stack.append(st)
            try:
                if handler(self, st, frame):
                    return True
            finally:
                frame.stmt_stack.pop()
        return False

    def s_Expr(self, st, frame):
        val = self.eval(st.value, frame)
        call = st.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda") \
                and isinstance(call.func.value, ast.Name) and val.kind == "tensor" and \
                self._recv.get(id(call)) is not None and self._recv[id(call)].kind == "unknown" and not self.standalone:
            # `model.to(device)` as a statement: only modules move in place, so `model` is a module now there
            obj = Obj("module", dev=val.dev, origin=val.origin, moved=val.origin, moved_frame=frame)
            obj.move_call = self.text(call)[len(call.func.value.id):]  # type: ignore[attr-defined]
            obj.move_recv = call.func.value.id  # type: ignore[attr-defined]
            frame.env[call.func.value.id] = Val("module", obj=obj, text=call.func.value.id)
            return False
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda", "cpu"):
            recv = self._recv.get(id(call))
            if recv is not None and recv.kind == "tensor" and recv.batch == ENCODING and call.func.attr == "to" \
                    and isinstance(call.func.value, ast.Name) and val.kind == "tensor":
                frame.env[call.func.value.id] = val.with_text(call.func.value.id)  # BatchEncoding.to() moves in place
                return False
            if recv is not None and recv.kind == "tensor" and val.kind == "tensor":
                name = self.text(call.func.value)
                self.add(Finding(
                    "DEV107", span_of(st),
                    f"`{self.text(call)}` returns a new tensor that is thrown away: `{name}` stays on "
                    f"{recv.dev.render() if recv.dev else 'its device'}" + (f" ({recv.origin.reason})" if recv.origin else ""),
                    [(recv.origin.span, recv.origin.reason)] if recv.origin else [],
                    FixPlan("assign", span_of(st), name=name, title=f"Assign the result: `{name} = {self.text(call)}`",
                            applicability="safe") if isinstance(call.func.value, (ast.Name, ast.Attribute, ast.Subscript)) else None))
        return False

    def s_Assign(self, st, frame):
        conversion = self._moved_arg_of_builder(st, frame)
        val = self.eval(st.value, frame)
        val = self._reanchor(st, val, frame)
        for t in st.targets:
            self.assign(t, val, frame, st)
        if conversion is not None:
            self._conversion_after_move(st, frame, conversion)
        return False

    def _moved_arg_of_builder(self, st, frame) -> Obj | None:
        call = st.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name)):
            return None
        fval = self.lookup(call.func.id, frame)
        if fval is None or fval.kind != "func" or not self.builds_modules(fval.func.node):
            return None
        for a in call.args:
            v = self.lookup(a.id, frame) if isinstance(a, ast.Name) else None
            if v is not None and v.kind == "module" and v.obj is not None and v.obj.moved is not None \
                    and not getattr(v.obj, "standalone", False):
                return v.obj
        return None

    def _conversion_after_move(self, st, frame, moved: Obj) -> None:
        """`model = convert(model)` after the move, where `convert` (same file) builds new modules."""
        name = st.value.func.id
        code = "DEV602" if any(w in name.lower() for w in ("convert", "sync")) else "DEV102"
        target = st.targets[0].id
        mc = getattr(moved, "move_call", None)
        fix = FixPlan("insert_after", span_of(st), text=f"{target}{mc}", title=f"Move the model again after the conversion: `{target}{mc}`") if mc else None
        f = self.add(Finding(code, span_of(st),
                             f"`{name}()` builds new modules (on cpu) after the model was moved ({moved.moved.reason}); "
                             f"they are not moved: move the model after the conversion",
                             [(moved.moved.span, moved.moved.reason)], fix))
        frame.pending_names[target] = f

    def s_AnnAssign(self, st, frame):
        if st.value is not None:
            self.assign(st.target, self._reanchor(st, self.eval(st.value, frame), frame), frame, st)
        return False

    def s_AugAssign(self, st, frame):
        left = self.eval(st.target, frame) if not isinstance(st.target, ast.Subscript) else UNKNOWN
        right = self.eval(st.value, frame)
        val = self.binop(st, left, right, frame)
        if isinstance(st.target, ast.Name):
            self.assign(st.target, val, frame, st)
        return False

    def s_If(self, st, frame):
        cond = self.truth(st.test, frame)
        if cond is True:
            return self.exec_block(st.body, frame)
        if cond is False:
            return self.exec_block(st.orelse, frame)
        before = dict(frame.env)
        t_body = self.exec_block(st.body, frame)
        env_body = frame.env
        frame.env = dict(before)
        t_else = self.exec_block(st.orelse, frame)
        env_else = frame.env
        if t_body and t_else:
            frame.env = before
            return True
        if t_body:
            frame.env = env_else
        elif t_else:
            frame.env = env_body
        else:
            frame.env = self.join_env(env_body, env_else)
        return False

    def s_For(self, st, frame):
        it = self.eval(st.iter, frame)
        elem = self.iter_elem(it, st.iter, frame)
        before = dict(frame.env)
        self.assign(st.target, elem, frame, st)
        self.exec_block(st.body, frame)
        frame.env = self.join_env(before, frame.env)
        self.exec_block(st.orelse, frame)
        return False

    s_AsyncFor = s_For

    def s_While(self, st, frame):
        self.eval(st.test, frame)
        before = dict(frame.env)
        self.exec_block(st.body, frame)
        frame.env = self.join_env(before, frame.env)
        self.exec_block(st.orelse, frame)
        return False

    def s_With(self, st, frame):
        saved = (self.default_dev, self.default_origin)
        for item in st.items:
            ctx = item.context_expr
            val = self.eval(ctx, frame)
            if isinstance(ctx, ast.Call) and self.qualname(ctx.func, frame) == "torch.device" and val.kind == "device":
                self.default_dev, self.default_origin = val.dev or TOP, Origin(span_of(ctx), f"default device set by `with {self.text(ctx)}` at line {ctx.lineno}")
            if item.optional_vars is not None:
                self.assign(item.optional_vars, UNKNOWN, frame, st)
        ended = self.exec_block(st.body, frame)
        self.default_dev, self.default_origin = saved
        return ended

    s_AsyncWith = s_With

    def s_Try(self, st, frame):
        before = dict(frame.env)
        self.exec_block(st.body, frame)
        env = frame.env
        for h in st.handlers:
            frame.env = dict(before)
            self.exec_block(h.body, frame)
            env = self.join_env(env, frame.env)
        frame.env = env
        self.exec_block(st.orelse, frame)
        self.exec_block(st.finalbody, frame)
        return False

    s_TryStar = s_Try

    def s_Return(self, st, frame):
        val = self.eval(st.value, frame) if st.value is not None else Val("const", const=None)
        frame.returns = val if frame.returns is None else self.join(frame.returns, val)
        return True

    def s_Raise(self, st, frame):
        return True

    def s_Continue(self, st, frame):
        return True

    s_Break = s_Continue

    def s_FunctionDef(self, st, frame):
        owner = None
        kind = "function"
        frame.env[st.name] = Val("func", func=FuncRef(st, frame if frame is not self.module_frame else None, owner, kind))
        frame.assigned.setdefault(st.name, st.lineno)
        return False

    s_AsyncFunctionDef = s_FunctionDef

    def s_ClassDef(self, st, frame):
        info = next((c for c in self.index.all_classes if c.node is st), None)
        if info is not None:
            frame.env[st.name] = Val("class", func=info)
            frame.assigned.setdefault(st.name, st.lineno)
        return False

    # ----------------------------------------------------------------- assignment
    def _reanchor(self, st, val: Val, frame: Frame) -> Val:
        """A cpu tensor returned by a same-file call gets its origin at this assignment."""
        value = st.value
        if isinstance(value, ast.Call) and id(value) in self._interproc:
            reason = f"returned by `{self.text(value.func)}()` at line {st.lineno}"
            org = Origin(span_of(st), reason, "returned")
            if val.kind == "tensor":
                return Val("tensor", val.dev, org, scalar=val.scalar)
            if val.kind == "obj" and val.obj is not None and val.obj.kind == "tuple":
                new = Obj("tuple", items=[Val("tensor", v.dev, org, scalar=v.scalar) if v.kind == "tensor" else v
                                          for v in val.obj.items])
                return Val("obj", obj=new)
        return val

    def assign(self, target, val: Val, frame: Frame, st) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            if val.kind == "device" and val.dev is not None and val.dev.kind == "sym":
                text = self.sym_names.setdefault(val.dev.key, name)
                val = Val("device", Dev("sym", key=val.dev.key, text=text, accel=val.dev.accel), val.origin)
            frame.env[name] = val.with_text(name) if val.kind in ("tensor", "module", "obj") else val
            if val.kind == "module" and val.obj is not None and getattr(val.obj, "assign_stmt", None) is None \
                    and isinstance(st, ast.Assign):
                val.obj.assign_stmt = span_of(st)  # type: ignore[attr-defined]
                val.obj.assign_name = name  # type: ignore[attr-defined]
                val.obj.assign_frame = frame  # type: ignore[attr-defined]
                self._all_modules.append(val.obj)
            frame.assigned.setdefault(name, getattr(st, "lineno", None) or getattr(target, "lineno", 0))
            if name in frame.pending_names and val.kind == "module" and val.obj is not None and \
                    getattr(st, "value", None) is not None and isinstance(st.value, ast.Call) and \
                    isinstance(st.value.func, ast.Attribute) and st.value.func.attr in ("to", "cuda"):
                frame.pending_names.pop(name).cancelled = True
            if frame is not self.module_frame or True:
                self.hint(target, name, val)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            items = val.obj.items if val.kind == "obj" and val.obj is not None and val.obj.kind in ("tuple", "list") else None
            for i, t in enumerate(elts):
                if isinstance(t, ast.Starred):
                    self.assign(t.value, UNKNOWN, frame, st)
                    continue
                if items is not None and len(items) == len(elts):
                    self.assign(t, items[i], frame, st)
                elif val.kind == "tensor":
                    self.assign(t, Val("tensor", val.dev, val.origin, scalar=not val.batch, batch=val.batch), frame, st)
                elif val.kind == "obj" and val.obj is not None and val.elem is not None:
                    self.assign(t, val.elem, frame, st)
                else:
                    self.assign(t, UNKNOWN, frame, st)
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value, frame)
            if base.obj is not None and base.kind in ("module", "obj"):
                self.set_attr(base, target, val, frame, st)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value, frame)
            parent = base.obj if base.kind in ("module", "attr") else None
            if parent is not None and parent.kind == "module" and val.kind == "module" and val.obj is not None \
                    and parent.moved is not None and val.obj.moved is None and not getattr(parent, "standalone", False) \
                    and definitely_differ(val.obj.dev or CPU, parent.dev):
                self.report_added_after_move(parent, val.obj, target, st, frame)
                parent.items.append(val)
            elif base.kind == "tensor" and base.batch and isinstance(target.value, ast.Name):
                self._store_into_batch(target.value.id, base, val, frame)
            elif base.kind == "obj" and base.obj is not None and base.obj.kind == "dict":
                key = self.eval(target.slice, frame)
                if key.kind == "const" and isinstance(key.const, (str, int)):
                    base.obj.keys[key.const] = val
                else:
                    base.elem = val if base.elem is None else self.join(base.elem, val)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, UNKNOWN, frame, st)

    def _store_into_batch(self, name: str, batch: Val, val: Val, frame: Frame) -> None:
        """`batch[k] = v` where `batch` is a dict of tensors modelled as one tensor: after a tensor
        on another device, or an unknown value, is stored, the entries are on no single known
        device, so the batch stays silent (`for k, v in batch.items(): batch[k] = v.to(device)`)."""
        if val.kind == "tensor":
            dev = join(batch.dev, val.dev)
        elif val.kind == "unknown":
            dev = TOP
        else:
            return  # a non-tensor entry moves nothing
        if dev != batch.dev:
            frame.env[name] = Val("tensor", dev, None, batch=batch.batch, text=batch.text)

    def set_attr(self, base: Val, target: ast.Attribute, val: Val, frame: Frame, st) -> None:
        obj = base.obj
        name = target.attr
        if val.kind == "device" and val.dev is not None and val.dev.kind == "sym" and isinstance(target.value, ast.Name):
            text = self.sym_names.setdefault(val.dev.key, f"{target.value.id}.{name}")  # `self.device`
            val = Val("device", Dev("sym", key=val.dev.key, text=text, accel=val.dev.accel), val.origin)
        if not self.standalone and isinstance(target.value, ast.Name):
            self.hint(target, f"{target.value.id}.{name}", val)
        if obj.kind == "module" and val.kind == "module" and val.obj is not None and val.obj is not obj:
            obj.children.add(name)
            child = val.obj
            if obj.moved is not None and child.moved is None and definitely_differ(child.dev or CPU, obj.dev) \
                    and not getattr(obj, "standalone", False):
                self.report_added_after_move(obj, child, target, st, frame)
        elif obj.kind == "module" and val.kind == "tensor" and name not in obj.buffers and obj.cls is not None \
                and val.dev is not None and val.dev.is_cpu and not val.scalar and getattr(frame.node, "name", "") == "__init__":
            self.tensor_attrs.setdefault((obj.cls.name, name), []).append(st)
        obj.attrs[name] = val

    def report_added_after_move(self, parent: Obj, child: Obj, target, st, frame: Frame) -> None:
        mv = parent.moved
        mv_text = mv.reason if mv else ""
        site_frame = frame
        call_site = None
        while site_frame is not parent.moved_frame and site_frame.parent is not None:
            call_site = site_frame.call_node
            site_frame = site_frame.parent
        if call_site is not None and site_frame is parent.moved_frame:
            fn = self.text(call_site.func) if isinstance(call_site, ast.Call) else "this call"
            f = Finding("DEV102", span_of(call_site),
                        f"`{fn}()` builds `{self.text(target)}` on cpu (line {st.lineno}) after the model was moved "
                        f"({mv_text}); the new submodule stays on cpu",
                        [(span_of(st), "submodule created here"), (mv.span, mv_text)],
                        self._move_again_fix(parent, call_site, frame_of_site=site_frame))
        elif call_site is None:
            f = Finding("DEV101", span_of(st),
                        f"`{self.text(target)}` is created on {child.dev.render() if child.dev else 'cpu'} after "
                        f"`{self.text(target.value)}` was moved ({mv_text}); the new module stays on cpu",
                        [(mv.span, mv_text)],
                        self._append_move_fix(st.value, parent) if isinstance(st, ast.Assign) else None)
        else:
            return
        f = self.add(f)
        child.pending.append(f)

    def _move_text(self, parent: Obj) -> str | None:
        return getattr(parent, "move_call", None)

    def _append_move_fix(self, value: ast.AST, parent: Obj) -> FixPlan | None:
        mc = self._move_text(parent)
        if not mc or not isinstance(value, ast.Call):
            return None
        return FixPlan("append", span_of(value), text=mc, title=f"Move the new module too: append `{mc}`",
                       applicability="safe")

    def _move_again_fix(self, parent: Obj, call_site, frame_of_site) -> FixPlan | None:
        mc = self._move_text(parent)
        recv = getattr(parent, "move_recv", None)
        if not mc or not recv or not frame_of_site.stmt_stack:
            return None
        stmt = frame_of_site.stmt_stack[-1]
        return FixPlan("insert_after", span_of(stmt), text=f"{recv}{mc}", title=f"Move the model again: `{recv}{mc}`")

    # ----------------------------------------------------------------- joins
    def join(self, a: Val, b: Val) -> Val:
        if a is b:
            return a
        if a.kind == b.kind == "tensor":
            dev = join(a.dev, b.dev)
            return Val("tensor", dev, a.origin if dev == a.dev else (b.origin if dev == b.dev else None),
                       scalar=a.scalar or b.scalar, batch=a.batch if a.batch == b.batch else "")
        if a.kind == b.kind and a.obj is not None and a.obj is b.obj:
            return a
        if a.kind == b.kind == "const" and a.const == b.const:
            return a
        if a.kind == b.kind == "device" and a.dev == b.dev:
            return a
        return UNKNOWN

    def join_env(self, a: dict, b: dict) -> dict:
        out = dict(a)
        for k, v in b.items():
            old = out.get(k)
            out[k] = v if old is None else self.join(old, v)
        return out

    # ----------------------------------------------------------------- expressions
    def eval(self, node, frame: Frame) -> Val:
        if node is None:
            return UNKNOWN
        h = _EXPR_HANDLERS.get(type(node))
        if h is None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child, frame)
            return UNKNOWN
        return h(self, node, frame)

    def e_Constant(self, node, frame):
        return Val("const", const=node.value)

    def e_JoinedStr(self, node, frame):
        return Val("const", const=None) if False else UNKNOWN

    def lookup(self, name: str, frame: Frame) -> Val | None:
        f = frame
        while f is not None:
            v = f.env.get(name)
            if v is not None:
                return v
            f = f.closure
        return self.module_frame.env.get(name)

    def e_Name(self, node, frame):
        v = self.lookup(node.id, frame)
        if v is not None:
            if v.kind in ("tensor", "module") and not self.standalone and node.id != "self":
                self.use_hint(node, v)
            return v
        if node.id in self.index.aliases:
            return Val("qual", const=self.index.aliases[node.id])
        if node.id in self.index.classes:
            return Val("class", func=self.index.classes[node.id])
        if node.id == "__name__":
            return Val("const", const="__main__")
        if node.id in ("True", "False", "None"):
            return Val("const", const={"True": True, "False": False, "None": None}[node.id])
        if node.id in ("range", "len", "int", "float", "str", "bool", "enumerate", "zip", "list", "tuple", "dict",
                       "sorted", "reversed", "next", "iter", "isinstance", "getattr", "hasattr", "print", "max", "min",
                       "sum", "abs", "type", "super", "map", "filter", "set", "any", "all", "round"):
            return Val("qual", const="builtins." + node.id)
        return UNKNOWN

    def qualname(self, node, frame) -> str | None:
        v = self.eval(node, frame) if isinstance(node, (ast.Name, ast.Attribute)) else UNKNOWN
        return v.const if v.kind == "qual" else None

    def e_Attribute(self, node, frame):
        base = self.eval(node.value, frame)
        attr = node.attr
        if base.kind == "qual":
            return Val("qual", const=f"{base.const}.{attr}")
        if base.kind == "tensor":
            if attr == "device":
                return self.device_of(base, node.value)
            if attr in ("T", "mT", "H", "data", "real", "imag", "grad"):
                return Val("tensor", base.dev, base.origin, scalar=base.scalar, text=self.text(node))
            if base.batch == ENCODING and attr not in ("encodings", "n_sequences", "is_fast") and not attr.startswith("_"):
                return Val("tensor", base.dev, base.origin, text=self.text(node))  # `enc.input_ids`: an entry
            return UNKNOWN
        if base.kind in ("module", "obj") and base.obj is not None:
            obj = base.obj
            if attr in obj.attrs:
                v = obj.attrs[attr]
                if v.kind in ("tensor", "module") and not v.text:
                    return v.with_text(self.text(node))
                return v  # containers are returned as is: writes through them must stick
            if attr == "training" and obj.training is not None:
                return Val("const", const=obj.training)
            if obj.cls is not None:
                found = obj.cls.method(attr)
                if found is not None:
                    fn, owner = found
                    decos = _decorators(fn)
                    kind = "staticmethod" if "staticmethod" in decos else ("classmethod" if "classmethod" in decos else "method")
                    if "property" in decos:
                        return self.call_function(FuncRef(fn, None, owner, "method"), [], {}, base, node)
                    return Val("func", func=FuncRef(fn, None, owner, kind), bound=base)
            if obj.kind == "module":
                if attr in ("module", "_orig_mod", "base_model"):
                    return base
                if attr in ("weight", "bias") and obj.dev is not None and obj.dev.known and not obj.cls:
                    return Val("tensor", obj.dev, obj.moved or obj.origin, text=self.text(node))
                if attr == "device" and obj.dev is not None and obj.dev.known:
                    return Val("device", obj.dev, obj.moved or obj.origin)
            return Val("attr", obj=obj, const=attr, bound=base) if obj.kind == "module" else UNKNOWN
        return _class_member(base, attr)

    def device_of(self, t: Val, node) -> Val:
        if t.dev is not None and t.dev.known:
            return Val("device", t.dev, t.origin)
        text = f"{self.text(node)}.device"
        key = ("attr", text, id(self.frame))
        return Val("device", Dev("sym", key=key, text=text, accel=False))

    def e_Subscript(self, node, frame):
        base = self.eval(node.value, frame)
        idx = self.eval(node.slice, frame)
        if base.kind == "tensor":
            idx_vals = idx.obj.items if idx.kind == "obj" and idx.obj is not None and idx.obj.kind == "tuple" else [idx]
            for iv in idx_vals:
                if iv.kind == "tensor" and base.dev is not None and base.dev.is_cpu and not base.scalar \
                        and definitely_differ(base.dev, iv.dev):
                    self.report_index(node, base, iv, frame)
                    break
            return Val("tensor", base.dev, base.origin, scalar=base.scalar, text=self.text(node))
        if base.kind == "obj" and base.obj is not None:
            obj = base.obj
            if obj.kind in ("list", "tuple"):
                if idx.kind == "const" and isinstance(idx.const, int) and -len(obj.items) <= idx.const < len(obj.items):
                    return obj.items[idx.const]
                if isinstance(node.slice, ast.Slice):
                    return base
                return self.elem_of(obj)
            if obj.kind == "dict":
                if idx.kind == "const" and idx.const in obj.keys:
                    return obj.keys[idx.const]
                return base.elem or UNKNOWN
        if base.kind == "module" and base.obj is not None and base.obj.items:
            return self.elem_of(base.obj)
        return UNKNOWN

    def elem_of(self, obj: Obj) -> Val:
        items = obj.items
        if items and all(v.kind == "module" and v.obj is not None for v in items):
            first = items[0].obj
            if all(v.obj.dev == first.dev and v.obj.role == first.role and v.obj.cls is first.cls for v in items):
                return items[0]  # modules alike: one stands for all
        out = None
        for v in items:
            out = v if out is None else self.join(out, v)
        return out or UNKNOWN

    def e_Tuple(self, node, frame):
        return Val("obj", obj=Obj("tuple", items=[self.eval(e, frame) for e in node.elts]))

    def e_List(self, node, frame):
        items = [self.eval(e, frame) for e in node.elts]
        return Val("obj", obj=Obj("list", items=items))

    def e_Dict(self, node, frame):
        obj = Obj("dict")
        elem = None
        for k, v in zip(node.keys, node.values):
            vv = self.eval(v, frame)
            if k is None:
                if vv.kind == "obj" and vv.obj is not None and vv.obj.kind == "dict":
                    obj.keys.update(vv.obj.keys)
                continue
            kv = self.eval(k, frame)
            if kv.kind == "const":
                obj.keys[kv.const] = vv
            elem = vv if elem is None else self.join(elem, vv)
        return Val("obj", obj=obj, elem=elem)

    def _comp(self, node, frame) -> tuple[Val, Val | None]:
        sub = Frame(node, frame.parent, frame.call_node, closure=frame)
        self._frames.append(sub)
        sub.stmt_stack = frame.stmt_stack
        for gen in node.generators:
            it = self.eval(gen.iter, sub)
            self.assign(gen.target, self.iter_elem(it, gen.iter, sub), sub, gen)
        if isinstance(node, ast.DictComp):
            self.eval(node.key, sub)
            return self.eval(node.value, sub), None
        return self.eval(node.elt, sub), None

    def e_ListComp(self, node, frame):
        elt, _ = self._comp(node, frame)
        return Val("obj", obj=Obj("list", items=[elt]) if False else Obj("list"), elem=elt)

    e_GeneratorExp = e_ListComp
    e_SetComp = e_ListComp

    def e_DictComp(self, node, frame):
        val, _ = self._comp(node, frame)
        return Val("obj", obj=Obj("dict"), elem=val)

    def e_IfExp(self, node, frame):
        cond = self.truth(node.test, frame)
        if cond is True:
            return self.eval(node.body, frame)
        if cond is False:
            return self.eval(node.orelse, frame)
        a, b = self.eval(node.body, frame), self.eval(node.orelse, frame)
        if a.kind == b.kind == "const" and isinstance(a.const, str) and isinstance(b.const, str):
            da, db = concrete(a.const), concrete(b.const)
            if da is not None and db is not None and da != db:
                return Val("device", Dev("sym", key=("ifexp", node.lineno, node.col_offset), text=self.text(node), accel=True),
                           Origin(span_of(node), f"chosen at line {node.lineno}"))
        if a.kind == "device" and b.kind == "device" and (a.dev != b.dev):
            return Val("device", Dev("sym", key=("ifexp", node.lineno, node.col_offset), text=self.text(node),
                                     accel=True), Origin(span_of(node), f"chosen at line {node.lineno}"))
        return self.join(a, b)

    def e_BoolOp(self, node, frame):
        vals = [self.eval(v, frame) for v in node.values]
        return vals[-1] if all(v.kind == "tensor" for v in vals) else UNKNOWN

    def e_UnaryOp(self, node, frame):
        v = self.eval(node.operand, frame)
        if isinstance(node.op, ast.Not):
            return Val("const", const=not v.const) if v.kind == "const" else UNKNOWN
        if v.kind == "const" and isinstance(v.const, (int, float)):
            return Val("const", const=-v.const if isinstance(node.op, ast.USub) else v.const)
        return v if v.kind == "tensor" else UNKNOWN

    def e_BinOp(self, node, frame):
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        return self.binop(node, left, right, frame, self.text(node.left), self.text(node.right))

    def binop(self, node, left: Val, right: Val, frame, ltext: str = "", rtext: str = "") -> Val:
        if left.kind == "tensor" and right.kind == "tensor":
            if self.check_mix(node, [(left, ltext or left.text), (right, rtext or right.text)], frame):
                return UNKNOWN
            return self.result_of([left, right])
        if left.kind == "tensor":
            return Val("tensor", left.dev, left.origin, scalar=left.scalar)
        if right.kind == "tensor":
            return Val("tensor", right.dev, right.origin, scalar=right.scalar)
        if left.kind == right.kind == "const" and isinstance(node, ast.BinOp):
            try:
                if isinstance(left.const, (int, float, str)) and isinstance(right.const, (int, float, str)) and \
                        isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
                    return Val("const", const={ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
                                               ast.Mult: lambda a, b: a * b}[type(node.op)](left.const, right.const)
                               if not (isinstance(left.const, str) and isinstance(node.op, ast.Mult)) else None)
            except Exception:  # noqa: BLE001
                return UNKNOWN
        return UNKNOWN

    def result_of(self, vals: list[Val]) -> Val:
        """A tensor op's result: on the non-scalar operands' device."""
        main = [v for v in vals if v.kind == "tensor" and not (v.scalar and v.dev is not None and v.dev.is_cpu)] or \
            [v for v in vals if v.kind == "tensor"]
        dev = None
        origin = None
        for v in main:
            dev = join(dev, v.dev) if dev is not None else v.dev
            origin = origin or v.origin
        return Val("tensor", dev, origin, scalar=all(v.scalar for v in main))

    def e_Compare(self, node, frame):
        left = self.eval(node.left, frame)
        vals = [left] + [self.eval(c, frame) for c in node.comparators]
        tensors = [(v, self.text(n)) for v, n in zip(vals, [node.left] + node.comparators) if v.kind == "tensor"]
        if len(tensors) >= 2 and not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            if self.check_mix(node, tensors, frame):
                return UNKNOWN
        if tensors:
            return Val("tensor", self.result_of([t for t, _ in tensors]).dev, tensors[0][0].origin,
                       scalar=all(t.scalar for t, _ in tensors))
        c = self.const_compare(node, vals)
        return Val("const", const=c) if c is not None else UNKNOWN

    def const_compare(self, node, vals) -> bool | None:
        if len(node.ops) != 1:
            return None
        op, a, b = node.ops[0], vals[0], vals[1]
        if isinstance(op, (ast.Is, ast.IsNot)):
            if b.kind == "const" and b.const is None:
                if a.kind == "const":
                    res = a.const is None
                elif a.kind in ("tensor", "module", "obj", "device", "func", "class"):
                    res = False
                else:
                    return None
                return res if isinstance(op, ast.Is) else not res
            return None
        if a.kind == b.kind == "const" and isinstance(op, (ast.Eq, ast.NotEq)):
            try:
                res = a.const == b.const
            except Exception:  # noqa: BLE001
                return None
            return res if isinstance(op, ast.Eq) else not res
        return None

    def truth(self, node, frame) -> bool | None:
        v = self.eval(node, frame)
        if v.kind == "const":
            try:
                return bool(v.const)
            except Exception:  # noqa: BLE001
                return None
        if v.kind in ("module", "func", "class"):
            return True
        if v.kind == "obj" and v.obj is not None:
            if v.obj.kind in ("list", "tuple", "dict"):
                return True if (v.obj.items or v.obj.keys) else None
            if v.obj.kind == "instance":
                return True
        return None

    def e_NamedExpr(self, node, frame):
        v = self.eval(node.value, frame)
        self.assign(node.target, v, frame, node)
        return v

    def e_Starred(self, node, frame):
        return self.eval(node.value, frame)

    def e_Lambda(self, node, frame):
        return UNKNOWN

    def _snapshot_origin(self, obj: Obj, node, frame: Frame, what: str) -> Origin:
        """Where copies of a not-yet-moved model's tensors were taken. Inside a same-file helper
        (an EMA class, say) that is the call, in the frame that holds the model, which took them."""
        site, f = node, frame
        home = getattr(obj, "assign_frame", None)
        while f is not None and f is not home and f.call_node is not None and f.parent is not None:
            site, f = f.call_node, f.parent
        if f is not home:  # the model's frame is not on this call chain: name the direct use
            site = node
        return Origin(span_of(site), f"{what} taken at line {site.lineno}, before the model was moved", "snapshot")

    # ----------------------------------------------------------------- iteration
    def iter_elem(self, it: Val, node, frame) -> Val:
        if it.kind == "tensor" and it.batch:  # keys of a dict batch, or the tensors of a tuple batch
            return UNKNOWN
        if it.kind == "tensor":
            return Val("tensor", it.dev, it.origin, scalar=True)
        if it.kind == "params" and it.obj is not None:
            o = it.obj
            if o.dev is None or not o.dev.known or getattr(o, "standalone", False):
                return UNKNOWN
            org = o.moved or o.origin
            if o.moved is None and node is not None:
                org = self._snapshot_origin(o, node, frame, f"`{self.text(node)}`")
            t = Val("tensor", o.dev, org)
            return Val("obj", obj=Obj("tuple", items=[UNKNOWN, t])) if it.const == "named" else t
        if it.kind == "obj" and it.obj is not None:
            obj = it.obj
            if obj.kind in ("list", "tuple"):
                if it.elem is not None:
                    return it.elem
                return self.elem_of(obj)
            if obj.kind == "loader":
                return obj.attrs.get("batch", UNKNOWN)
            if obj.kind == "iter":
                return it.elem or UNKNOWN
            if obj.kind == "dict":
                return UNKNOWN
        if it.kind == "module" and it.obj is not None and it.obj.items:
            return self.elem_of(it.obj)
        if it.kind == "obj" and it.elem is not None:
            return it.elem
        return UNKNOWN

    # ----------------------------------------------------------------- mixes
    def check_mix(self, node, vals: list[tuple[Val, str]], frame, module: Val | None = None) -> bool:
        """Report when two tensors (or a module and a tensor) are definitely on different devices."""
        tensors = [(v, t) for v, t in vals if v.kind == "tensor" and v.dev is not None and v.dev.known
                   and not (v.scalar and v.dev.is_cpu)]
        for i in range(len(tensors)):
            for j in range(i + 1, len(tensors)):
                a, b = tensors[i], tensors[j]
                if definitely_differ(a[0].dev, b[0].dev):
                    if not a[0].dev.is_cpu and b[0].dev.is_cpu:
                        a, b = b, a
                    self.report_mix(node, a, b, frame)
                    return True
        return False

    def _dev_text(self, dev: Dev | None) -> str | None:
        return dev.source_text() if dev is not None else None

    def _available(self, expr: str | None, frame: Frame, line: int) -> bool:
        if not expr:
            return False
        if expr.startswith(("'", '"')):
            return True
        root = expr.split(".", 1)[0].split("(", 1)[0].split("[", 1)[0]
        if not root.isidentifier():
            return False
        if root in frame.params or root == "self" and "self" in frame.params:
            return True
        f = frame
        while f is not None:
            if root in f.assigned and f.assigned[root] <= line:
                return True
            f = f.closure
        if frame is not self.module_frame and root in self.module_frame.assigned:
            return True
        return root in self.module_frame.assigned and self.module_frame.assigned[root] <= line

    def report_mix(self, node, cpu_side: tuple[Val, str], dev_side: tuple[Val, str], frame) -> None:
        a, atext = cpu_side
        b, btext = dev_side
        org = a.origin
        key = org.span if org else span_of(node)
        if key in self.mix_origins:
            return
        self.mix_origins.add(key)
        a_desc = f"`{atext}` is on {a.dev.render()}" + (f" ({org.reason})" if org else "")
        b_desc = f"`{btext}` is on {b.dev.render()}" + (f" ({b.origin.reason})" if b.origin else "")
        related = [(span_of(node), f"they meet here (line {node.lineno})")]
        if b.origin:
            related.append((b.origin.span, b.origin.reason))
        dev_text = self._fix_device_text(b, btext, frame, org.span.line if org else node.lineno)
        same_scope = org is not None and self.scope_of(org.span.line) is self.scope_of(node.lineno)
        if not same_scope:
            dev_text = None  # the other side's names are not visible where the value was made
        if org is not None and org.kind in ("factory", "legacy"):
            code = "DEV201"
            fix = None
            if dev_text and org.kind == "legacy":
                fix = FixPlan("append", org.span, text=f".to({dev_text})", title=f"Move it: append `.to({dev_text})`")
            elif dev_text and org.span is not None:
                fix = FixPlan("add_kwarg", org.span, text=dev_text, name="device",
                              title=f"Create it on the right device: add `device={dev_text}`")
            span = org.span
        else:
            code = "DEV202"
            # A batch is fixed (moved) where it is used, not where the DataLoader is built.
            fix = None
            at_use = org is None or org.kind == "batch"
            span = span_of(node) if at_use else org.span
            if at_use and org is not None:
                related.append((org.span, org.reason))
                fix = self._move_at_use_fix(node, atext, b, btext, frame)
            # Copies taken from a model inside a helper: moving the helper's result is no fix.
            if not at_use and dev_text and org.kind != "snapshot":
                fix = self._move_value_fix(org, dev_text, atext)
        msg = f"{a_desc} but {b_desc}; they meet at line {node.lineno}"
        self.add(Finding(code, span, msg, related, fix))

    def _move_at_use_fix(self, node, atext: str, other: Val, other_text: str, frame) -> FixPlan | None:
        """Move a batch where it meets the other side: the one use of its name in that expression."""
        if not atext.isidentifier():
            return None
        uses = [n for n in walk(node) if isinstance(n, ast.Name) and n.id == atext]
        dev_text = self._fix_device_text(other, other_text, frame, node.lineno)
        if len(uses) != 1 or not dev_text:
            return None
        return FixPlan("append", span_of(uses[0]), text=f".to({dev_text})",
                       title=f"Move it where it is used: `{atext}.to({dev_text})`")

    def _move_value_fix(self, org: Origin, dev_text: str, atext: str) -> FixPlan | None:
        if org.kind == "returned":
            if not atext.isidentifier():
                return None
            return FixPlan("insert_after", org.span, text=f"{atext} = {atext}.to({dev_text})",
                           title=f"Move it: `{atext} = {atext}.to({dev_text})`")
        return FixPlan("append", org.span, text=f".to({dev_text})", title=f"Move it: append `.to({dev_text})`")

    def _fix_device_text(self, other: Val, other_text: str, frame: Frame, line: int) -> str | None:
        """A device expression valid at `line`: the other tensor's `.device` when it is a local name,
        else the device variable it was moved to, a variable holding that device, a local tensor's
        `.device`, or the device's literal."""
        if other_text and other_text.isidentifier() and other.kind == "tensor" and other.text != _MODULE_SIDE \
                and self._available(other_text, frame, line):
            return f"{other_text}.device"
        dt = self._dev_text(other.dev)
        if dt and other.dev.kind == "sym" and self._available(dt, frame, line):
            return dt
        if other.dev is not None and other.dev.known:
            for f in dict.fromkeys((frame, self.module_frame)):  # a variable holding that device: `.to(device)`
                for name, v in f.env.items():
                    if v.kind == "device" and v.dev == other.dev and self._available(name, frame, line):
                        return name
        for name, v in frame.env.items():  # a local tensor already on that device
            if v.kind == "tensor" and v.dev == other.dev and self._available(name, frame, line):
                return f"{name}.device"
        if dt and self._available(dt, frame, line):
            return dt
        return None

    def report_index(self, node, base: Val, idx: Val, frame) -> None:
        key = ("index", span_of(node))
        if key in self.mix_origins:
            return
        self.mix_origins.add(key)
        btext, itext = self.text(node.value), self.text(node.slice)
        related = []
        if base.origin:
            related.append((base.origin.span, base.origin.reason))
        if idx.origin:
            related.append((idx.origin.span, idx.origin.reason))
        fix = None
        if isinstance(node.slice, ast.Name):
            fix = FixPlan("append", span_of(node.value), text=f".to({itext}.device)",
                          title=f"Index on the index's device: `{btext}.to({itext}.device)[{itext}]`")
        self.add(Finding("DEV204", span_of(node),
                         f"`{btext}` is on {base.dev.render()}" + (f" ({base.origin.reason})" if base.origin else "")
                         + f" but its index `{itext}` is on {idx.dev.render()}"
                         + (f" ({idx.origin.reason})" if idx.origin else ""), related, fix))

    def module_mix(self, call, mod: Val, args: list[tuple[Val, str]], frame, method: str = "") -> bool:
        obj = mod.obj
        if obj is None or getattr(obj, "standalone", False):
            return False
        mdev = obj.dev
        for v, t in args:
            if v.kind != "tensor" or v.dev is None or not v.dev.known or (v.scalar and v.dev.is_cpu):
                continue
            if obj.dispatched:
                if v.dev.is_cpu:
                    self.report_dispatched_input(call, mod, v, t, frame)
                    return True
                continue
            if mdev is None or not mdev.known or not definitely_differ(mdev, v.dev):
                continue
            if v.dev.is_cpu:
                self.report_mix(call, (v, t), (Val("tensor", mdev, obj.moved or obj.origin, text=_MODULE_SIDE), self.text(call.func)
                                               .removesuffix("." + method) if method else self.text(call.func)), frame)
                return True
            self.report_module_on_cpu(call, mod, v, t, frame)
            return True
        return False

    def report_module_on_cpu(self, call, mod: Val, v: Val, vtext: str, frame) -> None:
        obj = mod.obj
        if obj.pending or getattr(obj, "in_plain_container", False):
            return  # the root cause (DEV101 / DEV103) is reported where the module was added
        key = ("module", obj.origin.span if obj.origin else span_of(call))
        if key in self.mix_origins:
            return
        self.mix_origins.add(key)
        mtext = self.text(call.func)
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("update", "forward", "generate", "compute"):
            mtext = self.text(call.func.value)
        if obj.role == "metric":
            code, what = "DEV108", "metric"
        elif obj.role == "loss":
            code, what = "DEV203", "loss (its weight)"
        elif obj.role == "criterion":
            code, what = "DEV108", "criterion"
        else:
            code, what = "DEV106", "model"
        same_scope = obj.origin is not None and self.scope_of(obj.origin.span.line) is self.scope_of(call.lineno)
        span = obj.origin.span if code in ("DEV108", "DEV203") and same_scope else span_of(call)
        related = [(span_of(call), f"called here with `{vtext}` (line {call.lineno})")]
        if obj.origin:
            related.append((obj.origin.span, obj.origin.reason))
        if v.origin:
            related.append((v.origin.span, v.origin.reason))
        dev_text = self._fix_device_text(v, vtext, frame, call.lineno)
        fix = None
        astmt = getattr(obj, "assign_stmt", None)
        if dev_text and astmt is not None and getattr(obj, "assign_frame", None) is frame and \
                getattr(obj, "assign_name", None) == mtext and self._available(dev_text, frame, astmt.line):
            fix = FixPlan("insert_after", astmt, text=f"{mtext}.to({dev_text})",
                          title=f"Move the {what.split(' ')[0]}: `{mtext}.to({dev_text})`")
        elif dev_text and frame.stmt_stack and _simple(mtext):
            fix = FixPlan("insert_before", span_of(frame.stmt_stack[-1 if code != "DEV106" else 0]),
                          text=f"{mtext}.to({dev_text})", title=f"Move the {what.split(' ')[0]}: `{mtext}.to({dev_text})`")
        oreason = obj.origin.reason if obj.origin else ""
        if obj.moved is None and oreason and "never moved" not in oreason and code == "DEV106":
            oreason += " and never moved"
        msg = (f"the {what} `{mtext}` is on {obj.dev.render()}" + (f" ({oreason})" if oreason else "")
               + f" but `{vtext}` is on {v.dev.render()}" + (f" ({v.origin.reason})" if v.origin else ""))
        self.add(Finding(code, span, msg, related, fix))

    def report_dispatched_input(self, call, mod: Val, v: Val, vtext: str, frame) -> None:
        obj = mod.obj
        related = []
        if obj.origin:
            related.append((obj.origin.span, obj.origin.reason))
        if v.origin:
            related.append((v.origin.span, v.origin.reason))
        mtext = self.text(call.func.value) if isinstance(call.func, ast.Attribute) else self.text(call.func)
        fix = None
        if isinstance(call.args[0] if call.args else None, ast.Name) and frame.stmt_stack and _simple(mtext):
            name = call.args[0].id
            fix = FixPlan("insert_before", span_of(frame.stmt_stack[-1]),
                          text=f"{name} = {name}.to({mtext}.get_input_embeddings().weight.device)",
                          title="Send the inputs to the device of the model's first layer")
        self.add(Finding("DEV502", span_of(call),
                         f"`{vtext}` is on cpu" + (f" ({v.origin.reason})" if v.origin else "")
                         + f" but `{mtext}` is placed by accelerate (device_map / quantization)"
                         + (f" ({obj.origin.reason})" if obj.origin else "")
                         + "; send inputs to the device of its first layer", related, fix))

    # ----------------------------------------------------------------- calls
    def e_Await(self, node, frame):
        return self.eval(node.value, frame)

    def e_Call(self, node, frame):
        self.budget -= 1
        func = node.func
        recv = None
        if isinstance(func, ast.Attribute):
            recv = self.eval(func.value, frame)
            self._recv[id(node)] = recv
            fval = self._attr_on(recv, func, frame)
        else:
            fval = self.eval(func, frame)
        args = []
        for a in node.args:
            v = self.eval(a.value if isinstance(a, ast.Starred) else a, frame)
            args.append(v)
        kwargs = {}
        for kw in node.keywords:
            v = self.eval(kw.value, frame)
            if kw.arg is None:
                if v.kind == "obj" and v.obj is not None and v.obj.kind == "dict" and not getattr(v.obj, "opaque", False):
                    kwargs.update({k: x for k, x in v.obj.keys.items() if isinstance(k, str)})
                else:
                    if v.kind == "tensor" and v.batch:  # `model(**inputs)`: a dict of tensors on one device
                        self._spread.setdefault(id(node), []).append((v, self.text(kw.value)))
                    kwargs["__opaque__"] = UNKNOWN  # may carry device=
                continue
            kwargs[kw.arg] = v
        if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda") and frame.pending_names:
            pend = frame.pending_names.pop(self.text(func.value), None)
            if pend is not None:
                pend.cancelled = True
        try:
            return self.call(node, fval, recv, args, kwargs, frame)
        except RecursionError:
            return UNKNOWN

    def _attr_on(self, recv: Val, func: ast.Attribute, frame) -> Val:
        if recv.kind == "qual":
            return Val("qual", const=f"{recv.const}.{func.attr}")
        if recv.kind in ("module", "obj", "class"):
            saved = self.frame
            v = self.e_Attribute_from(recv, func)
            self.frame = saved
            return v
        return Val("method", const=func.attr, bound=recv)

    def e_Attribute_from(self, base: Val, node: ast.Attribute) -> Val:
        attr = node.attr
        if base.kind in ("module", "obj") and base.obj is not None:
            obj = base.obj
            if attr in obj.attrs:
                return obj.attrs[attr]
            if obj.cls is not None:
                found = obj.cls.method(attr)
                if found is not None:
                    fn, owner = found
                    decos = _decorators(fn)
                    kind = "staticmethod" if "staticmethod" in decos else ("classmethod" if "classmethod" in decos else "method")
                    return Val("func", func=FuncRef(fn, None, owner, kind), bound=base)
            return Val("method", const=attr, bound=base)
        return _class_member(base, attr)

    def call(self, node, fval: Val, recv: Val | None, args, kwargs, frame) -> Val:
        kind = fval.kind
        if kind == "qual":
            return self.call_qual(node, fval.const, args, kwargs, frame)
        if kind == "method":
            r = fval.bound
            if r is None:
                return UNKNOWN
            if r.kind == "tensor":
                return self.tensor_method(node, r, fval.const, args, kwargs, frame)
            if r.kind == "module":
                return self.module_method(node, r, fval.const, args, kwargs, frame)
            if r.kind == "obj":
                return self.obj_method(node, r, fval.const, args, kwargs, frame)
            if r.kind == "params" and fval.const in ("__iter__",):
                return UNKNOWN
            if r.kind == "device" and fval.const == "type":
                return UNKNOWN
            if r.kind == "unknown" and fval.const in ("to", "cuda") and isinstance(node.func, ast.Attribute):
                # whatever it is (tensor or module), the result is on the target device
                dev = self.parse_to_args(args, kwargs, None) if fval.const == "to" else \
                    (Dev("cuda", args[0].const) if args and args[0].kind == "const" and isinstance(args[0].const, int) else CUDA)
                if dev is not None and dev.known:
                    return Val("tensor", dev, Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}"))
            return UNKNOWN
        if kind == "func":
            if self.standalone:
                return UNKNOWN
            self._interproc.add(id(node))
            return self.call_function(fval.func, args, kwargs, fval.bound, node)
        if kind == "class":
            if self.standalone:
                return UNKNOWN
            self._interproc.add(id(node))
            return self.instantiate(node, fval.func, args, kwargs, frame)
        if kind == "module":
            return self.call_module(node, fval, args, kwargs, frame)
        if kind == "obj" and fval.obj is not None and fval.obj.kind == "tokenizer":
            return self.obj_method(node, fval, "__call__", args, kwargs, frame)
        if kind == "obj" and fval.obj is not None and fval.obj.cls is not None:
            found = fval.obj.cls.method("__call__")
            if found:
                self._interproc.add(id(node))
                return self.call_function(FuncRef(found[0], None, found[1], "method"), args, kwargs, fval, node)
        return UNKNOWN

    # ---- same-file functions and classes
    def call_function(self, fref: FuncRef, args, kwargs, self_val: Val | None, call_node, standalone: bool = False) -> Val:
        fn = fref.node
        if self.budget <= 0 or self.depth >= MAX_DEPTH or id(fn) in self.active or (self.standalone and not standalone):
            return UNKNOWN
        a = fn.args
        params = [p.arg for p in a.posonlyargs + a.args]
        bound_args = list(args)
        if fref.kind in ("method", "classmethod") and params:
            bound_args = [self_val if self_val is not None else UNKNOWN] + bound_args
        memo_key = None
        if not standalone:
            try:
                memo_key = (id(fn), tuple(_sig(v) for v in bound_args), tuple(sorted((k, _sig(v)) for k, v in kwargs.items())))
            except TypeError:
                memo_key = None
            if memo_key is not None and memo_key in self.memo:
                return self.memo[memo_key]
        self.visited.add(id(fn))
        frame = Frame(fn, self.frame, call_node, closure=fref.closure)
        self._frames.append(frame)
        defaults = a.defaults
        n_no_default = len(params) - len(defaults)
        for i, p in enumerate(params):
            frame.params.add(p)
            if i < len(bound_args):
                v = bound_args[i]
            elif p in kwargs:
                v = kwargs[p]
            elif i >= n_no_default:
                v = self.eval(defaults[i - n_no_default], self.module_frame) if not standalone else UNKNOWN
            else:
                v = UNKNOWN
            frame.env[p] = self._param_val(p, v, fn)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            frame.params.add(p.arg)
            v = kwargs.get(p.arg) or (self.eval(d, self.module_frame) if d is not None and not standalone else UNKNOWN)
            frame.env[p.arg] = self._param_val(p.arg, v, fn)
        if a.vararg:
            frame.params.add(a.vararg.arg)
            frame.env[a.vararg.arg] = Val("obj", obj=Obj("tuple", items=list(bound_args[len(params):])))
        if a.kwarg:
            frame.params.add(a.kwarg.arg)
            d = Obj("dict")
            d.keys = {k: v for k, v in kwargs.items() if k not in params}
            frame.env[a.kwarg.arg] = Val("obj", obj=d)
        self.active.add(id(fn))
        self.depth += 1
        saved = self.frame
        self.frame = frame
        try:
            self.exec_block(fn.body, frame)
        finally:
            self.frame = saved
            self.depth -= 1
            self.active.discard(id(fn))
        ret = frame.returns if frame.returns is not None else Val("const", const=None)
        if memo_key is not None:
            self.memo[memo_key] = ret
        return ret

    def _param_val(self, name: str, v: Val, fn) -> Val:
        if v.kind == "unknown" and (name in DEVICE_WORDS or name.endswith("_device")):
            return Val("device", Dev("sym", key=("param", id(fn), name), text=name, accel=True))
        if v.kind in ("tensor", "module", "obj"):
            return v.with_text(name)
        return v

    def instantiate(self, node, info: ClassInfo, args, kwargs, frame) -> Val:
        obj = Obj("module" if info.is_module else "instance", cls=info, qual=info.name,
                  origin=Origin(span_of(node), f"created at line {node.lineno}"), created_line=node.lineno)
        val = Val("module" if info.is_module else "obj", obj=obj)
        if info.is_module:
            obj.training = True
        init = info.method("__init__")
        if init is not None:
            self.call_function(FuncRef(init[0], None, init[1], "method"), args, kwargs, val, node)
        if info.is_module and obj.moved is None:
            dev = None
            for name in obj.children:
                c = obj.attrs.get(name)
                if c is not None and c.obj is not None:
                    dev = join(dev, c.obj.dev) if dev is not None else c.obj.dev
            for name in obj.buffers:
                b = obj.attrs.get(name)
                if b is not None and b.kind == "tensor":
                    dev = join(dev, b.dev) if dev is not None else b.dev
            if dev is None and any(not b.startswith("torch.nn.Module") and b.startswith("torch.nn.")
                                   for b in (self.index.qualify(x) for x in info.bases)):
                dev = self.default_dev
            obj.dev = dev
            if dev is not None and dev.is_cpu:
                obj.origin = Origin(span_of(node), f"created at line {node.lineno} and never moved")
        return val

    def builds_modules(self, fn) -> bool:
        cached = self.builds_modules_cache.get(id(fn))
        if cached is not None:
            return cached
        found = False
        for sub in walk(fn):
            if isinstance(sub, ast.Call):
                name = FileIndex.dotted(sub.func) or ""
                q = self.index.qualify(name)
                last = q.rsplit(".", 1)[-1]
                if q.startswith("torch.nn.") and last[:1].isupper() and last not in T.PARAM_FREE_MODULES \
                        and last not in T.DATA_PARALLEL:
                    found = True
                    break
                info = self.index.classes.get(name)
                if info is not None and info.is_module and not any(self.index.qualify(b).rsplit(".", 1)[-1] in T.DATA_PARALLEL
                                                                   for b in info.bases):
                    found = True
                    break
        self.builds_modules_cache[id(fn)] = found
        return found

    # ---- modules
    def call_module(self, node, mod: Val, args, kwargs, frame, method: str = "") -> Val:
        obj = mod.obj
        arg_pairs = [(v, self.text(a)) for v, a in zip(args, node.args)] + \
                    [(v, kw.arg or "") for kw in node.keywords for v in [kwargs.get(kw.arg)] if v is not None] + \
                    self._spread.get(id(node), [])
        if isinstance(node.func, ast.Call):
            if obj is not None and obj.dev is not None and any(
                    v.kind == "tensor" and definitely_differ(obj.dev, v.dev) for v, _ in arg_pairs):
                return UNKNOWN  # DEV104 reports the module built in place; no cascade
        elif self.module_mix(node, mod, arg_pairs, frame, method):
            return UNKNOWN  # it fails here at run time; what follows would only repeat the finding
        if obj is not None and obj.cls is not None:
            if self.standalone:
                return UNKNOWN
            found = obj.cls.method("forward" if not method else method)
            if found is not None:
                self._interproc.add(id(node))
                return self.call_function(FuncRef(found[0], None, found[1], "method"), args, kwargs, mod, node)
            return UNKNOWN
        if obj is not None and obj.dev is not None and obj.dev.known and not obj.dispatched:
            return Val("tensor", obj.dev, obj.moved or obj.origin, scalar=obj.role in ("loss", "metric", "criterion"))
        tensors = [v for v, _ in arg_pairs if v.kind == "tensor"]
        if tensors and obj is not None and obj.dev is None:
            named = [(v, self.text(a)) for v, a in zip(args, node.args) if v.kind == "tensor"] + \
                    [(kwargs[k.arg], k.arg) for k in node.keywords if k.arg in kwargs and kwargs[k.arg].kind == "tensor"]
            if len(named) >= 2 and self.check_mix(node, named, frame):
                return UNKNOWN
            return self.result_of(tensors)
        return UNKNOWN

    def move_module(self, node, mod: Val, dev: Dev, frame, recv_text: str, move_text: str) -> None:
        obj = mod.obj
        if obj is None:
            return
        if obj.dispatched:
            self.add(Finding("DEV501", span_of(node),
                             f"`{self.text(node)}` moves a model that accelerate placed (device_map / quantization)"
                             + (f" ({obj.origin.reason})" if obj.origin else "")
                             + "; accelerate refuses to move an offloaded model and the move undoes the placement",
                             [(obj.origin.span, obj.origin.reason)] if obj.origin else [],
                             FixPlan("remove_move", span_of(node), text=recv_text,
                                     title="Drop the move: device_map already placed the model")))
            return
        if getattr(obj, "standalone", False):
            return
        origin = Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}")
        obj.move_call = move_text  # type: ignore[attr-defined]
        obj.move_recv = recv_text  # type: ignore[attr-defined]
        seen: set[int] = set()
        self._cur_move = (move_text, frame)
        self._move_rec(obj, dev, origin, frame, seen)
        pend = frame.pending_names.pop(recv_text, None)
        if pend is not None:
            pend.cancelled = True

    def _move_rec(self, obj: Obj, dev: Dev, origin: Origin, frame, seen: set) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if obj.dev is not None or obj.kind == "module":
            obj.dev = dev
        obj.moved = origin
        obj.moved_frame = frame
        if obj.cls is not None:
            self.moved_classes.add(obj.cls.name)
        for f in obj.pending:
            f.cancelled = True
        obj.pending.clear()
        for opt in obj.optimizers:
            if opt.loaded_at is not None and definitely_differ(CPU, dev):
                lo = opt.loaded_at
                opt.loaded_at = None
                fix = self._resume_fix(opt)
                f = Finding("DEV302", lo.span,
                            f"the optimizer state is loaded while the model is still on cpu ({lo.reason}); the model "
                            f"is {origin.reason}, so the optimizer's state stays on cpu and `step()` mixes devices",
                            [(origin.span, origin.reason)], fix)
                self.add(f)
        for name in list(obj.children):
            c = obj.attrs.get(name)
            if c is not None and c.obj is not None:
                self._move_rec(c.obj, dev, origin, frame, seen)
        for name in list(obj.buffers):
            b = obj.attrs.get(name)
            if b is not None and b.kind == "tensor":
                obj.attrs[name] = Val("tensor", dev, origin, scalar=b.scalar)
        for item in obj.items:
            if item.kind == "module" and item.obj is not None:
                self._move_rec(item.obj, dev, origin, frame, seen)

    def parse_to_args(self, args, kwargs, recv_dev) -> Dev | None:
        """The device a `.to(...)` call moves to; `recv_dev` when it only changes the dtype; TOP if unknown."""
        cand = kwargs.get("device")
        if cand is None and args:
            cand = args[0]
        if cand is None:
            return recv_dev
        if cand.kind == "device":
            return cand.dev or TOP
        if cand.kind == "tensor":
            return cand.dev or TOP
        if cand.kind == "const" and isinstance(cand.const, str):
            return concrete(cand.const) or TOP
        if cand.kind == "const" and isinstance(cand.const, int) and not isinstance(cand.const, bool):
            return Dev("cuda", cand.const)
        if cand.kind == "qual" and cand.const.startswith("torch.") and cand.const.rsplit(".", 1)[-1] in _DTYPES:
            return recv_dev
        return TOP

    def module_method(self, node, mod: Val, name: str, args, kwargs, frame) -> Val:
        obj = mod.obj
        recv_text = self.text(node.func.value)
        if name in ("to", "cuda", "cpu"):
            if name == "to":
                dev = self.parse_to_args(args, kwargs, obj.dev)
            elif name == "cuda":
                dev = Dev("cuda", args[0].const) if args and args[0].kind == "const" and isinstance(args[0].const, int) else CUDA
            else:
                dev = CPU
            if dev is not None and (dev != obj.dev or name != "to" or True):
                move_text = self.text(node)[len(recv_text):]
                if dev is not TOP or obj.dispatched:
                    self.move_module(node, mod, dev, frame, recv_text, move_text)
                elif obj is not None:
                    obj.dev = TOP
                    obj.moved = Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}")
                    for f in obj.pending:
                        f.cancelled = True
                    self._move_rec(obj, TOP, obj.moved, frame, set())
            return mod
        if name in ("train", "eval"):
            obj.training = (name == "train") if not args or args[0].kind != "const" else bool(args[0].const)
            return mod
        if name in ("half", "float", "double", "bfloat16", "requires_grad_", "share_memory", "apply", "type",
                    "zero_grad", "to_empty"):
            return mod
        if name in ("parameters", "named_parameters", "buffers", "named_buffers"):
            return Val("params", obj=obj, const="named" if name.startswith("named") else None)
        if name == "state_dict" and obj.dev is not None and obj.dev.known and not getattr(obj, "standalone", False):
            org = obj.moved or self._snapshot_origin(obj, node, frame, f"`{self.text(node)}`")
            return Val("obj", obj=Obj("dict"), elem=Val("tensor", obj.dev, org))
        if name == "register_buffer" and len(args) >= 2 and args[0].kind == "const":
            obj.buffers.add(args[0].const)
            obj.attrs[args[0].const] = args[1]
            return Val("const", const=None)
        if name == "add_module" and len(args) >= 2 and args[0].kind == "const" and args[1].kind == "module":
            obj.children.add(args[0].const)
            obj.attrs[args[0].const] = args[1]
            return Val("const", const=None)
        if name in ("append", "extend", "insert") and obj.qual.endswith(("ModuleList", "Sequential")):
            for a in args:
                if a.kind == "module":
                    obj.items.append(a)
            return Val("const", const=None)
        if name in ("forward", "generate", "update", "compute") or (obj.cls is None and name == "__call__"):
            if obj.cls is not None and obj.cls.method(name):
                found = obj.cls.method(name)
                self._interproc.add(id(node))
                return self.call_function(FuncRef(found[0], None, found[1], "method"), args, kwargs, mod, node)
            return self.call_module(node, mod, args, kwargs, frame, method=name)
        if name in _HEAD_RESETTERS and obj.cls is None and obj.moved is not None and \
                definitely_differ(self.default_dev, obj.dev) and not getattr(obj, "standalone", False):
            mc = getattr(obj, "move_call", None)
            stmt = frame.stmt_stack[-1] if frame.stmt_stack else None
            fix = FixPlan("insert_after", span_of(stmt), text=f"{recv_text}{mc}",
                          title=f"Move the model again: `{recv_text}{mc}`") if mc and stmt is not None and _simple(recv_text) else None
            f = self.add(Finding("DEV102", span_of(node),
                                 f"`{self.text(node)}` builds a new head on cpu after `{recv_text}` was moved "
                                 f"({obj.moved.reason}); it stays on cpu", [(obj.moved.span, obj.moved.reason)], fix))
            frame.pending_names[recv_text] = f
            return Val("const", const=None)
        if name == "get_input_embeddings":
            return Val("module", obj=Obj("module", dev=TOP if obj.dispatched else obj.dev))
        return UNKNOWN

    def obj_method(self, node, r: Val, name: str, args, kwargs, frame) -> Val:
        obj = r.obj
        if obj is None:
            return UNKNOWN
        if obj.kind == "list" and name in ("append", "insert", "extend"):
            v = args[-1] if args else UNKNOWN
            if v.kind == "module" and v.obj is not None and isinstance(node.func.value, ast.Attribute):
                v.obj.in_plain_container = True  # type: ignore[attr-defined]
            if name == "extend":
                v = self.iter_elem(v, None, frame)
            obj.items.append(v)
            r.elem = None
            return Val("const", const=None)
        if obj.kind == "dict":
            if name in ("items",):
                return Val("obj", obj=Obj("iter"), elem=Val("obj", obj=Obj("tuple", items=[UNKNOWN, r.elem or self.elem_of_dict(obj)])))
            if name == "values":
                return Val("obj", obj=Obj("iter"), elem=r.elem or self.elem_of_dict(obj))
            if name == "get" and args and args[0].kind == "const":
                return obj.keys.get(args[0].const, UNKNOWN)
        if obj.kind == "optimizer":
            if name == "load_state_dict":
                mods = [m for m in obj.modules if m.kind == "module"]
                if mods and all(m.moved is None and (m.dev is None or m.dev.is_cpu) for m in mods) and \
                        any(m.dev is not None for m in mods):
                    obj.loaded_at = Origin(span_of(node), f"`{self.text(node.func)}()` at line {node.lineno}")
                    obj.load_frame = frame  # type: ignore[attr-defined]
            return UNKNOWN
        if obj.kind == "tokenizer":
            if name in ("encode", "__call__", "apply_chat_template", "batch_encode_plus", "encode_plus"):
                rt = kwargs.get("return_tensors")
                if rt is not None and rt.kind == "const" and rt.const == "pt":
                    # encode() gives a tensor, apply_chat_template() one unless return_dict=True; the rest a BatchEncoding
                    rd = kwargs.get("return_dict")
                    encoding = name not in ("encode", "apply_chat_template") or (rd is not None and rd.kind == "const" and rd.const is True)
                    return Val("tensor", CPU, Origin(span_of(node), f"made on cpu by `{self.text(node.func)}()` at line {node.lineno}"),
                               batch=ENCODING if encoding else "")
            return UNKNOWN
        return UNKNOWN

    def elem_of_dict(self, obj: Obj) -> Val:
        out = None
        for v in obj.keys.values():
            out = v if out is None else self.join(out, v)
        return out or UNKNOWN

    def _resume_fix(self, opt: Obj) -> FixPlan | None:
        """Move the model right after it is built (before the optimizer state is loaded)."""
        move_text, _ = getattr(self, "_cur_move", (None, None))
        lf = getattr(opt, "load_frame", None)
        root = next((m for m in opt.modules if getattr(m, "assign_stmt", None) is not None), None)
        if root is None:
            root = next((m for m in self._all_modules if any(id(c.obj) in {id(x) for x in opt.modules}
                         for c in m.attrs.values() if c.obj is not None) and getattr(m, "assign_stmt", None)), None)
        if not move_text or root is None or lf is None or getattr(root, "assign_frame", None) is not lf:
            return None
        line = root.assign_stmt.line
        inner = move_text[move_text.find("(") + 1:move_text.rfind(")")] if "(" in move_text else ""
        if inner and not all(self._available(p.strip().split("=")[-1].strip(), lf, line) for p in inner.split(",")):
            return None
        text = f"{root.assign_name}{move_text}"
        return FixPlan("insert_after", root.assign_stmt, text=text,
                       title=f"Move the model before loading the optimizer state: `{text}`")

    def tensor_method(self, node, t: Val, name: str, args, kwargs, frame) -> Val:
        if name == "to":
            dev = self.parse_to_args(args, kwargs, t.dev)
            if dev is t.dev:
                return Val("tensor", t.dev, t.origin, scalar=t.scalar, batch=t.batch)
            return Val("tensor", dev, Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}"),
                       scalar=t.scalar, batch=t.batch)
        if name == "cuda":
            dev = Dev("cuda", args[0].const) if args and args[0].kind == "const" and isinstance(args[0].const, int) else CUDA
            return Val("tensor", dev, Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}"),
                       scalar=t.scalar, batch=t.batch)
        if name == "cpu":
            return Val("tensor", CPU, Origin(span_of(node), f"copied to cpu by `.cpu()` at line {node.lineno}"),
                       scalar=t.scalar, batch=t.batch)
        if name == "keys":  # not a Tensor method: `t` is a dict of tensors; its keys are not tensors
            return UNKNOWN
        if name == "items":
            value = Val("tensor", t.dev, t.origin)
            return Val("obj", obj=Obj("iter"), elem=Val("obj", obj=Obj("tuple", items=[UNKNOWN, value])))
        if name in ("item", "tolist"):
            return UNKNOWN
        if name in T.NON_TENSOR_METHODS:
            return UNKNOWN
        if name in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
            d = kwargs.get("device")
            return Val("tensor", d.dev if d is not None and d.kind == "device" else t.dev, t.origin)
        if name in ("copy_", "type_as", "masked_scatter_", "set_"):
            return t
        tensor_args = [(v, self.text(a)) for v, a in zip(args, node.args) if v.kind == "tensor"]
        if tensor_args and self.check_mix(node, [(t, self.text(node.func.value))] + tensor_args, frame):
            return UNKNOWN
        scalar = t.scalar
        if name in ("sum", "mean", "max", "min", "prod", "norm", "std", "var", "all", "any", "amax", "amin") and not args \
                and not kwargs:
            scalar = True
        return Val("tensor", t.dev, t.origin, scalar=scalar)

    # ---- qualified names (torch and friends)
    def call_qual(self, node, q: str, args, kwargs, frame) -> Val:
        if q.startswith("builtins."):
            return self.call_builtin(node, q[9:], args, kwargs, frame)
        if q.startswith("torch."):
            return self.call_torch(node, q, args, kwargs, frame)
        last = q.rsplit(".", 1)[-1]
        if q.startswith(("torchmetrics.",)) and last[:1].isupper():
            return Val("module", obj=Obj("module", qual=q, dev=kwargs["device"].dev if "device" in kwargs and kwargs["device"].kind == "device" else CPU,
                                         role="metric", origin=Origin(span_of(node), f"created at line {node.lineno} on cpu")))
        if last == "from_pretrained" or last == "from_config":
            owner = q.rsplit(".", 2)[-2] if q.count(".") >= 1 else ""
            if "Tokenizer" in owner or "Processor" in owner:
                return Val("obj", obj=Obj("tokenizer", qual=q))
            dm = kwargs.get("device_map")
            obj = Obj("module", qual=q, origin=Origin(span_of(node), f"loaded at line {node.lineno}"))
            quant = next((k for k in ("load_in_8bit", "load_in_4bit") if k in kwargs and kwargs[k].kind == "const"
                          and kwargs[k].const is True), None)
            if quant is not None or "quantization_config" in kwargs:
                obj.dispatched = True
                obj.dev = TOP
                obj.origin = Origin(span_of(node), f"loaded quantized ({quant or 'quantization_config'}) at line {node.lineno}")
                return Val("module", obj=obj)
            if dm is not None:
                if (dm.kind == "const" and dm.const in ("auto", "balanced", "balanced_low_0", "sequential")):
                    obj.dispatched = True
                    obj.dev = TOP
                    obj.origin = Origin(span_of(node), f"loaded with device_map={self.text(next(k.value for k in node.keywords if k.arg == 'device_map')) if any(k.arg == 'device_map' for k in node.keywords) else repr(dm.const)} at line {node.lineno}")
                else:
                    obj.dev = TOP
            elif q.startswith(("transformers.", "diffusers.")) and not any(k.arg is None for k in node.keywords):
                obj.dev = CPU
                obj.origin = Origin(span_of(node), f"loaded on cpu at line {node.lineno}")
            else:
                obj.dev = TOP
            return Val("module", obj=obj)
        if q.startswith(("torchvision.models.", "timm.create_model", "timm.models.", "torch.hub.load",
                         "segmentation_models_pytorch.")) and (last[:1].islower() or last[:1].isupper()):
            if "__opaque__" in kwargs:
                return UNKNOWN
            return Val("module", obj=Obj("module", qual=q, dev=self.default_dev if self.default_dev.known else TOP,
                                         origin=Origin(span_of(node), f"created at line {node.lineno}"),
                                         created_line=node.lineno, training=True))
        if q == "copy.deepcopy" and args and args[0].kind == "module" and args[0].obj is not None:
            src = args[0].obj
            if src.dev is None or not src.dev.known or getattr(src, "standalone", False):
                return UNKNOWN
            reason = (f"copied by `{self.text(node)}` at line {node.lineno}" +
                      (" before the model was moved" if src.moved is None else ""))
            return Val("module", obj=Obj("module", qual=src.qual, dev=src.dev, origin=Origin(span_of(node), reason),
                                         created_line=node.lineno, training=src.training, role="copy"))
        if last in ("get_peft_model", "prepare_model_for_kbit_training") and args and args[0].kind == "module":
            args[0].obj.peft = True
            return args[0]
        return UNKNOWN

    def call_builtin(self, node, name: str, args, kwargs, frame) -> Val:
        if name == "enumerate" and args:
            return Val("obj", obj=Obj("iter"), elem=Val("obj", obj=Obj("tuple", items=[UNKNOWN, self.iter_elem(args[0], None, frame)])))
        if name == "zip" and args:
            return Val("obj", obj=Obj("iter"), elem=Val("obj", obj=Obj("tuple", items=[self.iter_elem(a, None, frame) for a in args])))
        if name in ("list", "tuple", "sorted", "reversed", "iter") and args:
            el = self.iter_elem(args[0], None, frame)
            return Val("obj", obj=Obj("list"), elem=el)
        if name == "next" and args:
            a = args[0]
            if a.kind == "params":
                o = a.obj
                if o is not None and o.dev is not None and o.dev.known and not getattr(o, "standalone", False):
                    return Val("tensor", o.dev, o.moved or o.origin)
                return UNKNOWN
            return self.iter_elem(a, None, frame)
        if name == "super":
            return UNKNOWN
        if name == "dict":
            d = Obj("dict")
            d.keys = {k: v for k, v in kwargs.items() if k != "__opaque__"}
            if args or "__opaque__" in kwargs:
                d.opaque = True  # type: ignore[attr-defined]
            return Val("obj", obj=d)
        if name in ("len", "int", "float", "round"):
            return UNKNOWN
        if name == "getattr" and len(args) >= 2 and args[1].kind == "const" and args[0].kind in ("module", "obj") and args[0].obj:
            return args[0].obj.attrs.get(args[1].const, UNKNOWN)
        if name in ("sum",) and args:
            el = self.iter_elem(args[0], None, frame)
            return el if el.kind == "tensor" else UNKNOWN
        return UNKNOWN

    def call_torch(self, node, q: str, args, kwargs, frame) -> Val:
        rest = q[6:]
        last = rest.rsplit(".", 1)[-1]
        if "__opaque__" in kwargs and "device" not in kwargs:
            return UNKNOWN
        if rest in T.FACTORIES or (rest.startswith("fft.") and rest in T.FACTORIES):
            d = kwargs.get("device")
            if d is not None:
                dev = self._as_device(d)
                if d.kind == "device" and d.origin is not None and dev is not None and dev.is_cpu:
                    return Val("tensor", dev, d.origin)
                return Val("tensor", dev, Origin(span_of(node), f"created on {dev.render() if dev else '?'} at line {node.lineno}"))
            scalar = False
            if rest in T.MAYBE_SCALAR_FACTORIES:
                a0 = node.args[0] if node.args else None
                scalar = not (isinstance(a0, (ast.List, ast.ListComp, ast.Tuple)) or
                              (args and args[0].kind == "obj" and args[0].obj is not None and args[0].obj.kind in ("list", "tuple")))
                if args and args[0].kind == "tensor":
                    return Val("tensor", args[0].dev, args[0].origin, scalar=args[0].scalar)
                if a0 is not None and isinstance(a0, ast.Name) and args[0].kind == "unknown":
                    scalar = True
            if self.default_dev is not CPU and self.default_dev.known:
                return Val("tensor", self.default_dev, self.default_origin, scalar=scalar)
            if self.default_dev is TOP:
                return UNKNOWN
            org = Origin(span_of(node), f"created at line {node.lineno} without device=", "factory")
            return Val("tensor", CPU, org, scalar=scalar)
        if rest in T.LIKE_FACTORIES or last in T.LIKE_FACTORIES:
            d = kwargs.get("device")
            if d is not None:
                return Val("tensor", self._as_device(d), Origin(span_of(node), f"created at line {node.lineno}"))
            return Val("tensor", args[0].dev, args[0].origin, scalar=args[0].scalar) if args and args[0].kind == "tensor" else UNKNOWN
        if rest in T.LEGACY_CPU_TYPES:
            if self.default_dev is not CPU:
                return UNKNOWN
            scalar = not node.args or not isinstance(node.args[0], (ast.Constant, ast.Name, ast.Tuple, ast.List, ast.BinOp))
            return Val("tensor", CPU, Origin(span_of(node), f"created at line {node.lineno} by a legacy cpu constructor", "legacy"), scalar=False)
        if rest.startswith("cuda.") and last in T.LEGACY_CPU_TYPES:
            return Val("tensor", CUDA, Origin(span_of(node), f"created on cuda at line {node.lineno}"))
        if rest in T.CPU_ONLY_FUNCS:
            return Val("tensor", CPU, Origin(span_of(node), f"created at line {node.lineno} from a numpy array (cpu)"))
        if rest == "device":
            if args:
                a = args[0]
                if a.kind == "const" and isinstance(a.const, str):
                    if len(args) > 1 and args[1].kind == "const" and isinstance(args[1].const, int):
                        return Val("device", Dev(a.const, args[1].const))
                    d = concrete(a.const)
                    return Val("device", d or TOP, Origin(span_of(node), f"set at line {node.lineno}"))
                if a.kind == "device":
                    return a
                text = self.text(node.args[0])
                accel = any(w in text.lower() for w in ("device", "cuda", "gpu"))
                return Val("device", Dev("sym", key=("device", node.lineno, node.col_offset), text=self.text(node), accel=accel),
                           Origin(span_of(node), f"set at line {node.lineno}"))
            return UNKNOWN
        if rest in ("set_default_device",):
            if args:
                self.default_dev = self._as_device(args[0]) or TOP
                self.default_origin = Origin(span_of(node), f"default device set at line {node.lineno}")
            return UNKNOWN
        if rest == "set_default_tensor_type":
            if args and args[0].kind == "const" and isinstance(args[0].const, str):
                self.default_dev = CUDA if "cuda" in args[0].const else CPU
            elif args and args[0].kind == "qual":
                self.default_dev = CUDA if ".cuda." in args[0].const else CPU
            else:
                self.default_dev = TOP
            self.default_origin = Origin(span_of(node), f"default tensor type set at line {node.lineno}")
            return UNKNOWN
        if rest == "load":
            return UNKNOWN
        if rest.startswith("nn.") and last[:1].isupper() and not rest.startswith(("nn.functional", "nn.utils", "nn.init")):
            return self.torch_module(node, rest, last, args, kwargs, frame)
        if rest.startswith("optim.") and last in T.OPTIMIZERS:
            obj = Obj("optimizer", qual=q, origin=Origin(span_of(node), f"created at line {node.lineno}"))
            obj.fused = any(kwargs.get(k) is not None and kwargs[k].kind == "const" and kwargs[k].const is True
                            for k in ("fused", "foreach", "capturable"))
            for m in self._param_modules(args[:1] + [kwargs.get("params", UNKNOWN)]):
                obj.modules.append(m)
                m.optimizers.append(obj)
            self._optimizers.append(obj)
            return Val("obj", obj=obj)
        if rest.startswith("utils.data.") and last == "DataLoader":
            return self.dataloader(node, args, kwargs, frame)
        if rest.startswith("utils.data.") and last == "TensorDataset":
            obj = Obj("dataset", qual=q)
            obj.items = [a for a in args]
            return Val("obj", obj=obj)
        if last in T.MIXING_OK or rest.startswith(("cuda.", "distributed.", "jit.", "backends.", "amp.", "autograd.", "testing.",
                                                   "onnx.", "fx.", "export.", "compiler.", "_dynamo", "utils.", "hub.", "profiler.")):
            return UNKNOWN
        # an op on tensors: they must share a device
        vals = []
        for v, a in zip(args, node.args):
            if v.kind == "tensor":
                vals.append((v, self.text(a)))
            elif v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple") and \
                    (last in T.SEQUENCE_OPS or rest.startswith("nn.functional.")):
                items = list(v.obj.items) + ([v.elem] if v.elem is not None else [])
                if not isinstance(a, (ast.List, ast.Tuple)):
                    items = [self.elem_of(v.obj)] if v.obj.items else ([v.elem] if v.elem is not None else [])
                for i, it in enumerate(items):
                    if it.kind == "tensor":
                        t = self.text(a.elts[i]) if isinstance(a, (ast.List, ast.Tuple)) and i < len(a.elts) else self.text(a)
                        vals.append((it, t))
        for kw in node.keywords:
            v = kwargs.get(kw.arg) if kw.arg else None
            if v is not None and v.kind == "tensor" and kw.arg not in ("out",):
                vals.append((v, self.text(kw.value)))
        if vals:
            if self.check_mix(node, vals, frame):
                return UNKNOWN
            res = self.result_of([v for v, _ in vals])
            if last in ("meshgrid", "broadcast_tensors") :
                return Val("obj", obj=Obj("tuple"), elem=res)
            return res
        return UNKNOWN

    def _as_device(self, d: Val) -> Dev | None:
        if d.kind == "device":
            return d.dev or TOP
        if d.kind == "const" and isinstance(d.const, str):
            return concrete(d.const) or TOP
        if d.kind == "tensor":
            return TOP
        return TOP

    def _param_modules(self, vals) -> list[Obj]:
        out = []
        for v in vals:
            if v is None:
                continue
            if v.kind == "params" and v.obj is not None:
                out.append(v.obj)
            elif v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple"):
                for it in v.obj.items:
                    if it.kind == "obj" and it.obj is not None and it.obj.kind == "dict":
                        out.extend(self._param_modules([it.obj.keys.get("params")]))
                    else:
                        out.extend(self._param_modules([it]))
        return out

    def torch_module(self, node, rest: str, last: str, args, kwargs, frame) -> Val:
        qual = "torch." + rest
        org = Origin(span_of(node), f"created at line {node.lineno}")
        obj = Obj("module", qual=qual, origin=org, created_line=node.lineno)
        obj.training = True
        if last in T.DATA_PARALLEL and args and args[0].kind == "module":
            return args[0]
        if last in ("Sequential", "ModuleList", "ModuleDict"):
            items = []
            for a in args:
                if a.kind == "module":
                    items.append(a)
                elif a.kind == "obj" and a.obj is not None:
                    items.extend(x for x in a.obj.items if x.kind == "module")
                    if a.elem is not None and a.elem.kind == "module":
                        items.append(a.elem)
            obj.items = items
            dev = None
            for it in items:
                if it.obj is not None and it.obj.dev is not None:
                    dev = join(dev, it.obj.dev) if dev is not None else it.obj.dev
            obj.dev = dev
            if dev is not None and dev.is_cpu:
                obj.origin = Origin(span_of(node), f"created at line {node.lineno}")
            return Val("module", obj=obj)
        d = kwargs.get("device")
        if last in T.WEIGHTED_LOSSES:
            w = next((kwargs[k] for k in T.LOSS_WEIGHT_KWARGS if k in kwargs and kwargs[k].kind == "tensor"), None)
            if w is not None:
                obj.dev = w.dev
                obj.role = "loss"
                obj.buffers.add("weight")
                obj.attrs["weight"] = w
                obj.origin = Origin(span_of(node), f"created at line {node.lineno} with a weight on {w.dev.render() if w.dev else '?'}")
            return Val("module", obj=obj)
        if last in T.PARAM_FREE_MODULES:
            return Val("module", obj=obj)
        if d is not None:
            obj.dev = self._as_device(d)
        else:
            obj.dev = self.default_dev
        return Val("module", obj=obj)

    def dataloader(self, node, args, kwargs, frame) -> Val:
        obj = Obj("loader", origin=Origin(span_of(node), f"DataLoader at line {node.lineno}"))
        ds = args[0] if args else kwargs.get("dataset", UNKNOWN)
        collate = kwargs.get("collate_fn")
        org = Origin(span_of(node), f"a batch from the DataLoader at line {node.lineno}, which yields cpu tensors", "batch")
        batch = Val("tensor", CPU, org, batch=COLLATED)
        if collate is not None:
            batch = UNKNOWN
            if collate.kind == "func":
                r = self.call_function(collate.func, [UNKNOWN], {}, None, node)
                if r.kind == "tensor":
                    batch = Val("tensor", r.dev, org if r.dev is not None and r.dev.is_cpu else r.origin)
        elif ds.kind == "obj" and ds.obj is not None and ds.obj.kind == "dataset":
            dev = None
            for it in ds.obj.items:
                dev = join(dev, it.dev) if (it.kind == "tensor") else TOP
            batch = Val("tensor", dev, org if dev is not None and dev.is_cpu else None, batch=COLLATED) if dev is not None else UNKNOWN
        elif ds.kind == "obj" and ds.obj is not None and ds.obj.cls is not None:
            found = ds.obj.cls.method("__getitem__")
            batch = UNKNOWN
            if found:
                r = self.call_function(FuncRef(found[0], None, found[1], "method"), [UNKNOWN], {}, ds, node)
                if r.kind == "tensor" and r.dev is not None and r.dev.is_cpu:
                    batch = Val("tensor", CPU, org)
        elif ds.kind != "unknown" and ds.kind != "obj":
            batch = UNKNOWN
        if self.default_dev is not CPU:
            batch = UNKNOWN
        obj.attrs["batch"] = batch
        return Val("obj", obj=obj)


def _class_member(base: Val, attr: str) -> Val:
    """`Cls.attr` for a class defined in this file: its function, bound for a classmethod."""
    if base.kind == "class" and isinstance(base.func, ClassInfo):
        found = base.func.method(attr)
        if found is not None:
            fn, owner = found
            decos = _decorators(fn)
            kind = "staticmethod" if "staticmethod" in decos else ("classmethod" if "classmethod" in decos else "function")
            return Val("func", func=FuncRef(fn, None, owner, kind), bound=base if kind == "classmethod" else None)
    return UNKNOWN


def _call_counts(source: str, names: set[str]) -> dict[str, int]:
    """`source.count(name + "(")` for each name, in one scan instead of one per function (which
    made the driver quadratic). Each occurrence is the tail of a maximal word followed by "("."""
    runs: dict[str, int] = {}
    for w in _CALLED_WORD.findall(source):
        runs[w] = runs.get(w, 0) + 1
    out: dict[str, int] = {}
    for w, n in runs.items():
        for i in range(len(w)):
            tail = w[i:]
            if tail in names:
                out[tail] = out.get(tail, 0) + n
    return out


_CALLED_WORD = re.compile(r"\b(\w+)\(")


def _simple(text: str) -> bool:
    return all(p.isidentifier() for p in text.split("."))


def _sig(v: Val):
    if v.kind == "tensor":
        return ("t", v.dev, v.scalar)
    if v.kind in ("module", "obj"):
        return (v.kind, id(v.obj), v.obj.training if v.obj is not None else None)
    if v.kind == "const":
        c = v.const
        return ("c", c if isinstance(c, (int, float, str, bool, type(None))) else id(c))
    if v.kind == "device":
        return ("d", v.dev)
    if v.kind == "func":
        return ("f", id(v.func.node) if v.func else 0)
    if v.kind == "class":
        return ("k", id(v.func))
    if v.kind == "params":
        return ("p", id(v.obj))
    return (v.kind,)


# Handlers by node type, looked up once per node instead of by name (`"e_" + type(node).__name__`).
_EXPR_HANDLERS = {t: getattr(Interpreter, "e_" + t.__name__) for t in vars(ast).values()
                  if isinstance(t, type) and issubclass(t, ast.expr) and hasattr(Interpreter, "e_" + t.__name__)}
_STMT_HANDLERS = {t: getattr(Interpreter, "s_" + t.__name__) for t in vars(ast).values()
                  if isinstance(t, type) and issubclass(t, ast.stmt) and hasattr(Interpreter, "s_" + t.__name__)}

_DTYPES = frozenset({"float", "float32", "float64", "double", "half", "float16", "bfloat16", "int", "int32", "int64",
                     "long", "int8", "uint8", "bool", "short", "int16", "complex64", "complex128", "cfloat"})
_TENSOR_ATTRS = frozenset({"shape", "size", "device", "dtype", "dim", "ndim", "view", "reshape", "transpose",
                           "permute", "unsqueeze", "squeeze", "contiguous", "flatten", "masked_fill", "matmul",
                           "float", "half", "softmax", "sum", "mean", "numel", "expand", "repeat", "chunk", "split"})
_HEAD_RESETTERS = frozenset({"reset_classifier", "reset_head"})  # timm: a new nn.Linear on cpu
_MODULE_SIDE = "\x00module"  # marks the module side of a mix: `model.device` is not an nn.Module attribute
