"""Statements and control flow: assignments (names, attributes, subscripts, unpacking), if / for /
while / with / try (branches joined, loop bodies run once; twice when a pass changes a name's device,
see `loop_carry`), returns, defs.
"""

from __future__ import annotations

import ast

from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.lattice import CPU, TOP, Dev, definitely_differ, join
from devflow.analysis.values import COLLATED, COPY_MOVED, DEVICE_CONFIGURED, ENCODING, GRAPH, OBJ_SEQ, UNKNOWN, Obj, Origin, Val, host_data, other_key
from devflow.analysis.interp.module_dicts import store_entry
from devflow.analysis.interp.held_tensors import tensor_leaves
from devflow.analysis.interp.import_guards import torch_import_guard
from devflow.analysis.interp.frames import span_of, FuncRef, Frame, MAX_CHOICES, placement_changed
from devflow.analysis.interp.global_branches import GlobalBranches
from devflow.analysis.interp.default_branches import DefaultDeviceBranches
from devflow.analysis.interp.global_view import seq_now
from devflow.analysis.interp.repeat_move import move_text_after
from devflow.analysis.interp.collectives import configured_backend
from devflow.analysis.interp.env_devices import configured_join
from devflow.analysis.interp.attr_devices import device_attrs_chosen_on_branches
from devflow.analysis.interp.flag_attrs import blur_flags_set_on_one_path
from devflow.analysis.interp.batch_moves import batch_moved_in_place
from devflow.analysis.interp.device_probes import probe_only
from devflow.analysis.interp.dtype_casts import casts_only_dtype
from devflow.analysis.interp.expressions import _chosen_device, _is_instance, _is_number, _modules_of
from devflow.analysis.interp.modules import extend_container
from devflow.analysis.interp.param_data import rebind_param_data
from devflow.analysis.interp.param_identity import param_of
from devflow.analysis.interp.unknown_mapping import mapping_with_item
from devflow.analysis.interp.sequence_joins import joined_sequence
from devflow.analysis.interp.match_statements import match_as_ifs

# Filled by devflow.analysis.interp once the Interpreter class is composed.
STMT_HANDLERS: dict = {}


