"""Findings and their fix plans: two devices meeting (tensor / tensor, module / input, index),
submodules added after a move, dispatched models fed cpu inputs.
"""

from __future__ import annotations

import ast

from devflow.analysis.walk import walk
from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.lattice import CPU, Dev, definitely_differ
from devflow.analysis.interp.pinned_moves import blames_pinned
from devflow.analysis.values import Obj, Origin, Val, module_tree
from dataclasses import replace

from devflow.analysis.program import LINE_BASE
from devflow.analysis.interp.frames import span_of, Frame, is_dotted_name, MODULE_SIDE
from devflow.analysis.interp.repeat_move import repeated_move, simple_statement
from devflow.analysis.interp.input_device_state import follows_input_device
from devflow.analysis.interp.input_embeddings import is_index_lookup



def _running_loop(frame) -> ast.AST | None:
    """The innermost `for` / `while` running now: in this frame, else in the callers that led here."""
    while frame is not None:
        for st in reversed(frame.stmt_stack):
            if isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
                return st
        frame = frame.parent
    return None

class Reporting:
    """Turns proven device mixes into findings with fix plans."""

    def add(self, f: Finding) -> Finding:
        if f.span.line >= LINE_BASE:
            self.exported.append((replace(f, related=list(f.related)), f))  # for the file it lies in
            self._export_along_calls(f)
            if not self.anchor_foreign(f):
                return f  # inside an imported file, reached from no place of the checked file
        else:
            self.localize_finding(f)
        key = (f.code, f.span)
        if key not in self.findings:
            self.findings[key] = f
        return self.findings[key]

    def _export_along_calls(self, f: Finding) -> None:
        """A finding inside an imported file is also, for each other imported file the call chain passes
        through (the model class in its own module, called by the script, calling a library layer), at that
        file's innermost call that led there: what the checked file's own call site is for the checked file.
        `models.py` then shows what the same class shows when it sits in the script."""
        done = {f.span.line // LINE_BASE}
        fr = self.frame
        while fr is not None:
            call = fr.call_node
            line = getattr(call, "lineno", 0) if call is not None else 0
            if call is not None and line < LINE_BASE:
                return  # the checked file: anchor_foreign places it there
            if call is not None and line // LINE_BASE not in done:
                done.add(line // LINE_BASE)
                self.exported.append((Finding(f.code, span_of(call), f"{f.message} (at {self.place(f.span.line)})",
                                              list(f.related), None), f))
            fr = fr.parent

    def report_added_after_move(self, parent: Obj, child: Obj, target, st, frame: Frame) -> None:
        mv = parent.moved
        mv_text = mv.reason if mv else ""
        # the call that built it, seen from the frame that moved the model or from one of its callers (a
        # trainer's `adapt_head()` called after its `__init__` moved the model: the call to `adapt_head`)
        movers = set()
        fr = parent.moved_frame
        while fr is not None:
            movers.add(id(fr))
            fr = fr.parent
        site_frame = frame
        call_site = None
        while id(site_frame) not in movers and site_frame.parent is not None:
            call_site = site_frame.call_node
            site_frame = site_frame.parent
        if call_site is not None and id(site_frame) in movers:
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
                        self._append_move_fix(st.value, parent, frame, st.lineno) if isinstance(st, ast.Assign) else None)
        else:
            return
        f = self.add(f)
        for sub in module_tree(child):
            # the new module's own submodules are left on cpu with it: a forward reaching one of them
            # (`self.head.proj(x)`) is this finding again, not a second cause
            sub.pending.append(f)

    def _append_move_fix(self, value: ast.AST, parent: Obj, frame: Frame, line: int) -> FixPlan | None:
        move = repeated_move(self, parent, frame, line) if isinstance(value, ast.Call) else None
        if move is None:
            return None
        mc = move[1]
        return FixPlan("append", span_of(value), text=mc, title=f"Move the new module too: append `{mc}`",
                       applicability="safe")

    def _move_again_fix(self, parent: Obj, call_site, frame_of_site) -> FixPlan | None:
        """Repeat the move that placed the model right after the call that built the new submodule."""
        stmt = frame_of_site.stmt_stack[-1] if frame_of_site.stmt_stack else None
        if not simple_statement(stmt):
            return None
        move = repeated_move(self, parent, frame_of_site, stmt.end_lineno or stmt.lineno)
        if move is None:
            return None
        recv, mc = move
        return FixPlan("insert_after", span_of(stmt), text=f"{recv}{mc}", title=f"Move the model again: `{recv}{mc}`")

    def check_mix(self, node, vals: list[tuple[Val, str]], frame, module: Val | None = None, joined: bool = False) -> bool:
        """Report when two tensors (or a module and a tensor) are definitely on different devices.
        `joined`: the parts of one result (`torch.stack` / `torch.cat`), where a 0-dim cpu part is no exception."""
        tensors = [(v, t) for v, t in vals if v.kind == "tensor" and v.dev is not None and v.dev.known
                   and not (v.scalar and v.dev.is_cpu and not joined)]
        tensors = _first_per_device(tensors)  # same first pair, linear in a long operand list
        for i in range(len(tensors)):
            for j in range(i + 1, len(tensors)):
                a, b = tensors[i], tensors[j]
                if definitely_differ(a[0].dev, b[0].dev):
                    if (not a[0].dev.is_cpu and b[0].dev.is_cpu) or (_rank_gpu(a[0].dev) and not b[0].dev.is_cpu) \
                            or _named_gpu_vs_current(a[0].dev, b[0].dev):
                        a, b = b, a
                    if _hard_coded_gpu_vs_chosen(b[0], a[0]) or blames_pinned(a[0], b[0]):
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

    def inplace_into_cpu(self, node, recv: Val, args, frame) -> bool:
        """`ema_v.lerp_(model_v)`: an in-place op writes into its receiver, so a receiver put on the cpu on
        purpose (moved or copied there, not a factory left without device=) stays there, and the device
        tensor it is given has to come to it: reported where they meet, fixed by moving the argument."""
        org = recv.origin
        if recv.dev is None or not recv.dev.is_cpu or recv.scalar or org is None or org.kind != "placed" \
                or not isinstance(node.func, ast.Attribute):
            return False
        for v, a in zip(args, node.args):
            if v.kind == "tensor" and not v.scalar and v.dev is not None and v.dev.known and definitely_differ(CPU, v.dev):
                break
        else:
            return False
        key = ("inplace", span_of(node))
        if key in self.mix_origins:
            return True
        self.mix_origins.add(key)
        rtext, atext = self.text(node.func.value), self.text(a)
        related = [(org.span, org.reason)] + ([(v.origin.span, v.origin.reason)] if v.origin else [])
        fix = None
        if is_dotted_name(rtext) and isinstance(a, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            fix = FixPlan("append", span_of(a), text=f".to({rtext}.device)",
                          title=f"Bring it to the receiver: `{atext}.to({rtext}.device)`")
        self.add(Finding("DEV202", span_of(node),
                         f"`{rtext}.{node.func.attr}()` writes in place into `{rtext}`, on cpu ({org.reason}), but "
                         f"`{atext}` is on {v.dev.render()}" + (f" ({v.origin.reason})" if v.origin else "")
                         + f"; move `{atext}` to `{rtext}.device` first", related, fix))
        return True

    def report_mix(self, node, cpu_side: tuple[Val, str], dev_side: tuple[Val, str], frame) -> None:
        if dev_side[0].origin is not None and dev_side[0].origin.kind == "attr" and \
                (cpu_side[0].origin is None or cpu_side[0].origin.kind != "attr"):
            # the accelerator side is a plain attribute its module's move to the cpu left behind: it is at fault
            cpu_side, dev_side = dev_side, cpu_side
        a, atext = cpu_side
        b, btext = dev_side
        org = a.origin
        key = ("module", org.span) if org is not None and org.kind == "param" else org.span if org else span_of(node)
        if org is not None and org.kind == "batch" and (loop := _running_loop(frame)) is not None:
            # a batch is moved where it is used: each loop that uses it unmoved needs its own fix
            key = (org.span, span_of(loop))
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
            if org is not None and org.local_device and org.local_dev == b.dev:
                dev_text = org.local_device  # but a tensor given to that function is on the other side's device
        if org is not None and org.kind == "param":
            # a module's parameter meets an input: the module was not moved (fixed where it is built)
            code, span = "DEV106", span_of(node)
            related.append((org.span, org.reason))
            fix = self._move_root_fix(self._param_roots.get(org.span), b)
        elif org is not None and org.kind == "attr":
            code, span, fix = "DEV105", org.span, self._register_buffer_fix(org.span)
        elif org is not None and org.kind == "restored":
            # an optimizer's param_groups restored from a cpu checkpoint: moved after the load, not where used
            code, span, fix = "DEV202", org.span, getattr(self, "restore_fixes", {}).get((org.span, org.reason))
        elif org is not None and org.kind in ("factory", "legacy", "distribution"):
            code = "DEV201"
            fix = None
            if dev_text and org.kind == "legacy":
                fix = FixPlan("append", org.span, text=f".to({dev_text})", title=f"Move it: append `.to({dev_text})`")
            elif dev_text and org.span is not None and org.kind == "factory":
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
        msg = f"{a_desc} but {b_desc}; they meet at line {node.lineno}" + self.rank_mix_note(a.dev, b.dev)
        self.add(Finding(code, span, msg, related, fix))

    def _move_root_fix(self, root, other: Val) -> FixPlan | None:
        """`model.to(<device>)` right after `model = Net(...)`, when the other side's device is a name (or
        attribute) bound there to that very device (checked by evaluating it in that frame)."""
        astmt, frame, name = (getattr(root, a, None) for a in ("assign_stmt", "assign_frame", "assign_name"))
        if astmt is None or frame is None or not name or astmt.line >= LINE_BASE or root.moved is not None:
            return None
        dev_text = self._fix_device_text(other, "", frame, astmt.line)
        if not dev_text or dev_text.startswith(("'", '"')):
            return None
        try:
            expr = ast.parse(dev_text, mode="eval").body
        except SyntaxError:
            return None
        if not isinstance(expr, (ast.Name, ast.Attribute)) or self.eval(expr, frame).dev != other.dev:
            return None
        root_name = dev_text.split(".", 1)[0]
        binds = sum(1 for n in walk(frame.node) if isinstance(n, ast.Name) and n.id == root_name
                    and isinstance(n.ctx, ast.Store)) + (root_name in frame.params)
        if binds != 1:
            return None  # bound once only: the name means at the model's line what it means at the end
        return FixPlan("insert_after", astmt, text=f"{name}.to({dev_text})", title=f"Move the model: `{name}.to({dev_text})`")

    def _register_buffer_fix(self, at) -> FixPlan | None:
        """`self.x = value` -> `self.register_buffer("x", value, persistent=False)`: moved with the module
        from then on. Only where no other statement of the file assigns `self.x` (register_buffer refuses a
        name that is already a plain attribute)."""
        st = next((n for n in walk(self.tree) if isinstance(n, ast.Assign) and n.lineno == at.line
                   and n.col_offset == at.col), None)
        if st is None or len(st.targets) != 1 or not isinstance(st.targets[0], ast.Attribute) \
                or not isinstance(st.targets[0].value, ast.Name) or st.targets[0].value.id != "self" \
                or id(st) in getattr(self, "list_attr_sets", ()):
            return None  # (a list of tensors cannot be registered as a buffer)
        name = st.targets[0].attr
        stores = [n for n in walk(self.tree) if isinstance(n, ast.Attribute) and n.attr == name
                  and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id == "self"]
        if len(stores) != 1 or st.lineno != st.end_lineno:
            return None
        return FixPlan("replace", at, text=f'self.register_buffer("{name}", {self.text(st.value)}, persistent=False)',
                       title="Register it as a (non-persistent) buffer: `.to()` moves it with the module")

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
        if other_text and other_text.isidentifier() and other.kind == "tensor" and other.text != MODULE_SIDE \
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
        # The index tensor by name: the whole subscript (`t[idx]`) or one item of it (`t[idx, :]`).
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        names = [p.id for p in parts if isinstance(p, ast.Name) and self.lookup(p.id, frame) is idx]
        if len(names) == 1:
            name = names[0]
            fix = FixPlan("append", span_of(node.value), text=f".to({name}.device)",
                          title=f"Index on the index's device: `{btext}.to({name}.device)[{itext}]`")
        self.add(Finding("DEV204", span_of(node),
                         f"`{btext}` is on {base.dev.render()}" + (f" ({base.origin.reason})" if base.origin else "")
                         + f" but its index `{itext}` is on {idx.dev.render()}"
                         + (f" ({idx.origin.reason})" if idx.origin else ""), related, fix))

    def module_mix(self, call, mod: Val, args: list[tuple[Val, str]], frame, method: str = "") -> bool:
        obj = mod.obj
        if obj is None or getattr(obj, "standalone", False):
            return False
        if obj.qual and obj.qual.rsplit(".", 2)[-2:][0].endswith("Pipeline"):
            return False  # a diffusers / transformers pipeline moves its tensor arguments to its execution device
        mdev = obj.dev
        reported = False
        # (asked only where an input would be reported: it reads the class's whole body)
        realigns = lambda: obj.cls is not None and follows_input_device(obj.cls, self.builds_modules_cache)  # noqa: E731
        lookup = is_index_lookup(obj)  # an embedding's index is no 0-dim scalar exception
        for v, t in args:
            if v.kind != "tensor" or v.dev is None or not v.dev.known or (v.scalar and v.dev.is_cpu and not lookup):
                continue
            if obj.dispatched:
                if v.dev.is_cpu:
                    if realigns():
                        return False  # its forward moves its own tensors to the input's device first
                    self.report_dispatched_input(call, mod, v, t, frame, method)
                    return True
                continue
            if mdev is None or not mdev.known or not definitely_differ(mdev, v.dev):
                continue
            if not reported and realigns():
                return False
            if v.dev.is_cpu or _rank_gpu(mdev):
                # every cpu input is reported (each where it was made), so that fixing them all makes
                # the call run, not only the first one (a module on its rank's GPU: the input is wrong)
                self.report_mix(call, (v, t), (Val("tensor", mdev, obj.moved or obj.origin, text=MODULE_SIDE), self.text(call.func)
                                               .removesuffix("." + method) if method else self.text(call.func)), frame)
                reported = True
                continue
            if reported:
                continue
            self.report_module_on_cpu(call, mod, v, t, frame)
            return True
        return reported

    def report_module_on_cpu(self, call, mod: Val, v: Val, vtext: str, frame) -> None:
        obj = mod.obj
        if obj.pending or getattr(obj, "in_plain_container", False):
            return  # the root cause (DEV101 / DEV103) is reported where the module was added
        root = getattr(obj, "root_origin", None)
        key = ("module", root.span if root is not None and obj.moved is None else
               obj.origin.span if obj.origin else span_of(call))
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
        elif dev_text and frame.stmt_stack and is_dotted_name(mtext):
            # A model is moved once, before the outermost enclosing statement, where the device's names
            # are already bound (else as far out as they are: never above the loop that defines `x`).
            stack = frame.stmt_stack if code == "DEV106" else frame.stmt_stack[-1:]
            at = next((st for st in stack if self._available(dev_text, frame, st.lineno - 1)), None)
            if at is not None:
                fix = FixPlan("insert_before", span_of(at), text=f"{mtext}.to({dev_text})",
                              title=f"Move the {what.split(' ')[0]}: `{mtext}.to({dev_text})`")
        oreason = obj.origin.reason if obj.origin else ""
        if obj.moved is None and oreason and "never moved" not in oreason and code == "DEV106":
            oreason += " and never moved"
        msg = (f"the {what} `{mtext}` is on {obj.dev.render()}" + (f" ({oreason})" if oreason else "")
               + f" but `{vtext}` is on {v.dev.render()}" + (f" ({v.origin.reason})" if v.origin else ""))
        self.add(Finding(code, span, msg, related, fix))

    def report_dispatched_input(self, call, mod: Val, v: Val, vtext: str, frame, method: str = "") -> None:
        obj = mod.obj
        related = []
        if obj.origin:
            related.append((obj.origin.span, obj.origin.reason))
        if v.origin:
            related.append((v.origin.span, v.origin.reason))
        # `model.generate(ids)` names the model before the method; `self.embed(ids)` calls the module itself
        mtext = self.text(call.func.value) if method and isinstance(call.func, ast.Attribute) else self.text(call.func)
        fix = None
        if isinstance(call.args[0] if call.args else None, ast.Name) and frame.stmt_stack and is_dotted_name(mtext):
            name = call.args[0].id
            table = f"{mtext}.weight" if is_index_lookup(obj) else f"{mtext}.get_input_embeddings().weight"
            fix = FixPlan("insert_before", span_of(frame.stmt_stack[-1]),
                          text=f"{name} = {name}.to({table}.device)",
                          title="Send the inputs to the device of the model's first layer")
        self.add(Finding("DEV502", span_of(call),
                         f"`{vtext}` is on cpu" + (f" ({v.origin.reason})" if v.origin else "")
                         + f" but `{mtext}` is placed by accelerate (device_map / quantization)"
                         + (f" ({obj.origin.reason})" if obj.origin else "")
                         + "; send inputs to the device of its first layer", related, fix))

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
        # the move was conditional (`if args.cuda: model.cuda()`): the earlier move keeps its condition
        guards = []
        for st, in_body in getattr(self, "_cur_guards", []):
            if st.lineno <= line <= st.end_lineno:
                continue  # around the model's creation too
            if not in_body:
                return None
            guards.append(st.test)
        for g in guards:
            names = {n.id for n in ast.walk(g) if isinstance(n, ast.Name)}
            if not all(self._available(n, lf, line) for n in names):
                return None
        block = text
        for g in reversed(guards):
            block = f"if {self.text(g)}:\n" + "\n".join("    " + ln for ln in block.splitlines())
        return FixPlan("insert_after", root.assign_stmt, text=block,
                       title=f"Move the model before loading the optimizer state: `{text}`")


def _first_per_device(tensors: list) -> list:
    """The first operand of each concrete device, and the first accelerator-meant symbolic one (symbolic
    devices differ only from cpu, and only when meant as the accelerator): the first pair that
    differs is the same as in the full list, and the list stays short (`a < b < ... ` 10,000 terms)."""
    out, seen, accel_sym = [], set(), False
    for v, t in tensors:
        dev = v.dev
        if dev.kind == "sym":
            if dev.accel and not accel_sym:
                accel_sym = True
                out.append((v, t))
        elif dev not in seen:
            seen.add(dev)
            out.append((v, t))
    return out


def _rank_gpu(dev: Dev) -> bool:
    """The rank's GPU, itself or as the GPU side of a device chosen between it and the cpu
    (`f"cuda:{local_rank}" if available else "cpu"`): the other value of a mix is the one out of place."""
    return (dev.gpu if dev.kind == "sym" and dev.gpu is not None else dev).is_rank


def _named_gpu_vs_current(a: Dev, b: Dev) -> bool:
    """`a` on a GPU the program names (cuda:1), `b` on the *current* one (a bare "cuda", `.cuda()`, a legacy cuda
    type): the value that went to the current device by default is the one out of place."""
    return a.kind == b.kind == "cuda" and a.index is not None and not a.is_rank and b.index is None and b.key is None


def _hard_coded_gpu_vs_chosen(fixed: Val, chosen: Val) -> bool:
    """`torch.arange(n, device="cuda:1")` meeting a tensor on the device the program chose at run time
    (`"cuda" if available else "cpu"`, flowing in from its model or batch): the factory's written-in GPU
    cannot follow that choice, so it is the one out of place (reported where it is created)."""
    return fixed.origin is not None and fixed.origin.kind == "explicit" and fixed.dev.kind == "cuda" \
        and fixed.dev.index is not None and not fixed.dev.is_rank and chosen.dev.kind == "sym"

