"""DEV5xx: device_map dispatch, accelerate and PEFT."""

from __future__ import annotations

import ast

from devflow.rules.base import Context, Finding, FixPlan, Rule, kw, span

_DISPATCH = ("auto", "balanced", "balanced_low_0", "sequential")
_PEFT_FUNCS = ("prepare_model_for_kbit_training", "get_peft_model")


class MoveDispatchedModel(Rule):
    """DEV501: `.to(device)` on a model loaded with device_map (interpreter)."""

    code = "DEV501"


class InputsForDispatchedModel(Rule):
    """DEV502: cpu inputs fed to a model dispatched with device_map (interpreter)."""

    code = "DEV502"


class DeviceMapAutoWithPeftTraining(Rule):
    """DEV503: from_pretrained(device_map="auto") + PEFT/QLoRA training."""

    code = "DEV503"

    def check(self, ctx: Context) -> list[Finding]:
        loads: dict[str, ast.keyword] = {}
        if "device_map" not in ctx.source:
            return []
        for n in ctx.index.nodes:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and \
                    isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute) and \
                    n.value.func.attr == "from_pretrained":
                dm = next((k for k in n.value.keywords if k.arg == "device_map"), None)
                if dm is not None and isinstance(dm.value, ast.Constant) and dm.value.value in _DISPATCH:
                    loads[n.targets[0].id] = dm
        if not loads:
            return []
        trained: dict[str, ast.Call] = {}
        for n in ctx.index.nodes:
            if not isinstance(n, ast.Call):
                continue
            name = ctx.qual(n.func).rsplit(".", 1)[-1]
            names = [a.id for a in n.args if isinstance(a, ast.Name)]
            if name in _PEFT_FUNCS:
                for x in names:
                    trained.setdefault(x, n)
            if kw(n, "peft_config") is not None and name.endswith("Trainer"):
                m = kw(n, "model")
                if isinstance(m, ast.Name):
                    trained.setdefault(m.id, n)
        out = []
        for var, dm in loads.items():
            if var not in trained:
                continue
            out.append(Finding(
                self.code, span(dm.value),
                f"`{var}` is loaded with device_map={dm.value.value!r} (naive model parallelism, layers spread or "
                f"offloaded across devices) and trained with PEFT (line {trained[var].lineno}): under multi-GPU "
                f"launches each process claims every GPU and offloaded layers cannot be trained; load one full copy per "
                f"process with device_map={{'': PartialState().process_index}}",
                [(span(trained[var]), "PEFT training here")],
                FixPlan("replace", span(dm.value), text='{"": PartialState().process_index}',
                        title="Load one copy per process: device_map={\"\": PartialState().process_index}",
                        name="import:from accelerate import PartialState")))
        return out


RULES = [MoveDispatchedModel(), InputsForDispatchedModel(), DeviceMapAutoWithPeftTraining()]