class Statements:
    """Runs statements over a frame; joins the environments of branches."""

    def exec_block(self, stmts, frame: Frame) -> bool:
        """Run statements; True when the block always ends in return/raise/break/continue."""
        tails = self.__dict__.get("flag_tails")
        mark = len(tails) if tails else 0
        try:
            for st in stmts:
                self.budget -= 1
                if self.budget <= 0 or (not self.budget & 255 and self.past_deadline()):
                    return False
                handler = STMT_HANDLERS.get(type(st))
                if handler is None:
                    continue
                frame.stmt_stack.append(st)
                try:
                    if handler(self, st, frame):
                        return True
                finally:
                    frame.stmt_stack.pop()
            return False
        finally:
            if self.__dict__.get("flag_tails"):
                self.end_flag_tails(mark, frame)  # (attributes narrowed after `if flag: return`: as they were)

    def s_Assert(self, st, frame):
        # the test runs (unless `python -O`): a device mix in it raises like any expression's (its message
        # runs only when the test fails, so it is not run here)
        self.eval(st.test, frame)
        return False

    def s_Expr(self, st, frame):
        val = self.eval(st.value, frame)
        call = st.value
        if val is DEVICE_CONFIGURED and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name):
            # `ds.set_format("torch", device="cuda")`: configures `ds` in place
            self.assign(call.func.value, DEVICE_CONFIGURED, frame, st)
            return False
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
            if batch_moved_in_place(call.func, recv, val) is not None:
                return False  # a BatchEncoding / graph Batch: `.to()` moved it in place (e_Call rebound its name)
            # a value of unknown kind moved before (`m = make().to(d)`, `m.to(d).to(dtype)`) may be a
            # module, which moves in place: never "thrown away"; and only a tensor the program can name again
            # is left behind: a temporary moved and dropped (`torch.zeros(1).to(device)`, a probe that the
            # device works) is read by nothing afterwards
            if recv is not None and recv.kind == "tensor" and val.kind == "tensor" and \
                    not (call.func.attr == "to" and casts_only_dtype(call, frame)) and \
                    not (recv.origin is not None and recv.origin.kind == "unknown-moved") and \
                    isinstance(call.func.value, (ast.Name, ast.Attribute, ast.Subscript)):
                name = self.text(call.func.value)
                self.add(Finding(
                    "DEV107", span_of(st),
                    f"`{self.text(call)}` returns a new {'copy' if recv.batch == COPY_MOVED else 'tensor'} that is thrown away: `{name}` stays on "
                    f"{recv.dev.render() if recv.dev else 'its device'}" + (f" ({recv.origin.reason})" if recv.origin else ""),
                    [(recv.origin.span, recv.origin.reason)] if recv.origin else [],
                    FixPlan("assign", span_of(st), name=name, title=f"Assign the result: `{name} = {self.text(call)}`",
                            applicability="safe")))
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
        mc = move_text_after(self, moved, frame, st.lineno)
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
        left = self.eval(st.target, frame) if not isinstance(st.target, ast.Subscript) else self._augmented_item(st.target, frame)
        right = self.eval(st.value, frame)
        if isinstance(st.op, ast.Add) and left.kind == right.kind == "obj" and left.obj is not None and \
                right.obj is not None and left.obj.kind == "list" and right.obj.kind in ("list", "tuple") and \
                left.elem is None and right.elem is None:
            left.obj.items.extend(right.obj.items)  # `lst += [...]` extends the list in place
            return False
        if isinstance(st.op, ast.Add) and left.kind == "module" and left.obj is not None and left.obj.cls is None and \
                left.obj.qual.endswith(("ModuleList", "Sequential")):
            extend_container(left.obj, right)  # `self.blocks += [Block(...)]`: ModuleList.__iadd__ is extend
            return False
        if left.kind == right.kind == "tensor" and left.scalar and left.dev is not None and left.dev.is_cpu \
                and not left.batch:
            # `acc += correct` is in place: the cpu scalar exemption covers an operand read, never the tensor written
            # (TensorIterator checks outputs against the common device), so a 0-dim cpu target meets the device too
            left = Val("tensor", left.dev, left.origin, text=left.text, dims=left.dims)
        val = self.binop(st, left, right, frame, self.text(st.target), self.text(st.value))
        if isinstance(st.target, ast.Name):
            self.assign(st.target, val, frame, st)
        return False

    def _unpacks_shape(self, st, target, frame) -> bool:
        """`a, b = x.shape` / `x.size()` of a tensor `x`, unpacked straight into `target`."""
        v = getattr(st, "value", None)
        if not (isinstance(st, ast.Assign) and target in st.targets):
            return False
        if isinstance(v, ast.Call) and not v.args and not v.keywords:
            v = v.func if isinstance(v.func, ast.Attribute) and v.func.attr == "size" else None
        elif not (isinstance(v, ast.Attribute) and v.attr == "shape"):
            v = None
        return v is not None and isinstance(v.value, (ast.Name, ast.Attribute)) and \
            self.eval(v.value, frame).kind == "tensor"

    def _augmented_item(self, target: ast.Subscript, frame) -> Val:
        """`t[i:j] += v` is an in-place op on a view of the tensor `t` (on `t`'s device); items of
        containers (`totals[k] += ...`) are left unknown."""
        base = self.eval(target.value, frame)
        return self.eval(target, frame) if base.kind == "tensor" and not base.batch else UNKNOWN

    def s_Match(self, st, frame):
        # (the `if` / `elif` chain of its cases, built once per statement on this check's interpreter)
        return self.exec_block(match_as_ifs(st, self.__dict__.setdefault("_match_chains", {})), frame)

    def s_If(self, st, frame):
        cond = self.truth(st.test, frame)
        if cond is True:
            return self.exec_block(st.body, frame)
        if cond is False:
            return self.exec_block(st.orelse, frame)
        before = dict(frame.env)
        first_new = next(OBJ_SEQ)  # objects made from here on exist on the branch that made them only
        outer_moves, self.branch_moves = getattr(self, "branch_moves", None), []
        outer_writes, self.branch_writes = getattr(self, "branch_writes", None), []
        narrow = _none_test(st.test, frame.env) or self._not_on_accelerator(st.test, frame.env)
        if narrow is not None:
            frame.env[narrow[0]] = narrow[1]
        flag = self.flag_false_branch(st, frame)  # (a flag tested before: its false branch sees nothing moved)
        undo = self.unmove_for_flag(flag[1], st, frame, where=not flag[0]) if flag is not None else ()
        globs = GlobalBranches.start(self, frame)  # `global` names are branched like local ones
        defaults = DefaultDeviceBranches(self)  # so is the process-wide default device
        t_body = self.exec_block(st.body, frame)
        self.redo_after_flag(undo, frame)
        if globs is not None:
            globs.end_body()
        defaults.end_body()
        env_body, body_moves, self.branch_moves = frame.env, self.branch_moves, []
        body_writes, self.branch_writes = self.branch_writes, []
        frame.env = dict(before)
        if narrow is not None:
            frame.env[narrow[0]] = narrow[2]
        undo = self.unmove_for_flag(flag[1], st, frame, where=flag[0]) if flag is not None else ()
        t_else = self.exec_block(st.orelse, frame)
        if t_body and not st.orelse and undo:
            self.flag_tail(undo)  # `if flag: return ...`: what follows the `if` runs where the flag is false
        else:
            self.redo_after_flag(undo, frame)
        env_else, else_moves, self.branch_moves = frame.env, self.branch_moves, outer_moves
        else_writes, self.branch_writes = self.branch_writes, outer_writes
        if outer_moves is not None:
            outer_moves.extend(body_moves + else_moves)
        if outer_writes is not None:
            outer_writes.extend(body_writes + else_writes)
        if globs is not None:
            globs.finish(t_body, t_else)
        defaults.finish(t_body, t_else)
        if t_body and t_else:
            frame.env = before
            return True
        if not t_body and not t_else:
            self._attrs_set_on_both_branches(body_writes, else_writes)
            blur_flags_set_on_one_path(body_writes, else_writes, first_new)
            device_attrs_chosen_on_branches(st, body_writes, else_writes, self.text(st.test))
            self.note_flag_attr_moves(st, body_writes, else_writes, frame)
        self._offloaded_on_one_branch(st, body_moves, else_moves, frame, first_new)
        if t_body:
            frame.env = env_else
        elif t_else:
            frame.env = env_body
        else:
            frame.env = self.join_env(env_body, env_else)
            self._moved_on_one_branch(st, before, env_body, env_else, frame)
            self._device_chosen_on_branches(st, before, env_body, env_else, frame)
        return False

    def _attrs_set_on_both_branches(self, body_writes: list, else_writes: list) -> None:
        """`if path.exists(a): self.backend = A() else: self.backend = B()`: an attribute each branch sets holds
        either value after the `if` (a choice of the two objects of project classes), not the one the branch
        run last wrote; other values (models: the moves that reach them through other holders are not
        tracked on a choice), and one set on a single branch, keep the value written last (as before)."""
        last_body = {(id(o), n): (o, v) for o, n, v, _ in body_writes}
        last_else = {(id(o), n): v for o, n, v, _ in else_writes}
        for key, (obj, v_body) in last_body.items():
            v_else = last_else.get(key)
            if v_else is not None and v_else is not v_body and obj.attrs.get(key[1]) is v_else:
                j = _instance_choice(v_body, v_else)
                if j is None and (_count_choice(v_body, v_else) or _two_gpu_choices(v_body, v_else)):
                    # `args.n_gpu = torch.cuda.device_count()` on one path, `args.n_gpu = 1` on the other (and
                    # `args.device` chosen alike): either after the `if` (a later `if args.n_gpu > 1` is not
                    # decided by the last write, nor is the device then the other path's)
                    j = self.join(v_body, v_else)
                if j is not None:
                    obj.attrs[key[1]] = j  # (other values keep the last write, as before: no blur to unknown)

    def _offloaded_on_one_branch(self, st, body_moves: list, else_moves: list, frame: Frame, first_new: int) -> None:
        """`if not args.train_text_encoder: text_encoder.cpu(); del text_encoder`: a module moved to the cpu
        on one branch only (offloaded to free memory) may be on either device after the `if`, depending
        on the path: unknown (a use after it runs on the other path). Not one the branch itself made (an
        EMA copy moved to the cpu as it is built): on the other path it does not exist."""
        body, other = {id(m[0]) for m in body_moves}, {id(m[0]) for m in else_moves}
        for moves, others in ((body_moves, other), (else_moves, body)):
            for obj, dev, prior in moves:
                if obj.seq > first_new:
                    continue
                if dev.is_cpu and prior is not None and not prior.is_cpu and id(obj) not in others \
                        and obj.dev is not None and obj.dev.is_cpu:
                    why = Origin(span_of(st.test), f"moved to the cpu on one branch of `if {self.text(st.test)}` "
                                                   f"at line {st.lineno}")
                    self._move_rec(obj, TOP, why, frame, set())

    def _device_chosen_on_branches(self, st, before: dict, env_body: dict, env_else: dict, frame: Frame) -> None:
        """`if opt.use_gpu: device = torch.device("cuda:0") else: device = torch.device("cpu")`: the statement
        form of `"cuda:0" if opt.use_gpu else "cpu"`, the accelerator the condition picks (never the cpu on a
        GPU run), one device for everything placed on that name."""
        for name, a in env_body.items():
            b = env_else.get(name)
            if b is None or (a is before.get(name) and b is before.get(name)):
                continue
            da, db = _chosen_device(a), _chosen_device(b)
            if da is None or db is None:
                continue
            gpu = db if da.is_cpu else da if db.is_cpu else None
            if gpu is None or not (gpu.kind == "cuda" or gpu.kind == "sym" and gpu.accel):
                continue
            chosen = Dev("sym", key=("if-device", id(st), name), text=name, accel=True,
                         gpu=gpu if gpu.kind == "cuda" else gpu.gpu)
            frame.env[name] = Val("device", chosen,
                                  Origin(span_of(st.test), f"chosen by `{self.text(st.test)}` at line {st.lineno}"))
            self._placed_on_chosen_device(before, env_body, env_else, da, db, chosen, frame)

    def _placed_on_chosen_device(self, before: dict, env_body: dict, env_else: dict, da: Dev, db: Dev,
                                 chosen: Dev, frame: Frame) -> None:
        """`if args.test_mode: model = GPT(cfg); device = "cpu"; model.to(device) else: model = GPT(cfg);
        device = ...; model.to(device)`: a model of one class built on each branch and moved there to the
        device that branch chose is one model on the chosen device after the `if` (as a model built
        before it and moved to the chosen device after it would be)."""
        for name, a in env_body.items():
            b = env_else.get(name)
            if b is None or a is b or a is before.get(name) or b is before.get(name):
                continue
            if a.kind != "module" or b.kind != "module" or a.obj is None or b.obj is None or a.obj is b.obj:
                continue
            oa, ob = a.obj, b.obj
            if oa.cls is None or oa.cls is not ob.cls or oa.dispatched or ob.dispatched or \
                    oa.moved is None or ob.moved is None or oa.dev != da or ob.dev != db:
                continue
            kept = b if da.is_cpu else a  # the accelerator branch's model stands for both
            kept.obj.dev = chosen
            frame.env[name] = kept

    def _moved_on_one_branch(self, st, before: dict, env_body: dict, env_else: dict, frame: Frame) -> None:
        """`if use_gpu: x = x.cuda()`: a tensor moved to an accelerator on one branch only is on the device
        that condition picks, like `"cuda" if ... else "cpu"`: an accelerator on a GPU run (never the cpu),
        one device for every tensor the same `if` moves."""
        dev = None
        for name, j in list(frame.env.items()):
            a, b = env_body.get(name), env_else.get(name)
            if j.kind == "tensor" and j.dev is not None and j.dev.known or a is None or b is None or a.kind != "tensor" or b.kind != "tensor" \
                    or a.dev is None or b.dev is None or a.scalar or b.scalar:
                continue
            moved, kept = (a, b) if b.dev.is_cpu else (b, a)
            if not kept.dev.is_cpu or not (moved.dev.kind == "cuda" or moved.dev.kind == "sym" and moved.dev.accel):
                continue
            if kept is not before.get(name) or moved.origin is None or moved.origin.kind != "placed":
                continue  # only the same tensor, moved explicitly on one branch and left as it was on the other
            tested_node = self._device_tested(st.test)
            if tested_node is not None:
                # `if x.is_cuda: iden = iden.cuda()`: moved exactly when `x` is on the accelerator, so after
                # the `if` it is where `x` is (unknown when `x`'s device is)
                tested = self.eval(tested_node, frame)
                t_dev = tested.dev if tested.kind == "tensor" and tested.dev is not None and tested.dev.known else TOP
                frame.env[name] = Val("tensor", t_dev, Origin(span_of(st.test), f"on the device of `{self.text(tested_node)}` "
                                      f"(moved when `{self.text(st.test)}`, line {st.lineno})", kind="placed"), text=moved.text)
                continue
            if dev is None:
                dev = Dev("sym", key=("if", id(st)), text="", accel=True)
            self.note_flag_move(st, dev.key, name, kept, moved is a, frame)
            frame.env[name] = Val("tensor", dev, Origin(span_of(st.test), f"moved to the accelerator when "
                                                        f"`{self.text(st.test)}` (line {st.lineno})", kind="placed"),
                                  text=moved.text)

    def _not_on_accelerator(self, test, env: dict) -> tuple[str, Val, Val] | None:
        """`if x.is_cuda: ... else: <x on the cpu>` where x is on an accelerator chosen at run time (or cuda):
        on the branch that says it is not, its device is not that one (unknown here, never a mix)."""
        tested = self._device_tested(test)
        v = env.get(tested.id) if isinstance(tested, ast.Name) else None
        if v is None or v.kind != "tensor" or v.dev is None or not (v.dev.kind == "cuda" or v.dev.kind == "sym" and v.dev.accel):
            return None
        elsewhere = Val("tensor", TOP, v.origin, text=v.text)
        negated = isinstance(test, ast.UnaryOp)
        inner = test.operand if negated else test
        says_cuda = True  # `x.is_cuda`
        if isinstance(inner, ast.Compare):
            const = next(c.value for c in (inner.left, inner.comparators[0]) if isinstance(c, ast.Constant))
            says_cuda = (const == "cuda") == isinstance(inner.ops[0], ast.Eq)
        says_cuda = says_cuda != negated
        return (tested.id, v, elsewhere) if says_cuda else (tested.id, elsewhere, v)

    @staticmethod
    def _device_tested(test) -> ast.expr | None:
        """The tensor whose device an `if` tests: `x.is_cuda`, `not x.is_cuda`, `x.device.type == "cuda"`
        (or != "cpu", either side); None for any other condition."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
        if isinstance(test, ast.Attribute) and test.attr == "is_cuda":
            return test.value
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
            for side, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
                if isinstance(side, ast.Attribute) and side.attr == "type" and isinstance(side.value, ast.Attribute) \
                        and side.value.attr == "device" and isinstance(other, ast.Constant) and other.value in ("cuda", "cpu"):
                    return side.value.value
        return None

    def s_For(self, st, frame):
        it = self.eval(st.iter, frame)
        jumps = self._loop_jumps(st)
        each = self.per_item(it, st.iter, frame) if not st.orelse and not jumps else None
        if each is None and not st.orelse and not jumps:
            each = self.per_key(st.iter, frame)
        if each is not None:
            # `for w, op in zip(weights, self._ops)` over unlike modules: the body runs once per element, in order
            before = dict(frame.env)
            for item in each:
                self.assign(st.target, item, frame, st)
                self.exec_block(st.body, frame)
            if not self.known_nonempty(it):
                frame.env = self.join_env(before, frame.env)  # zipped with an iterable of unknown length: may not run
            return False
        elem = self.iter_elem(it, st.iter, frame)
        before = dict(frame.env)
        entry = self.loop_entry(st, before)
        self.assign(st.target, elem, frame, st)
        self.exec_block(st.body, frame)
        self.run_next_pass(st, frame, entry, lambda: self.assign(st.target, elem, frame, st), it)
        if not (self.known_nonempty(it) and not jumps):
            frame.env = self.join_env(before, frame.env)  # the body may not have run
        self.exec_block(st.orelse, frame)
        return False

    s_AsyncFor = s_For

    def _loop_jumps(self, st) -> bool:
        """`_jumps(st.body)`, a fact of the file's text kept per loop (in a side table, never on the tree):
        a loop runs many times per check, and its walk was ~8% of one. No walk when none of the
        keywords is in the loop's lines."""
        key = ("jumps", id(st))
        lines, first, facts = self._own_lines(st)
        cache = self.builds_modules_cache if facts is None else facts
        hit = cache.get(key)
        if hit is None:
            text = lines[st.lineno - first:(st.end_lineno or st.lineno) - first + 1] if lines is not None else None
            hit = (text is None or any(w in t for t in text for w in _JUMP_WORDS)) and _jumps(st.body)
            cache[key] = hit
        return hit

    def s_While(self, st, frame):
        self.eval(st.test, frame)
        before = dict(frame.env)
        entry = self.loop_entry(st, before)
        self.exec_block(st.body, frame)
        self.run_next_pass(st, frame, entry)
        frame.env = self.join_env(before, frame.env)
        self.exec_block(st.orelse, frame)
        return False

    def s_With(self, st, frame):
        saved = (self.default_dev, self.default_origin)
        for item in st.items:
            ctx = item.context_expr
            val = self.eval(ctx, frame)
            if val.kind == "device" and (not isinstance(ctx, ast.Call) or self.qualname(ctx.func, frame) == "torch.device"):
                # `with torch.device(...)` or `with device:` (a torch.device is its own context manager)
                self.default_dev, self.default_origin = val.dev or TOP, Origin(span_of(ctx), f"default device set by `with {self.text(ctx)}` at line {ctx.lineno}", "context")
            if item.optional_vars is not None:
                self.assign(item.optional_vars, self.entered(ctx, val), frame, st)
        if any(self.expects_raise(item.context_expr, frame) for item in st.items):
            self.default_dev, self.default_origin = saved
            return False  # a test's `with self.assertRaises(...)`: the body is meant to fail
        ended = self.exec_block(st.body, frame)
        self.default_dev, self.default_origin = saved
        return ended

    s_AsyncWith = s_With

    def entered(self, ctx, val: Val) -> Val:
        """`with X(...) as x`: x is what `X.__enter__` returns (most return self); run for a project class that
        defines it. Anything else (a library context manager, a generator-based one) stays unknown."""
        obj = val.obj if val.kind in ("obj", "module") else None
        cls = obj.cls if obj is not None else None
        found = cls.method("__enter__") if cls is not None and not getattr(obj, "standalone", False) else None
        if found is None or self.standalone:
            return UNKNOWN
        return self.call_function(FuncRef(found[0], None, found[1], "method"), [], {}, val, ctx)

    def s_Try(self, st, frame):
        before = dict(frame.env)
        self.exec_block(st.body, frame)
        env = frame.env
        skip = probe_only(self, st.body, frame) or torch_import_guard(st)  # (a probe of a known device succeeds; torch imports)
        for h in (() if skip else st.handlers):
            frame.env = dict(before)
            self.exec_block(h.body, frame)
            env = self.join_env(env, frame.env)
        frame.env = env
        self.exec_block(st.orelse, frame)
        self.exec_block(st.finalbody, frame)
        return False

    s_TryStar = s_Try

    def s_Global(self, st, frame):
        if frame is not self.module_frame:
            frame.global_names = (frame.global_names or set()) | set(st.names)
        return False

    def s_Return(self, st, frame):
        val = self.eval(st.value, frame) if st.value is not None else Val("const", const=None)
        if getattr(self, "_dp_cpu_returns", None) is not None:  # forward of a DataParallel replica may be running
            self.note_replica_return(st, val, frame)
        frame.returns = val if frame.returns is None else \
            (self._device_chosen_on_returns(st, frame.returns, val, frame) or _instance_choice(frame.returns, val)
             or self.join(frame.returns, val))  # (a factory returning one of several project objects: each)
        return True

    def _device_chosen_on_returns(self, st, prev: Val, val: Val, frame) -> Val | None:
        """`def get_device(): if torch.cuda.is_available(): return torch.device("cuda") ... return
        torch.device("cpu")`: the return form of `"cuda" if ... else "cpu"`, the accelerator the function
        picks (never the cpu on a GPU run), one device wherever its result is placed."""
        da, db = _chosen_device(prev), _chosen_device(val)
        if da is None or db is None or da == db:
            return None
        key = ("returns-device", id(frame.node))
        if da.kind == "sym" and da.key == key:
            return prev  # a further path of the same choice
        if not (da.is_cpu or db.is_cpu) or not all(d.is_cpu or d.kind == "cuda" or (d.kind == "sym" and d.accel)
                                                   for d in (da, db)):
            return None
        name = getattr(frame.node, "name", "")
        return Val("device", Dev("sym", key=key, text=f"{name}()" if name else "the chosen device", accel=True),
                   Origin(span_of(st), f"chosen by `{name}()`" if name else f"chosen at line {st.lineno}"))

    def s_Raise(self, st, frame):
        return True

    def s_Continue(self, st, frame):
        return True

    s_Break = s_Continue

    def s_FunctionDef(self, st, frame):
        owner = None
        kind = "function"
        frame.env[st.name] = Val("func", func=FuncRef(st, frame if frame is not self.module_frame else None, owner, kind,
                                                      self.unit))
        frame.assigned.setdefault(st.name, st.lineno)
        return False

    s_AsyncFunctionDef = s_FunctionDef

    def s_ClassDef(self, st, frame):
        # built once per file (an imported module's classes live in its own index): a lookup per class
        # definition stays linear in the file
        cache = self.__dict__.setdefault("_class_of_node", {})
        by_node = cache.get(id(self.index))
        if by_node is None:
            by_node = cache[id(self.index)] = {id(c.node): c for c in self.index.all_classes}
        info = by_node.get(id(st))
        if info is not None:
            if isinstance(frame.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # a class built inside a function (`class RSDE(self.__class__)` in `SDE.reverse`): its methods
                # read the function's names (`discretize_fn = self.discretize`) as closures do
                info.defining_frame = frame  # type: ignore[attr-defined]
            frame.env[st.name] = Val("class", func=info)
            frame.assigned.setdefault(st.name, st.lineno)
            saved = self.standalone
            try:
                for deco in reversed(st.decorator_list):
                    # a project function decorating the class runs on it (it may add methods with setattr;
                    # the name keeps the class), also in an imported module's body. Its own body only:
                    # the calls it makes are not followed (a decorator factory's call neither), as those
                    # of a docstring-writing decorator run on every class of a library would cost more
                    # than the file's own analysis.
                    self.standalone = True
                    d = self.eval(deco, frame)
                    if d.kind == "func" and d.func is not None and not isinstance(deco, ast.Call):
                        self.call_function(d.func, [frame.env[st.name]], {}, None, deco, standalone=True)
            finally:
                self.standalone = saved
        return False

    def _reanchor(self, st, val: Val, frame: Frame) -> Val:
        """A cpu tensor returned by a same-file call gets its origin at this assignment."""
        value = st.value
        if isinstance(value, ast.Call) and id(value) in self._interproc and id(value) not in self._passed_through:
            reason = f"returned by `{self.text(value.func)}()` at line {st.lineno}"
            org = Origin(span_of(st), reason, "returned")
            if val.kind == "tensor" and _set_where_made(val.origin, attr=True):
                # maybe a module: keep what says so; a plain tensor attribute the module's move left behind
                # (returned by a getter), state a module pins to the GPU, an optimizer's group restored from a
                # cpu checkpoint, or a factory beside a device, is fixed where it is set, not returned
                return val
            if val.kind == "tensor":  # (a BatchEncoding / graph batch stays one: its `.to()` moves it in place)
                return Val("tensor", val.dev, org, scalar=val.scalar, dims=val.dims, batch=val.batch)
            if val.kind == "obj" and val.obj is not None and val.obj.kind == "tuple":
                new = Obj("tuple", items=[Val("tensor", v.dev, org, scalar=v.scalar, dims=v.dims)
                                          if v.kind == "tensor" and not _set_where_made(v.origin, attr=False) else v
                                          for v in val.obj.items])
                return Val("obj", obj=new)
        return val

    def assign(self, target, val: Val, frame: Frame, st) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            if val.kind == "device" and val.dev is not None and val.dev.kind == "sym":
                text = self.sym_names.setdefault(val.dev.key, name)
                val = Val("device", val.dev.named(text), val.origin)
            env = self.module_frame.env if frame.global_names and name in frame.global_names else frame.env
            env[name] = val.with_text(name) if val.kind in ("tensor", "module", "obj") else val
            if env is self.module_frame.env and self.module_frame is self.main_unit.module_frame:
                self.global_view.bound(name, seq_now(self.module_frame), env[name],
                                       run=frame if frame is not self.module_frame else None)
            if val.kind == "obj" and val.obj is not None and val.obj.kind == "namespace" and not val.obj.role:
                val.obj.role = name  # `opt = parser.parse_args()`: its devices read `opt.device`
                for k, a in val.obj.attrs.items():
                    if a.kind == "device" and a.dev is not None and a.dev.kind == "sym":
                        val.obj.attrs[k] = Val("device", a.dev.named(f"{name}.{k}"), a.origin)
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
            if val.kind == "module" and val.obj is not None and val.obj.items:
                items = val.obj.items  # `for attn, ff in self.layers`: a ModuleList of [attn, ff] blocks
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
                elif self._unpacks_shape(st, target, frame):
                    self.assign(t, Val("number"), frame, st)  # `nrow, ncol = a3m.shape`: Python ints
                else:
                    self.assign(t, UNKNOWN, frame, st)
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value, frame)
            if base.obj is not None and base.kind in ("module", "obj"):
                self.set_attr(base, target, val, frame, st)
            elif val.kind == "module" and (part_of := self._library_model_of_part(target.value, base, frame)) is not None:
                # `model.roi_heads.box_predictor = Head()`: a part of a library model is where the model was moved
                self._set_on_library_part(part_of, target, val, frame, st)
            elif target.attr == "data" and isinstance(target.value, ast.Attribute):
                owner = self.eval(target.value.value, frame)  # `layer.weight.data = t`
                rebind_param_data(owner.obj if owner.kind == "module" else None, target.value.attr, val)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value, frame)
            parent = base.obj if base.kind in ("module", "attr") else None
            if parent is not None and parent.kind == "module" and val.kind == "module" and val.obj is not None \
                    and parent.moved is not None and val.obj.moved is None and not getattr(parent, "standalone", False) \
                    and definitely_differ(val.obj.dev or CPU, parent.dev):
                self.report_added_after_move(parent, val.obj, target, st, frame)
                parent.items.append(val)
            elif base.kind == "module" and store_entry(base.obj, self.eval(target.slice, frame), val):
                pass  # `self.heads[name] = head` on a ModuleDict registers the module under `name`
            elif base.kind == "tensor" and base.batch and isinstance(target.value, ast.Name):
                self._store_into_batch(target.value.id, base, val, frame)
            elif base.kind == "tensor" and base.batch == ENCODING and isinstance(target.value, ast.Attribute) \
                    and target.value.attr == "data" and isinstance(target.value.value, ast.Name):
                # `enc.data[k] = v`: a tokenizer's BatchEncoding is a UserDict, `.data` the dict it reads from
                self._store_into_batch(target.value.value.id, base, val, frame)
            elif base.kind == "tensor" and not base.batch:
                self._store_into_tensor(target, base, val, frame, st)
            elif base.kind == "obj" and base.obj is not None and base.obj.kind == "instance" and base.obj.cls is not None \
                    and base.obj.cls.method("__setitem__"):
                # `obj[key] = v` on an instance of a project class runs its `__setitem__(key, v)`
                found = base.obj.cls.method("__setitem__")
                self.call_function(FuncRef(found[0], None, found[1], "method"), [self.eval(target.slice, frame), val], {},
                                   base, target)
            elif base.kind == "unknown" and isinstance(target.value, ast.Name) and target.value.id in frame.env and \
                    (known := mapping_with_item(base, self.eval(target.slice, frame), val)) is not None:
                frame.env[target.value.id] = known  # `cfg = load_yaml(...); cfg["device"] = ...`
            elif base.kind == "unknown" and isinstance(target.value, ast.Attribute) and isinstance(target.value.value, ast.Name) \
                    and (owner := self.eval(target.value.value, frame)).kind == "obj" and owner.obj is not None \
                    and owner.obj.kind == "instance" and \
                    (known := mapping_with_item(base, self.eval(target.slice, frame), val)) is not None:
                owner.obj.attrs[target.value.attr] = known  # `self.cfg["device"] = ...` on a config of unknown origin
            elif base.kind == "obj" and base.obj is not None and base.obj.kind == "list":
                base.obj.exact = False  # type: ignore[attr-defined]  # `parts[i] = ...`: an item replaced
            elif base.kind == "obj" and base.obj is not None and base.obj.kind == "dict":
                key = self.eval(target.slice, frame)
                if key.kind == "const" and isinstance(key.const, (str, int)):
                    base.obj.keys[key.const] = val
                else:
                    base.obj.exact = False  # type: ignore[attr-defined]
                    base.elem = val if base.elem is None else self.join(base.elem, val)
                    # a computed key may be any of the known ones (`for k in d: d[k] = d[k].to(dev)`):
                    # each entry is now its old value or this one (not those a loop's other keys exclude)
                    spared = other_key(key).known if other_key(key) is not None else frozenset()
                    for k, old in list(base.obj.keys.items()):
                        if k not in spared:
                            base.obj.keys[k] = self.join(old, val)
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

    def _store_into_tensor(self, target: ast.Subscript, base: Val, val: Val, frame: Frame, st) -> None:
        """`t[idx] = v` with a tensor (or list) index is `t.index_put_(idx, v)`: the values must be on `t`'s
        device (a 0-dim cpu tensor or a number excepted). Unlike reading, any index is accepted: ATen's
        make_info moves the indices to `t`'s device (a cpu `t` with a cuda mask works). With ints and slices
        only it is `t[idx].copy_(v)`, which crosses devices."""
        idx = self.eval(target.slice, frame)
        idx_vals = idx.obj.items if idx.kind == "obj" and idx.obj is not None and idx.obj.kind == "tuple" else [idx]
        advanced = any(iv.kind == "tensor" or (iv.kind == "obj" and iv.obj is not None and iv.obj.kind == "list")
                       for iv in idx_vals)
        if not advanced or val.kind != "tensor" or not isinstance(st, ast.Assign) or st.targets != [target]:
            return  # a copy; or tuple targets and loop variables, whose values are not paired here
        self.check_mix(st, [(base, self.text(target.value)), (val, self.text(st.value))], frame)

    def s_Delete(self, st, frame):
        for t in st.targets:  # `del d[k]`: the dict's keys are no longer known exactly
            if isinstance(t, ast.Subscript):
                base = self.eval(t.value, frame)
                if base.kind == "obj" and base.obj is not None and base.obj.kind in ("dict", "list"):
                    base.obj.exact = False  # type: ignore[attr-defined]

    def _library_model_of_part(self, node: ast.AST, base: Val, frame: Frame) -> Obj | None:
        """The library model `node` is a part of: `model.roi_heads` (an attribute read off it), also through
        an index into such a part (`net.layer4[0]`: an entry of its Sequential)."""
        while base.kind != "attr" and isinstance(node, ast.Subscript):
            node = node.value
            base = self.eval(node, frame)
        return base.obj if base.kind == "attr" and base.obj is not None and base.obj.kind == "module" else None

    def _set_on_library_part(self, model: Obj, target: ast.Attribute, val: Val, frame: Frame, st) -> None:
        """A new module stored on a submodule of a library model that was moved (`model.roi_heads.box_predictor
        = FastRCNNPredictor(...)` after `model.to(device)`): nn.Module.__setattr__ registers it there, inside the
        model, but nothing moves it; the model's next forward meets it on the cpu."""
        child = val.obj
        if child is None or child is model or model.moved is None or child.moved is not None or model.dispatched \
                or getattr(model, "standalone", False) or getattr(child, "stateless", False) \
                or not _holds_new_modules(child):
            return
        if definitely_differ(child.dev or CPU, model.dev):
            self.report_added_after_move(model, child, target, st, frame)

    def set_attr(self, base: Val, target: ast.Attribute, val: Val, frame: Frame, st, value_node=None) -> None:
        """`value_node`: the stored expression when it is not the statement's value (`setattr(self, "w",
        nn.Parameter(...))` registers a parameter as `self.w = nn.Parameter(...)` does)."""
        obj = base.obj
        param_call = id(_param_call_of(value_node if value_node is not None else getattr(st, "value", None)))
        name = target.attr
        found = obj.cls.setter(name) if obj.cls is not None else None
        if found is not None:
            # `self.state_dict = torch.load(f)` on a property with a setter: Python runs the setter
            fn, owner = found
            self.call_function(FuncRef(fn, None, owner, "method"), [val], {}, base, st)
            return
        if val.kind == "device" and val.dev is not None and val.dev.kind == "sym" and isinstance(target.value, ast.Name):
            text = self.sym_names.setdefault(val.dev.key, f"{target.value.id}.{name}")  # `self.device`
            val = Val("device", val.dev.named(text), val.origin)
        if not self.standalone and isinstance(target.value, ast.Name):
            self.hint(target, f"{target.value.id}.{name}", val)
        if obj.kind == "module" and val.kind == "module" and val.obj is not None and val.obj is not obj:
            obj.children.add(name)
            child = val.obj
            if obj.moved is not None and child.moved is None and definitely_differ(child.dev or CPU, obj.dev) \
                    and not getattr(obj, "standalone", False) and not getattr(child, "stateless", False) \
                    and _holds_new_modules(child):
                self.report_added_after_move(obj, child, target, st, frame)
        elif obj.kind == "module" and val.kind == "tensor" and param_call in self._param_nodes:
            obj.buffers.add(name)  # a parameter: moved with its module like a buffer
            val = param_of(val, obj)  # (and one object wherever it is kept: param_identity)
        if obj.kind == "module" and obj.cls is None and obj.dev is not None and \
                param_call in self._param_nodes and \
                (val.kind != "tensor" or val.dev is None or val.dev != obj.dev):
            # a torch.nn module given another tensor as its parameter (`lstm.weight_ih_l0 =
            # nn.Parameter(cell.weight_ih)`): its parameters are where that tensor is, not known here
            obj.dev = TOP
        elif obj.kind == "module" and val.kind == "tensor" and name not in obj.buffers and obj.cls is not None \
                and val.dev is not None and val.dev.is_cpu and not val.scalar and getattr(frame.node, "name", "") == "__init__":
            self.tensor_attrs.setdefault((obj.cls.name, name), []).append(st)
        if obj.kind == "module" and val.kind == "obj" and val.obj is not None and val.obj.kind in ("list", "tuple", "dict"):
            # modules in a plain container on a module are not registered (DEV103 says so where it is set)
            for m in [*val.obj.items, *val.obj.keys.values(), *([val.elem] if val.elem is not None else [])]:
                if m.kind == "module" and m.obj is not None:
                    m.obj.in_plain_container = True  # type: ignore[attr-defined]
        if obj.kind == "module" and name not in obj.buffers and (val.kind == "tensor" or _tensor_list(val)
                                                                 or tensor_leaves(val)):
            if not hasattr(obj, "attr_sets"):
                obj.attr_sets = {}  # type: ignore[attr-defined]
            obj.attr_sets[name] = (st, frame.node)  # type: ignore[attr-defined]  # a plain tensor attribute
        writes = getattr(self, "branch_writes", None)
        if writes is not None:
            writes.append((obj, name, val, obj.attrs.get(name)))
        if name in obj.attrs and placement_changed(obj.attrs[name], val):
            self.heap_epoch += 1  # memoised calls that read the old state are stale
        obj.attrs[name] = val

    def join(self, a: Val, b: Val) -> Val:
        if a is b:
            return a
        if a.kind == b.kind == "tensor":
            dev = join(a.dev, b.dev)
            origin = a.origin if dev == a.dev else (b.origin if dev == b.dev else None)
            maybe_module = next((v.origin for v in (a, b) if v.origin is not None and v.origin.kind == "unknown-moved"), None)
            if maybe_module is not None:
                origin = maybe_module  # either branch may hold a module: the join may too
            return Val("tensor", dev, origin, scalar=a.scalar or b.scalar, batch=a.batch if a.batch == b.batch else "",
                       dims=min(a.dims, b.dims))
        if a.kind == b.kind and a.obj is not None and a.obj is b.obj:
            return a
        placed = _tensor_or_tensors(a, b) or _tensor_or_tensors(b, a)
        if placed is not None:
            return placed
        converted = _host_or_cpu_tensor(a, b) or _host_or_cpu_tensor(b, a)
        if converted is not None:
            return converted
        if a.kind == b.kind == "obj" and a.obj is not None and b.obj is not None and \
                a.obj.kind == b.obj.kind == "optimizer" and a.obj.modules and \
                {id(m) for m in a.obj.modules} == {id(m) for m in b.obj.modules}:
            return a  # Adam or SGD by a flag: for where its state lives, one optimizer over the same modules
        if a.kind == b.kind == "const" and a.const == b.const:
            return a
        for x, y in ((a, b), (b, a)):
            if x.kind == y.kind == "module" and x.obj is not None and y.obj is not None and x.obj.qual == y.obj.qual \
                    and getattr(x.obj, "stateless", False) and not getattr(y.obj, "stateless", False) and y.obj.dev is not None:
                # `nn.CrossEntropyLoss(weight=w)` on one path, `nn.CrossEntropyLoss()` on the other: the one without
                # a tensor runs on any device, so where devices can meet it is the weighted one
                return y
            if x.kind == "const" and x.const is None and y.kind in ("tensor", "module"):
                # `w = torch.tensor(ws) if args.weighted else None`: wherever it is used as a tensor it is that
                # tensor (a path the program takes), and `w is None` is not known
                return y if y.optional else y.or_none()
        if a.kind == b.kind == "device" and a.dev == b.dev:
            return a
        if a.kind == b.kind == "device" and a.dev is not None and b.dev is not None and a.dev.kind == b.dev.kind == "cuda":
            # `cuda:{gpu}` on one path, the bare "cuda" on the other: some GPU (a module holding no tensor stays
            # without a device when moved there, so its inputs are still checked against each other)
            return Val("device", join(a.dev, b.dev))
        for x, y in ((a, b), (b, a)):
            if x.kind == "rank" and y.kind == "const" and y.const == 0 and not isinstance(y.const, bool):
                return x  # `dist.get_rank() if dist.is_initialized() else 0`: 0 is the rank of the only process
        if _is_number(a) and _is_number(b):
            return Val("number")  # `0.9 if smooth else 1.0`: a Python number either way
        if (_is_numbers(a) or _is_numbers(b)) and all(_is_number(v) or _is_numbers(v) for v in (a, b)):
            # `(0.7, 1.1) if smooth else 1.0`: Python numbers either way, data torch.tensor() puts on the cpu
            return host_data()
        choice = _callable_choice(a, b)
        if choice is not None:
            return choice
        seq = joined_sequence(a, b, self.elem_of, self.join)  # one of two lists: a list of either's elements
        if seq is not None:
            return seq
        return UNKNOWN

    def join_paths(self, a: Val, b: Val) -> Val:
        """The value of a name after two paths (an `if`'s branches, `x if c else y`, a registry's entries):
        `join`, and two modules alike stand for each other (`_modules_alike`). Not for a container's
        elements, where each module may run on its own (`for c in criteria` over unlike losses)."""
        return _modules_alike(a, b) or configured_join(a, b) or configured_backend(a, b) or _instance_choice(a, b) \
            or self.join(a, b)

    def join_alternatives(self, a: Val, b: Val) -> Val:
        """What a method of one of several objects gives (`delegate.create_model(path)` of a factory's choice):
        models of project or library classes stay a choice of models (each one moved by a `.to()` on the
        result, each one run by a call of it); anything else is `join_paths`."""
        items = [*_modules_of(a), *_modules_of(b)]
        if items and len(items) == len(_modules_of(a)) + len(_modules_of(b)) and _modules_of(a) and _modules_of(b):
            uniq = [v for i, v in enumerate(items) if not any(v.obj is u.obj for u in items[:i])]
            if 1 < len(uniq) <= MAX_CHOICES:
                return Val("obj", obj=Obj("choice", items=uniq))
            if len(uniq) == 1:
                return uniq[0]
        return self.join_paths(a, b)

    def join_env(self, a: dict, b: dict) -> dict:
        out = dict(a)
        for k, v in b.items():
            old = out.get(k)
            out[k] = v if old is None else self.join_paths(old, v)
        return out


