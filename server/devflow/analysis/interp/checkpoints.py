"""Checkpoints loaded onto the cpu, followed through the functions that load and restore them.

`torch.load(path, map_location="cpu")` gives a checkpoint whose tensors are on the cpu; an entry of it
(`ckpt["optimizer"]`) is too. A fused (or capturable) optimizer restored from such an entry keeps its
`state_steps` on the cpu while its kernel needs them on the parameters' device (DEV401; torch < 2.1
fails in `step()`), unless the code then touches `optimizer.state` (to move the steps itself).
"""

from __future__ import annotations

from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.values import Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class Checkpoints:
    """cpu-mapped checkpoints and the optimizers restored from them."""

    def checkpoint_load(self, node, args, kwargs) -> Val | None:
        ml = kwargs.get("map_location", args[1] if len(args) > 1 else None)
        if ml is None or not _is_cpu(ml):
            return None
        obj = Obj("ckpt", qual="torch.load", origin=Origin(span_of(node), f"loaded onto the cpu at line {node.lineno}"))
        return Val("unknown", obj=obj)  # unknown to everything else (its entries may be anything)

    def checkpoint_entry(self, base: Val) -> Val | None:
        """`ckpt["optimizer"]`: a part of a cpu-mapped checkpoint, on the cpu too."""
        if base.kind == "unknown" and base.obj is not None and base.obj.kind == "ckpt":
            return base
        return None

    def optimizer_restored(self, node, opt: Obj, args, frame) -> None:
        if not getattr(opt, "fused_kernel", False) or not args or args[0].kind != "unknown" or args[0].obj is None \
                or args[0].obj.kind != "ckpt" or self.standalone:
            return
        ckpt = args[0].obj
        name = self.text(node.func.value)
        loop = (f"for param, state in {name}.state.items():\n"
                f"    if \"step\" in state and torch.is_tensor(state[\"step\"]):\n"
                f"        state[\"step\"] = state[\"step\"].to(device=param.device, dtype=torch.float32)")
        fix = FixPlan("insert_after", span_of(frame.stmt_stack[-1]), text=loop,
                      title="Move each state['step'] to its parameter's device") if frame.stmt_stack else None
        related = [(ckpt.origin.span, ckpt.origin.reason)] if ckpt.origin else []
        if opt.origin is not None:
            related.append((opt.origin.span, "fused optimizer created here"))
        f = self.add(Finding("DEV401", span_of(node),
                             f"`{name}` is a fused optimizer" + (f" (line {opt.origin.span.line})" if opt.origin else "")
                             + " resumed from a checkpoint mapped to cpu" + (f" ({ckpt.origin.reason})" if ckpt.origin else "")
                             + ": its `state_steps` stay on cpu while the fused kernel needs them on the parameters' "
                               "device (torch < 2.1 fails in `step()`)", related, fix))
        opt.restored_cpu = f  # type: ignore[attr-defined]

    def optimizer_state_read(self, opt: Obj) -> None:
        """`optimizer.state` read after the restore: the code moves the steps itself. Read after the
        model moved away from the state (`for s in opt.state.values(): s[k] = v.to(device)`): the
        code moves the state after the model, as it must. Read after a restore that came before the
        model's move: the code places the restored state itself (cv-lee/BraTs#10)."""
        f = getattr(opt, "restored_cpu", None)
        if f is not None:
            f.cancelled = True
            opt.restored_cpu = None  # type: ignore[attr-defined]
        if getattr(opt, "loaded_at", None) is not None and not self.standalone:
            # read right after `load_state_dict`, before the model moves (`for s in opt.state.values():
            # s[k] = v.cuda()`): the code places the restored state itself
            opt.loaded_at = None
        stale = getattr(opt, "stale", None)
        if stale is not None and not self.standalone:
            stale.cancelled = True
            opt.stale = None  # type: ignore[attr-defined]


    def optimizer_reloaded(self, opt: Obj) -> None:
        """`optimizer.load_state_dict(...)` once every model it updates has moved: the load casts each
        state tensor to its parameter's device of this moment, so state left behind by the earlier move
        (built in `__init__`, made by a first step, restored before the move) is re-placed with the
        parameters (`opt.load_state_dict(opt.state_dict())` after `model.to(device)`)."""
        stale = getattr(opt, "stale", None)
        mods = [m for m in opt.modules if m.kind == "module"]
        if stale is None or self.standalone or not mods or any(m.moved is None for m in mods):
            return
        stale.cancelled = True
        opt.stale = None  # type: ignore[attr-defined]
        opt.awaiting_step = None  # type: ignore[attr-defined]


def _is_cpu(v: Val) -> bool:
    if v.kind == "const" and isinstance(v.const, str):
        return v.const.startswith("cpu")
    if v.kind == "device":
        return v.dev is not None and v.dev.is_cpu
    return False
