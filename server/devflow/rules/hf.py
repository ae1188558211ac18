"""DEV5xx: device_map dispatch, accelerate and PEFT."""

from __future__ import annotations

import ast

from devflow.rules.base import Context, Finding, FixPlan, Rule, kw, span

_DISPATCH = ("auto", "balanced", "balanced_low_0", "sequential")
_PEFT_FUNCS = ("prepare_model_for_kbit_training", "get_peft_model")
# What shows that the program is launched as several processes (one per GPU).
_LAUNCH_CALLS = ("accelerate.Accelerator", "accelerate.PartialState", "accelerate.state.PartialState",
                 "accelerate.notebook_launcher", "torch.distributed.", "torch.nn.parallel.DistributedDataParallel",
                 "torch.multiprocessing.spawn", "deepspeed.")
_LAUNCH_STRINGS = ("LOCAL_RANK", "WORLD_SIZE", "--local_rank", "--local-rank", "torchrun", "accelerate launch")
_LAUNCH_KEYWORDS = ("ddp_find_unused_parameters", "deepspeed", "fsdp", "local_rank")
_BLOCKS = ("body", "orelse", "finalbody")


class MoveDispatchedModel(Rule):
    """DEV501: `.to(device)` on a model loaded with device_map (interpreter)."""

    code = "DEV501"


class InputsForDispatchedModel(Rule):
    """DEV502: cpu inputs fed to a model dispatched with device_map (interpreter)."""

    code = "DEV502"


def launched_as_processes(ctx: Context) -> bool:
    """Evidence in the file of a multi-process launch (accelerate, torchrun, DDP, LOCAL_RANK)."""
    for n in ctx.index.nodes:
        if isinstance(n, (ast.Name, ast.Attribute)):
            q = ctx.qual(n)
            if q and any(q == c or (c.endswith(".") and q.startswith(c)) for c in _LAUNCH_CALLS):
                return True
            if isinstance(n, ast.Attribute) and n.attr == "local_rank":
                return True
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            if any(s in n.value for s in _LAUNCH_STRINGS):
                return True
        elif isinstance(n, ast.keyword) and n.arg in _LAUNCH_KEYWORDS:
            return True
    return False


def _assigned_names(node: ast.AST) -> set[str]:
    """Names bound by a statement (or anywhere inside a compound one, nested scopes excluded)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        for child in ast.iter_child_nodes(n):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)
    return out


def _header(st: ast.stmt) -> list[ast.AST]:
    """The parts of a statement outside the blocks it heads (a `for`'s target and iterable, ...)."""
    roots: list[ast.AST] = []
    for field, value in ast.iter_fields(st):
        if field in _BLOCKS or field in ("handlers", "cases"):
            continue
        roots.extend(value if isinstance(value, list) else [value])
    return [r for r in roots if isinstance(r, ast.AST)]


class DeviceMapAutoWithPeftTraining(Rule):
    """DEV503: from_pretrained(device_map="auto") + PEFT/QLoRA training of that same model object, in a
    program launched as several processes."""

    code = "DEV503"

    def check(self, ctx: Context) -> list[Finding]:
        if "device_map" not in ctx.source or not launched_as_processes(ctx):
            return []
        self._ctx, self._out = ctx, []
        scopes = [ctx.tree.body] + [f.body for f in ctx.index.nodes
                                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for body in scopes:
            self._block(body, {})
        return self._out

    # One scope's statements in order; `live` maps a name to the device_map keyword of the
    # dispatched load it still holds. A branch sees the loads made before it; a load made inside a
    # branch is not carried past it, and any other binding of the name ends it.
    def _block(self, body: list[ast.stmt], live: dict[str, ast.keyword]) -> None:
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for call in self._calls(st):
                self._peft_use(call, live)
            load = self._dispatched_load(st)
            if load is not None:
                live[load[0]] = load[1]
                continue
            kept = self._peft_rebinding(st, live)
            for name in set().union(*map(_assigned_names, _header(st))) - kept:
                live.pop(name, None)
            for field in _BLOCKS:
                sub = getattr(st, field, None)
                if sub and isinstance(sub, list) and isinstance(sub[0], ast.stmt):
                    self._block(sub, dict(live))
            for h in getattr(st, "handlers", None) or []:
                self._block(h.body, dict(live))
            for case in getattr(st, "cases", None) or []:
                self._block(case.body, dict(live))
            for name in _assigned_names(st) - kept:  # bound inside the compound statement
                live.pop(name, None)

    @staticmethod
    def _calls(st: ast.stmt) -> list[ast.Call]:
        """The calls of the statement itself, not of the blocks it heads."""
        out, stack = [], _header(st)
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Call):
                out.append(n)
            if not isinstance(n, ast.Lambda):
                stack.extend(ast.iter_child_nodes(n))
        return sorted(out, key=lambda c: (c.lineno, c.col_offset))

    @staticmethod
    def _dispatched_load(st: ast.stmt):
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            v = st.value
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and isinstance(v, ast.Call) and \
                    isinstance(v.func, ast.Attribute) and v.func.attr == "from_pretrained":
                dm = next((k for k in v.keywords if k.arg == "device_map"), None)
                if dm is not None and isinstance(dm.value, ast.Constant) and dm.value.value in _DISPATCH:
                    return targets[0].id, dm
        return None

    def _trained_names(self, call: ast.Call) -> list[str]:
        name = self._ctx.qual(call.func).rsplit(".", 1)[-1]
        if name in _PEFT_FUNCS:
            m = call.args[0] if call.args else kw(call, "model")
            return [m.id] if isinstance(m, ast.Name) else []
        if name.endswith("Trainer") and kw(call, "peft_config") is not None:
            m = kw(call, "model") or (call.args[0] if call.args else None)
            return [m.id] if isinstance(m, ast.Name) else []
        return []

    def _peft_rebinding(self, st: ast.stmt, live: dict) -> set[str]:
        """`model = get_peft_model(model, ...)`: still the same dispatched model."""
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                isinstance(st.value, ast.Call) and st.targets[0].id in self._trained_names(st.value):
            return {st.targets[0].id}
        return set()

    def _peft_use(self, call: ast.Call, live: dict[str, ast.keyword]) -> None:
        for var in self._trained_names(call):
            dm = live.pop(var, None)
            if dm is None:
                continue
            live[var] = dm  # still live, reported once
            if any(f.span == span(dm.value) for f in self._out):
                continue
            self._out.append(Finding(
                self.code, span(dm.value),
                f"`{var}` is loaded with device_map={dm.value.value!r} (naive model parallelism, layers spread or "
                f"offloaded across devices) and trained with PEFT (line {call.lineno}) in a program launched as "
                f"several processes: each process claims every GPU and offloaded layers cannot be trained; load one "
                f"full copy per process with device_map={{'': PartialState().process_index}}",
                [(span(call), "PEFT training here")],
                FixPlan("replace", span(dm.value), text='{"": PartialState().process_index}',
                        title="Load one copy per process: device_map={\"\": PartialState().process_index}",
                        name="import:from accelerate import PartialState")))


RULES = [MoveDispatchedModel(), InputsForDispatchedModel(), DeviceMapAutoWithPeftTraining()]