def _tensor_list(v: Val) -> bool:
    """A plain list (or tuple) of tensors: like a plain tensor attribute, not moved with its module."""
    if v.kind != "obj" or v.obj is None or v.obj.kind not in ("list", "tuple"):
        return False
    parts = v.obj.items + ([v.elem] if v.elem is not None else [])
    return bool(parts) and all(i.kind == "tensor" for i in parts)


def _none_test(test: ast.expr, env: dict) -> tuple[str, Val, Val] | None:
    """`if w is None:` / `if w is not None:` on a name that is None on some paths only (`Val.optional`): the
    name's value in the body and in the else branch (None on one, the value on the other)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        return None
    v = env.get(test.left.id)
    if v is None or not v.optional:
        return None
    some = v.with_text(v.text)
    some.optional = False
    none = Val("const", const=None)
    return (test.left.id, none, some) if isinstance(test.ops[0], ast.Is) else (test.left.id, some, none)


def _modules_alike(a: Val, b: Val) -> Val | None:
    """`model = ResNet() if args.arch == "resnet" else VGG()`: two modules on the same device (or both not known),
    neither dispatched nor seen only from inside a method: for where its parameters are, either one is
    the model, and the first stands for both (as `elem_of` lets one of a list's like modules stand for
    all). What the other's own forward does is not run (a miss there, never a false alarm)."""
    if a.kind != "module" or b.kind != "module" or a.obj is None or b.obj is None:
        return None
    oa, ob = a.obj, b.obj
    if oa.kind != "module" or ob.kind != "module" or oa.cls is None or ob.cls is None or oa.role != ob.role:
        return None
    if oa.dev != ob.dev or oa.dispatched or ob.dispatched:  # (None / unknown alike: a later move places both)
        return None
    if getattr(oa, "standalone", False) or getattr(ob, "standalone", False) or oa.optimizers or ob.optimizers:
        return None
    return a


