"""`nn.DataParallel(model)` where `model` is already a DataParallel (wrapped again in an evaluation helper,
`if n_gpu > 1: model = DataParallel(model)` in both train() and evaluate()). The outer wrapper replicates the
inner one onto each of its GPUs; in the replica on cuda:1 the inner DataParallel's module sits on cuda:1 while
its device_ids[0] is still cuda:0, so its forward raises ("module must have its parameters and buffers on
device cuda:0 (device_ids[0]) but found one of them on device: cuda:1"). The wrapper value a DataParallel call
returns is tagged (kept by copies of the value), so wrapping a tagged value is told apart from wrapping the
same module twice side by side (`a = DataParallel(m); b = DataParallel(m)`)."""

from __future__ import annotations

from devflow.analysis.findings import Finding
from devflow.analysis.interp.frames import span_of
from devflow.analysis.values import Val

DP_WRAPPER = "dp-wrapper"  # a value DataParallel(...) returned
DP_NESTED = "dp-nested"  # ... whose argument was such a value already


def wrapper_value(arg: Val) -> Val:
    """What `DataParallel(arg)` returns: the same module object, tagged as a wrapper (nested when `arg` was one)."""
    v = arg.with_text(arg.text)
    v.batch = DP_NESTED if arg.batch in (DP_WRAPPER, DP_NESTED) else DP_WRAPPER
    return v


def report_nested_wrapper(interp, node, mod: Val) -> None:
    """DEV106 at the call of a wrapper of a wrapper over several GPUs (program using CUDA), once per wrap."""
    obj = mod.obj
    dp = getattr(obj, "data_parallel", None) if obj is not None else None
    if dp is None or mod.batch != DP_NESTED or not dp[3] or not getattr(obj, "dp_on_gpus", False) or obj.dispatched \
            or ("dp", dp[2]) in interp.mix_origins:
        return
    wrap_span = dp[2]
    interp.mix_origins.add(("dp", wrap_span))
    interp.add(Finding("DEV106", span_of(node),
                       f"`{interp.text(node.func)}` is a DataParallel module wrapped in DataParallel again (line "
                       f"{wrap_span.line}): the outer one replicates the inner wrapper onto each GPU, where its module "
                       f"sits on that replica's GPU, but the inner one runs its forward with it on cuda:0 (its "
                       f"device_ids[0]): wrap it once (`if not isinstance(model, nn.DataParallel)`)",
                       [(wrap_span, f"wrapped in DataParallel again at line {wrap_span.line}")], None))


_DP_CLASSES = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                         "torch.nn.parallel.data_parallel.DataParallel"})


def wrapper_isinstance(v: Val, types: list) -> bool | None:
    """`isinstance(model, nn.DataParallel)` (alone or in a tuple of classes) of a value a DataParallel call
    returned: True. Undecided otherwise (left to the module's own class)."""
    if v.batch in (DP_WRAPPER, DP_NESTED) and any(t.kind == "qual" and t.const in _DP_CLASSES for t in types):
        return True
    return None
