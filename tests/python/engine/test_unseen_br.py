"""Semantics found missing on unseen real cases, batch BR (tests/fixtures/engine/unseen/br_*): hand-written
models and their data pipelines (custom layers, losses, metrics, augmentations, inference scripts).

- Clamping to tensor bounds has no wrapped-number exception: `torch.clamp(x, min=a, max=b)`, `x.clamp(...)`,
  `clip` and the in-place forms with a tensor bound dispatch to clamp's Tensor overload, whose device check
  covers `self`, `min` and `max` alike, so a 0-dim cpu bound with a cuda tensor raises ("... argument max in
  method wrapper_CUDA_clamp_Tensor"), where an arithmetic operator would take the same 0-dim tensor as a number.
  Swin Transformer V2's window attention (and ViTEraser's copy of it) clamps its cuda `logit_scale` with
  `max=torch.log(torch.tensor(1. / 0.01))` (interp/clamp_bounds.py). A Python number bound takes the Scalar
  overload and mixes with anything; a bound on the clamped tensor's device, or on an unknown device, is silent.
- One of two lists or tuples is a sequence of either's elements: a name that may be either of two sequences (a
  loop or a comprehension over `(tps, fps)`, `xs if c else ys`) holds elements that are each one of the two's
  elements, the join of their values, so a device both agree on is kept. segmentation_models.pytorch's
  `get_stats` returns cpu counters (filled by indexed assignment from cuda histograms); the training script
  gathers them in per-statistic lists, concatenates each with `(torch.cat(s).sum(0) for s in (tps, fps, ...))`
  and all-reduces them on NCCL (interp/sequence_joins.py). Lists whose elements disagree or are unknown give
  an element of unknown device, as before.
- A module class that overrides `nn.Module._apply` takes over what `.to()` / `.cuda()` do to its state: after a
  move, its plain tensor attributes (and containers of them) and the attributes the override assigns
  (`self.device = self.param.device`) are no longer known, so nothing is reported as left behind on the device
  they were set on. FLAMO's fix for its Biquad filters (whose stability maps build tensors with
  `device=self.device` and whose envelope is a plain tensor attribute) is such an override on the DSP base
  (interp/apply_overrides.py); without the override the envelope left on the cpu is still found.
- A `match` statement runs the first case whose pattern matches its subject (and whose guard holds), as the
  `if` / `elif` chain it amounts to: a known subject decides the case, an unknown one makes each case a path.
  Value patterns test `==`, `None` / `True` / `False` identity, `p | q` either, a wildcard or bare capture always
  matches (a capture binds the subject); class, sequence and mapping patterns are undecided tests. FLAMO's
  Biquad sets its stability map, the clamp whose cpu `min` the reporter hit, in
  `match self.filter_type: case "lowpass" | "highpass": ...`, which was not run at all
  (interp/match_statements.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _path_codes(root: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, src in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    out = []
    for name in files:
        out += [(name, d.span.line, d.code) for d in check_path(str(root / name)).diagnostics]
    return sorted(out)


# --- clamp to a 0-dim cpu tensor bound ---------------------------------------------------------------------------

_ATTENTION = """
    import torch
    import torch.nn as nn


    class WindowAttention(nn.Module):
        def __init__(self, heads):
            super().__init__()
            self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((heads, 1, 1))))
            self.proj = nn.Linear(8, 8)

        def forward(self, attn):
            logit_scale = torch.clamp(self.logit_scale, max=BOUND).exp()
            return self.proj(attn * logit_scale)


    model = WindowAttention(4).cuda()
    out = model(torch.rand(2, 4, 8, 8).cuda())