def _two_gpu_choices(a: Val, b: Val) -> bool:
    """Two devices, neither the cpu (`"cuda" if available else "cpu"` / `cuda:{local_rank}`); a cpu-or-GPU pair is
    the accelerator the test picks (attr_devices), not a join."""
    return a.kind == b.kind == "device" and a.dev is not None and b.dev is not None and not a.dev.is_cpu \
        and not b.dev.is_cpu


def _count_choice(a: Val, b: Val) -> bool:
    """An int written on one branch and another int, a number or an unknown value on the other."""
    def is_int(v: Val) -> bool:
        return v.kind == "const" and type(v.const) is int

    return (is_int(a) or is_int(b)) and all(is_int(v) or v.kind in ("number", "unknown") for v in (a, b))


def _instance_choice(a: Val, b: Val) -> Val | None:
    """`self.clip = ClipInferenceOpenAI(...)` on one path, `ClipInferenceSentenceTransformers(...)` on the other
    (a backend picked by what is on disk, a factory's `if model_type == "t5": return T5Model()`): one of
    these objects of project classes, each a path the program can take. A method called on it runs each
    one's method (as both branches of an unknown `if` run); an attribute read from it is the join of theirs
    (`join_paths`). Only between plain instances of project classes, at most MAX_CHOICES."""
    alts: list[Val] = []
    for v in (a, b):
        if v.kind != "obj" or v.obj is None:
            return None
        if v.obj.kind == "choice" and all(_is_instance(i) for i in v.obj.items):
            alts.extend(v.obj.items)
        elif _is_instance(v):
            alts.append(v)
        else:
            return None
    uniq: list[Val] = []
    for v in alts:
        if not any(v.obj is u.obj for u in uniq):
            uniq.append(v)
    if len(uniq) < 2 or len(uniq) > MAX_CHOICES:
        return None
    return Val("obj", obj=Obj("choice", items=uniq))


