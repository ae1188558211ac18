"""The interpreter's state and driver: module-level code first, then every function not yet reached
runs once on its own (unknown arguments, calls not followed); source text and device hints.
"""

from __future__ import annotations

import ast
import re
import time

from devflow.analysis import torch_api as T
from devflow.analysis.walk import walk
from devflow.analysis.findings import Finding
from devflow.analysis.index import ClassInfo, FileIndex
from devflow.analysis.lattice import CPU, CURRENT_IS_DEFAULT, TOP, Dev
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.lines import split_lines
from devflow.analysis.program import LINE_BASE, unit_of_line
from devflow.analysis.interp.global_view import GlobalView, global_reads
from devflow.analysis.interp.frames import span_of, FuncRef, Frame, attribute_calls, decorators, call_counts, call_sig, \
    TENSOR_ATTRS, DECO_CACHE


_CLASS_DEF = re.compile(r"\bclass\s+(\w+)\s*\(")


class Driver:
    """State of one run over a file, the entry points, source text and hints."""

    def __init__(self, tree: ast.Module, source: str, index: FileIndex, budget: int, project=None,
                 deadline: float | None = None, path: str | None = None):
        self.tree = tree
        self.source = source
        # time.monotonic() past which the run stops as if its budget were spent (a caller's time
        # budget per file); `out_of_time` then says the file was only partly analysed.
        self.deadline = deadline
        self.out_of_time = False
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
        # bumped when an attribute store changes where an object's state lives (`set_attr`): part of
        # every memo key, so a method run again after `layer.set_values(cuda_tensors)` sees the new state
        self.heap_epoch = 0
        self.memo_steps: dict = {}  # memo key -> optimizers the call stepped (replayed on a memo hit)
        self.memo_moves: dict = {}  # memo key -> parameters the call moved in place (rebound on a memo hit)
        self.step_recorders: list[list] = []  # one list per call being run: optimizers stepped in it
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
        self._param_roots: dict = {}  # span of a model built on cpu -> that model (its parameters' owner)
        self._param_nodes: set[int] = set()  # `nn.Parameter(...)` calls: their tensor is a parameter of its module
        self._cur_move = (None, None)
        self.moves_made: dict = {}  # id(origin) -> a module move, for fixes that repeat it (repeat_move)
        self.global_view = GlobalView(tree)  # module-level bindings in order (global_view: M13)
        self.global_point: int | None = None  # running a function the module never calls: defined here
        self.path = path  # the checked file (None: its importers are not known)
        self._mutated: set[str] | None = None  # its globals its importers may change (importers.py)
        # Per call node (by id; the tree is never written to): the receiver last evaluated, and
        # whether the call went into a same-file function.
        self._recv: dict[int, Val] = {}
        self._spread: dict[int, list[tuple[Val, str]]] = {}  # call -> tensor containers passed as **batch
        self._starred: dict[int, list[Val]] = {}  # call -> containers of unknown length spread as *xs
        self._interproc: set[int] = set()
        # calls whose returned tensors keep the origins of their arguments (`alpha, sigma = self.f(self.sigmas[i])`):
        # the device was chosen where the argument got it, not by the callee, so the result keeps that origin
        self._passed_through: set[int] = set()
        self._optimizers: list[Obj] = []
        self.init_units(project)  # `project`: where imports of project files resolve (None: nowhere)

    def past_deadline(self) -> bool:
        """Checked where the budget is counted (every 256 statements): stops the run when past the deadline."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.out_of_time = True
            self.budget = 0
            return True
        return False

    def run(self) -> None:
        token = CURRENT_IS_DEFAULT.set(self.current_is_default)
        try:
            self._run()
        finally:
            CURRENT_IS_DEFAULT.reset(token)

    def _run(self) -> None:
        DECO_CACHE.clear()  # per file: never keeps another file's tree alive
        self.exec_block(self.tree.body, self.module_frame)
        self.global_view.finish(self.module_frame.env)
        top = set()
        for st in self.tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                top.add(id(st))
            elif isinstance(st, (ast.If, ast.Try)):
                top.update(id(n) for n in walk(st) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        calls = call_counts(self.source, {fn.name for fn in self.index.functions})
        attr_calls = attribute_calls(self.source)
        # the classes this file builds by name (`Client(...)`): one text scan, as for the functions it calls,
        # less each `class Client(Base):` line
        named = call_counts(self.source, {c.name for c in self.index.all_classes})
        defined = call_counts(" ".join(f"{m}(" for m in _CLASS_DEF.findall(self.source)), set(named))
        built = {c for c, n in named.items() if n > defined.get(c, 0)}
        for fn in self.index.functions:
            if id(fn) in self.visited or self.budget <= 0:
                continue
            owner = self.index.parent_class.get(id(fn))
            if owner is None and id(fn) not in top:
                continue  # nested functions run with their parent
            # an uncalled top-level function is an entry point (main() run by fire/typer/...; a route or startup
            # hook a web framework runs, `@app.post(...)`, `@asynccontextmanager` lifespan): follow its calls
            entry = owner is None and calls.get(fn.name, 0) <= 1
            callback = owner is not None and self._callback_method(fn, owner, built, attr_calls)
            reached = set(self.visited)
            self.run_standalone(fn, owner, follow=entry or callback)
            if callback:  # what it called still gets its own pass (its values from self may be better known)
                self.visited = reached | {id(fn)}
        self.run_inherited_hooks()

    @staticmethod
    def _callback_method(fn, owner: ClassInfo, built: set, attr_calls: set) -> bool:
        """A public method this file never calls, of a plain class it instantiates: the instance is handed to
        a library that calls the method (a federated-learning client's `fit` / `evaluate`, a server handler),
        so it is an entry point whose calls are followed, with the module-level values it passes (a global
        model and loader). nn.Module methods are not: the module machinery runs them (forward on its own pass)."""
        return not owner.is_module and not fn.name.startswith("_") and fn.name not in attr_calls \
            and owner.name in built and "staticmethod" not in decorators(fn)

    def run_standalone(self, fn, owner: ClassInfo | None, follow: bool = False, defined_in: ClassInfo | None = None,
                       site=None) -> None:
        self.standalone = not follow  # callees get their own pass: do not follow calls from here
        self.global_point = self.global_view.point_of(fn)  # its globals: any binding from its definition on
        decos = decorators(fn)
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
        entry = self.framework_entry(fn, owner, self_val)
        if entry is not None:  # a Lightning hook, a logits processor: called by the framework with these
            args, self.standalone = entry, False
        if owner is not None and self_val is not None and entry is None:
            self.init_standalone_self(fn, owner, self_val, site)  # what __init__ stores on every instance
        kind = "function" if self_val is None else ("classmethod" if self_val.kind == "class" else "method")
        # (an inherited method runs in the file of the class that defines it: its names resolve there)
        # (`site`: where the checked file reaches it, for a finding that lies in another file)
        self.call_function(FuncRef(fn, None, defined_in or owner, kind), args, {}, self_val, site, standalone=True)

    def globals_sig(self, fn) -> tuple:
        """The module-level values `fn` reads by name (its own code), for the memo key of a call: the same
        function called again after `model = Other()` sees the other model (global_view)."""
        env = self.module_frame.env
        lines, first, facts = self._own_lines(fn)
        reads = global_reads(fn, self.builds_modules_cache if facts is None else facts, lines, first)
        return tuple(call_sig(v) if v is not None else None for v in map(env.get, reads))

    def _module_device_inputs(self, fn, owner: ClassInfo, self_val: Val) -> list[Val]:
        """forward() on its own: its tensor inputs and its torch.nn layers share "the module's device".

        Only inputs used as tensors (`x.shape`, `x.size()`, `x.device`, ...) count, and only layers
        built in __init__ from torch.nn (Linear, Conv, Embedding, ...): a cpu tensor made in forward
        without device= that meets them fails as soon as the module runs on an accelerator.
        """
        dev = Dev("sym", key=("module-device", owner.name), text="the module's device", accel=True)
        used: set[str] = set()
        for n in walk(fn):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.attr in TENSOR_ATTRS:
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
                    if q.startswith("torch.nn.") and last in T.NN_MODULES and last not in T.PARAM_FREE_MODULES \
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
        self.moves_made = {}
        self.global_view.history, self.global_view.cache, self.global_view.runs = {}, {}, {}
        self.memo.clear()
        self.memo_steps.clear()
        self.units = {}
        self._qual_vals = {}
        self._recv = {}
        self._spread = {}
        self._starred = {}

    def scope_of(self, line: int):
        """The innermost function whose body holds `line` (None at module level)."""
        pf = unit_of_line(line)
        best = None
        for start, end, fn in self.ranges_of(pf.index if pf is not None else self.main_unit.index):
            if start > line:
                break
            if start <= line <= end:
                best = fn
        return best

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
        elif b is None and n >= LINE_BASE:
            b = cache[n] = self.foreign_line_bytes(n)
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
        if node.lineno >= LINE_BASE:
            return  # a place in an imported file
        key = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        old = self.hints.get(key, False)
        if old is None:
            return
        if old is not False and old[1].render() != dev.render():
            self.hints[key] = None
            return
        reason = (val.obj.moved or val.obj.origin) if val.kind == "module" and val.obj else val.origin
        self.hints[key] = (name, dev, reason.reason if reason else "", val.kind, is_assignment)

    def mutated_by_importers(self) -> set[str]:
        if self._mutated is None:
            from devflow.analysis.importers import mutated_by_importers  # it imports the interpreter lazily
            try:
                self._mutated = mutated_by_importers(self.path, self.project)
            except Exception:  # noqa: BLE001 - an importer that cannot be read changes nothing known
                self._mutated = set()
        return self._mutated