"""


def test_clamp_to_a_zero_dim_cpu_bound_meets_the_moved_parameter():
    assert _codes(_ATTENTION.replace("BOUND", "torch.log(torch.tensor(1. / 0.01))")) == [(13, "DEV201")]


def test_tensor_method_clamp_and_clip_with_a_min_bound():
    src = _ATTENTION.replace("torch.clamp(self.logit_scale, max=BOUND)",
                             "self.logit_scale.clip(torch.tensor(0.), torch.tensor(4.6))")
    assert _codes(src) == [(13, "DEV201")]


def test_in_place_clamp_with_a_positional_bound():
    src = _ATTENTION.replace("logit_scale = torch.clamp(self.logit_scale, max=BOUND).exp()",
                             "logit_scale = self.logit_scale.detach().clone()\n"
                             "            logit_scale.clamp_(None, torch.tensor(4.6))")
    assert _codes(src) == [(14, "DEV201")]


def test_bound_made_by_a_helper_in_another_file(tmp_path):
    files = {
        "bounds.py": """
            import math

            import torch


            def max_logit():
                return torch.tensor(math.log(1. / 0.01))
            """,
        "model.py": _ATTENTION.replace("import torch.nn as nn", "import torch.nn as nn\n    from bounds import max_logit")
        .replace("BOUND", "max_logit()"),
    }
    assert _path_codes(tmp_path, files) == [("model.py", 14, "DEV201")]


def test_inside_a_trainer_class():
    src = """
        import torch
        import torch.nn as nn


        class Scaler(nn.Module):
            def __init__(self):
                super().__init__()
                self.temperature = nn.Parameter(torch.ones(1))

            def forward(self, logits):
                return logits / torch.clamp(self.temperature, min=torch.tensor(0.05))


        class Trainer:
            def __init__(self, device):
                self.device = device
                self.scaler = Scaler().to(device)

            def step(self, logits):
                return self.scaler(logits.to(self.device))


        Trainer(torch.device("cuda")).step(torch.rand(4, 10))
    """
    assert _codes(src) == [(12, "DEV201")]


def test_python_number_bound_is_silent():
    assert _codes(_ATTENTION.replace("BOUND", "4.6052")) == []


def test_bound_on_the_parameter_device_is_silent():
    assert _codes(_ATTENTION.replace("BOUND", "torch.log(torch.tensor(1. / 0.01, device=self.logit_scale.device))")) == []
    assert _codes(_ATTENTION.replace("BOUND", "torch.log(torch.tensor(1. / 0.01)).to(self.logit_scale.device)")) == []


def test_bound_on_an_unknown_device_is_silent():
    src = _ATTENTION.replace("def forward(self, attn):", "def forward(self, attn, bound):") \
        .replace("BOUND", "bound").replace("model(torch.rand(2, 4, 8, 8).cuda())", "model(torch.rand(2, 4, 8, 8).cuda(), load_bound())")
    assert _codes(src) == []


def test_zero_dim_cpu_tensor_in_arithmetic_still_mixes_freely():
    src = _ATTENTION.replace("torch.clamp(self.logit_scale, max=BOUND).exp()",
                             "(self.logit_scale * torch.tensor(2.)).exp()")
    assert _codes(src) == []


# --- one of two lists --------------------------------------------------------------------------------------------

_STATS = """
    import torch
    import torch.distributed as dist


    def counts(output, n):
        tp = torch.zeros(output.shape[0], n, dtype=torch.long)
        fp = torch.zeros(output.shape[0], n, dtype=torch.long)
        for i in range(output.shape[0]):
            tp[i] = torch.histc(output[i].float(), bins=n).long()
        return tp, fp


    def main():
        dist.init_process_group(backend="nccl")
        device = torch.device("cuda", 0)
        tps, fps = [], []
        for _ in range(3):
            tp, fp = counts(torch.rand(8, 5, device=device), 5)
            tps.append(tp)
            fps.append(fp)
        REDUCE


    if __name__ == "__main__":
        main()