def _callable_choice(a: Val, b: Val) -> Val | None:
    """`criterion = hybrid_loss` on one path, `nn.CrossEntropyLoss()` or `dice_loss` on others (picked by
    an option): one of these callables, each a path the program can take. A call through it runs every
    one (as both branches of an unknown `if` run). Only where a project function is among them."""
    alts: list[Val] = []
    for v in (a, b):
        if v.kind == "obj" and v.obj is not None and v.obj.kind == "choice":
            alts.extend(v.obj.items)
        elif v.kind in ("func", "module") and (v.kind != "module" or v.obj is not None):
            alts.append(v)
        else:
            return None
    uniq: list[Val] = []
    for v in alts:
        if not any(v is u or (v.kind == "func" and u.kind == "func" and v.func is u.func) or
                   (v.kind == "module" and u.kind == "module" and v.obj is u.obj) for u in uniq):
            uniq.append(v)
    if len(uniq) > MAX_CHOICES or not any(v.kind == "func" for v in uniq):
        return None
    return Val("obj", obj=Obj("choice", items=uniq))


def _is_numbers(v: Val) -> bool:
    """A tuple or list of Python numbers (nested ones too), or host data made of them."""
    if v.kind != "obj" or v.obj is None:
        return False
    if v.obj.kind == "host":
        return True
    items = [*v.obj.items, *([v.elem] if v.elem is not None else [])]
    return v.obj.kind in ("tuple", "list") and bool(items) and all(_is_number(i) or _is_numbers(i) for i in items)


