"""DEV6xx: global default devices, library defaults, conversions and wrappers."""

from __future__ import annotations

import ast

from devflow.rules.base import Context, Finding, FixPlan, Rule, kw, span


def _sets_cuda_default(ctx: Context) -> ast.Call | None:
    if "set_default_" not in ctx.source:
        return None
    for n in ctx.index.nodes:
        if isinstance(n, ast.Call):
            q = ctx.qual(n.func)
            if q in ("torch.set_default_tensor_type", "torch.set_default_device") and n.args and \
                    "cuda" in ctx.text(n.args[0]):
                return n
    return None


class DefaultDeviceLeak(Rule):
    """DEV601: a cuda default leaks into DataLoader's sampler; torchsummary's default device="cuda"."""

    code = "DEV601"

    def check(self, ctx: Context) -> list[Finding]:
        out = list(ctx.findings(self.code))  # the interpreter's: a default set in another file (an entry script)
        default = _sets_cuda_default(ctx)
        if default is None and "torchsummary" not in ctx.source:
            return out
        tname = next((alias for alias, full in ctx.index.aliases.items() if full == "torch"), "torch")
        for n in ctx.index.nodes:
            if not isinstance(n, ast.Call):
                continue
            q = ctx.qual(n.func)
            if default is not None and q.endswith("utils.data.DataLoader") and kw(n, "generator") is None and \
                    kw(n, "sampler") is None and kw(n, "batch_sampler") is None:
                sh = kw(n, "shuffle")
                if len(n.args) >= 3 and sh is None:
                    sh = n.args[2]
                if isinstance(sh, ast.Constant) and sh.value is True:
                    out.append(Finding(
                        self.code, span(n),
                        f"the default tensor type / device is cuda (line {default.lineno}) but this shuffling "
                        f"DataLoader's sampler draws from a cpu generator: \"Expected a 'cuda' device type for "
                        f"generator\"", [(span(default), "cuda default set here")],
                        FixPlan("add_kwarg", span(n), name="generator",
                                # the device new tensors get: set_default_tensor_type does not change
                                # torch.get_default_device(), but both set what torch.empty(0) is on
                                text=f"{tname}.Generator(device={tname}.empty(0).device)",
                                title="Give the DataLoader a generator on the default device")))
            if q == "torchsummary.summary" and kw(n, "device") is None and n.args:
                m = ctx.text(n.args[0])
                out.append(Finding(
                    self.code, span(n),
                    f"torchsummary's `summary()` runs `{m}` on device=\"cuda\" by default, whatever device the model "
                    f"is on; pass the model's device", [],
                    FixPlan("add_kwarg", span(n), name="device", text=f"next({m}.parameters()).device.type",
                            title="Pass the model's device type")))
        return out


class ConversionAfterMove(Rule):
    """DEV602: `model = convert_model(model)` (SyncBatchNorm-style conversion) after the move (interpreter)."""

    code = "DEV602"


RULES = [DefaultDeviceLeak(), ConversionAfterMove()]