"""


def test_stats_joined_from_a_generator_over_two_lists():
    src = _STATS.replace("REDUCE", "tp, fp = (torch.cat(s).sum(0) for s in (tps, fps))\n        dist.all_reduce(tp)")
    assert _codes(src) == [(23, "DEV208")]


def test_loop_over_two_lists():
    src = _STATS.replace("REDUCE", "for s in (tps, fps):\n            dist.all_reduce(torch.cat(s))")
    assert _codes(src) == [(23, "DEV208")]


def test_one_of_two_lists_by_a_condition_meets_a_cuda_tensor():
    src = _STATS.replace("REDUCE", "both = tps if len(tps) > 2 else fps\n        return torch.cat(both) + torch.ones(8, 5, device=device)")
    assert _codes(src) == [(7, "DEV201")]  # the cpu counters `counts(output, n)` makes beside the cuda output


def test_metrics_helper_in_another_file_inside_a_trainer(tmp_path):
    files = {
        "metrics.py": """
            import torch


            def counts(output, n):
                tp = torch.zeros(output.shape[0], n, dtype=torch.long)
                fn = torch.zeros(output.shape[0], n, dtype=torch.long)
                for i in range(output.shape[0]):
                    tp[i] = output[i].long()
                return tp, fn
            """,
        "train.py": """
            import torch
            import torch.distributed as dist

            from metrics import counts


            class Trainer:
                def __init__(self):
                    dist.init_process_group(backend="nccl")
                    self.device = torch.device("cuda", 0)

                def validate(self, batches):
                    tps, fns = [], []
                    for x in batches:
                        tp, fn = counts(x.to(self.device), 4)
                        tps.append(tp)
                        fns.append(fn)
                    totals = [torch.cat(s).sum(0) for s in (tps, fns)]
                    for t in totals:
                        dist.all_reduce(t)
                    return totals


            if __name__ == "__main__":
                Trainer().validate([torch.rand(2, 4)])
            """,
    }
    assert _path_codes(tmp_path, files) == [("train.py", 21, "DEV208")]


def test_counters_on_the_output_device_are_silent():
    src = _STATS.replace("dtype=torch.long)", "dtype=torch.long, device=output.device)") \
        .replace("REDUCE", "tp, fp = (torch.cat(s).sum(0) for s in (tps, fps))\n        dist.all_reduce(tp)")
    assert _codes(src) == []


def test_lists_on_two_devices_give_an_unknown_element():
    src = _STATS.replace("REDUCE", "gpu = [t.to(device) for t in tps]\n"
                         "        both = gpu if len(tps) > 2 else fps\n"
                         "        dist.all_reduce(torch.cat(both))")
    assert _codes(src) == []


def test_lists_of_unknown_tensors_stay_silent():
    src = _STATS.replace("REDUCE", "for s in (load(), fps[:0]):\n            dist.all_reduce(torch.cat(s))")
    assert _codes(src) == []


# --- an _apply override ------------------------------------------------------------------------------------------

_DSP = """
    import torch
    import torch.nn as nn


    class DSP(nn.Module):
        def __init__(self, n, device=None):
            super().__init__()
            self.device = device
            self.param = nn.Parameter(torch.ones(n, device=device))
            self.envelope = 0.9 ** torch.arange(0, n, device=device)
    OVERRIDE

    class Filter(DSP):
        def forward(self, x):
            bound = torch.tensor(0.5, device=self.device).expand_as(x)
            return torch.maximum(x * self.param * self.envelope, bound)


    class Shell(nn.Module):
        def __init__(self, core):
            super().__init__()
            self.core = core

        def forward(self, x):
            return self.core(x)


    if __name__ == "__main__":
        model = Shell(Filter(8)).to("cuda")
        model(torch.ones(8).cuda())
"""

_OVERRIDE = """
        def _apply(self, fn, recurse=True):
            super()._apply(fn, recurse)
            for name, value in list(self.__dict__.items()):
                if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
                    setattr(self, name, fn(value))
            self.device = self.param.device
            return self