def _host_or_cpu_tensor(t: Val, host: Val) -> Val | None:
    """`if isinstance(wav, np.ndarray): wav = torch.from_numpy(wav)`: numpy data on one path, a cpu tensor on the
    other. Numpy data lives on the host, so wherever the value is used as a tensor it is on the cpu either way
    (a tensor on an accelerator on the other path is not joined: that is two devices). None: not that join."""
    if t.kind != "tensor" or t.dev is None or not t.dev.is_cpu or host.kind != "obj" or host.obj is None \
            or host.obj.kind != "host":
        return None
    return t


def _tensor_or_tensors(t: Val, seq: Val) -> Val | None:
    """`return x.cuda()` on one path, `return [v.cuda() for v in x]` on another (a helper that accepts a
    tensor or a list of them): either way every tensor it gives is on that one device, which is what a
    collated value is (a tensor, or a list/tuple of them, all on one device). None: not that join."""
    if t.kind != "tensor" or t.dev is None or not t.dev.known or t.scalar or seq.kind != "obj" or seq.obj is None \
            or seq.obj.kind not in ("list", "tuple"):
        return None
    items = [*seq.obj.items, *([seq.elem] if seq.elem is not None else [])]
    if not items or any(v.kind != "tensor" or v.dev != t.dev for v in items):
        return None
    return Val("tensor", t.dev, t.origin, batch=COLLATED)