"""


def test_plain_attributes_left_on_the_cpu_without_an_override():
    assert _codes(_DSP.replace("OVERRIDE", "")) == [(11, "DEV201")]  # the envelope left on the cpu


def test_apply_override_on_the_base_class_is_silent():
    assert _codes(_DSP.replace("OVERRIDE", _OVERRIDE)) == []


def test_apply_override_in_another_file(tmp_path):
    base = _DSP.split("class Filter(DSP):")[0].replace("OVERRIDE", _OVERRIDE)
    rest = "import torch\nimport torch.nn as nn\n\nfrom dsp import DSP\n\n\nclass Filter(DSP):" + \
        _DSP.split("class Filter(DSP):")[1]
    assert _path_codes(tmp_path, {"dsp.py": base, "model.py": textwrap.dedent(rest)}) == []


def test_override_that_does_not_move_a_buffer_keeps_the_buffer_moved():
    src = _DSP.replace("OVERRIDE", _OVERRIDE).replace(
        "self.envelope = 0.9 ** torch.arange(0, n, device=device)",
        "self.register_buffer('envelope', 0.9 ** torch.arange(0, n, device=device))")
    assert _codes(src) == []


# --- match statements --------------------------------------------------------------------------------------------

_MATCH = """
    import torch
    import torch.nn as nn


    class Stage(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.kind = kind
            self.w = nn.Parameter(torch.ones(4))
            self.build()

        def build(self):
            match self.kind:
                case "lowpass" | "highpass":
                    self.bound = lambda x: torch.clamp(x, min=torch.zeros(4))
                case "bandpass":
                    self.bound = lambda x: torch.clamp(x, min=torch.zeros(4, device=x.device))
                case _:
                    self.bound = lambda x: x

        def forward(self, x):
            return self.bound(x * self.w)


    if __name__ == "__main__":
        stage = Stage(KIND).to("cuda")
        stage(torch.ones(4, device="cuda"))
"""


def test_match_on_a_known_subject_runs_its_case():
    assert _codes(_MATCH.replace("KIND", '"highpass"')) == [(16, "DEV201")]


def test_match_on_a_known_subject_skips_the_other_cases():
    assert _codes(_MATCH.replace("KIND", '"bandpass"')) == []
    assert _codes(_MATCH.replace("KIND", '"notch"')) == []


def test_match_on_an_unknown_subject_runs_every_case():
    src = """
        import sys

        import torch


        def floor(kind, x):
            match kind:
                case "relative":
                    eps = torch.full((4,), 1e-3)
                case _:
                    eps = torch.zeros(4)
            return torch.maximum(x, eps)


        if __name__ == "__main__":
            floor(sys.argv[1], torch.ones(4, device="cuda"))
    """
    assert _codes(src) == [(10, "DEV201")]


def test_match_capture_guard_and_class_patterns():
    src = """
        import torch


        def scale(spec, x):
            match spec:
                case int() | float():
                    return x
                case [lo, hi]:
                    return x.clamp(lo, hi)
                case factor if factor is not None:
                    return x * factor
                case _:
                    return x + torch.ones(3)


        if __name__ == "__main__":
            scale(None, torch.ones(3, device="cuda"))
    """
    assert _codes(src) == [(14, "DEV201")]


def test_match_in_a_helper_of_another_file(tmp_path):
    files = {
        "designs.py": """
            import torch


            def envelope(kind, n, device=None):
                match kind:
                    case "exp":
                        return 0.9 ** torch.arange(n)
                    case "flat":
                        return torch.ones(n, device=device)
            """,
        "run.py": """
            import torch

            from designs import envelope

            if __name__ == "__main__":
                x = torch.ones(8, device="cuda")
                y = x * envelope("exp", 8)
                z = x * envelope("flat", 8, x.device)
            """,
    }
    assert _path_codes(tmp_path, files) == [("designs.py", 8, "DEV201"), ("run.py", 8, "DEV201")]