# Tensor methods that only change the dtype: on a Parameter that has that dtype already they return
# the Parameter itself (`nn.Parameter(torch.ones(n)).float()` is still registered).
_DTYPE_ONLY = ("float", "half", "double", "bfloat16", "type_as", "to")


def _returns_self(name: str) -> bool:
    """An in-place tensor method (`requires_grad_`, `uniform_`, `fill_`, ...) returns the tensor it ran on:
    `nn.Parameter(x).requires_grad_(False)` is still that Parameter."""
    return name.endswith("_") and not name.startswith("_")


def _param_call_of(value):
    """The `nn.Parameter(...)` call under dtype-only conversions (`nn.Parameter(x).float()`) and in-place
    methods (`nn.Parameter(x).requires_grad_(False)`), or the value."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and (
            _returns_self(value.func.attr) or value.func.attr in _DTYPE_ONLY
            and (value.func.attr != "to" or (not value.args and all(k.arg == "dtype" for k in value.keywords)))):
        value = value.func.value
    return value


_JUMP_WORDS = ("break", "continue", "return", "yield")


def _jumps(body) -> bool:
    """A `break`, `continue`, `return` or `yield` in a loop body (not in a nested function): the body
    may not run to its end for each element."""
    stack = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _holds_new_modules(child) -> bool:
    """A torch container (ModuleList / ModuleDict / Sequential) has no device of its own: it is where its
    modules are. A new one filled with modules the model already holds (`remove_weight_norm` of each layer,
    collected into a fresh ModuleList) brings nothing new on the cpu; only one whose every entry is a module
    built here and never moved does. Any other module: its own device."""
    if child.cls is not None or not child.qual.endswith(("ModuleList", "ModuleDict", "Sequential")):
        return True
    vals = [*child.items, *child.keys.values(), *(child.attrs[n] for n in child.children if n in child.attrs)]
    return bool(vals) and all(v.kind == "module" and v.obj is not None and v.obj.moved is None
                              and (v.obj.dev is None or v.obj.dev.is_cpu) for v in vals)


def _set_where_made(origin: Origin | None, attr: bool) -> bool:
    """A returned tensor whose origin stays where it was made (see `_reanchor`); `attr`: a plain tensor attribute
    left behind by a module's move counts too (a tuple's items keep the call's anchor for it)."""
    return origin is not None and (origin.kind in ("unknown-moved", "restored") or (attr and origin.kind == "attr")
                                   or origin.pinned or bool(origin.local_device))
