"""Semantics found missing on unseen real cases, batch BQ (tests/fixtures/engine/unseen/bq_*): applications
(samplers and schedulers, graph batches, cameras and renderers).

- A device given as a non-negative int is the CUDA device of that index: `torch.device(0)` is cuda:0, and so
  is `device=0` of a factory or `.to(0)` of a tensor (torch reads a bare ordinal as the current accelerator's
  device). PyTorch3D's issue shows `device = torch.device(0)` for the GPU whose tensors meet the cameras that
  `cameras_from_opencv_projection` left on the cpu (their constructor's default `device="cpu"`). An ordinal
  whose value is not known (`torch.device(args.gpu)`) stays an unknown device, as before.
- The parts `torch.stack` / `torch.cat` join must share a device, with no exception for a 0-dim cpu tensor (the
  exception elementwise ops make): diffusers' UniPC scheduler keeps `self.sigmas` on the cpu, so the step
  ratios `rk` it derives are 0-dim cpu tensors, stacked with `torch.ones((), device=device)` on the GPU. A named
  list's items count one by one when all of them are known (built by literal, append / extend / insert, none
  replaced, popped or deleted since) and each is a tensor; otherwise the list stays one joined value.
- `t.get_device()` is the tensor's device ordinal: -1 on the cpu, else its GPU's index, which `.to(i)` reads back
  as that device. MMGeneration's `get_module_device` returns `next(module.parameters()).get_device()` when the
  parameters are on cuda, and the timesteps moved there index a numpy schedule made a cpu tensor.
- A same-file function given a tensor the object holds (`self.sigmas[si]`), which an explicit move put on the
  cpu, and returning only what it computed from it (`return 1 - sigma, sigma`), does not choose its result's
  device: the result keeps the origin of the move, so the finding is anchored at `self.sigmas.to("cpu")`, not
  at the call (interp/passthrough.py). A helper that makes or moves the tensor it returns, or one given a
  value computed at the call, is still where its caller is told about."""

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


# --- an int device ordinal --------------------------------------------------------------------------------------

_ORDINAL = """
    import torch


    def main():
        device = torch.device(0)
        R = torch.eye(3, device=device)[None]
        pts = torch.rand(1, 5, 3)
        return pts.bmm(R)


    if __name__ == "__main__":
        main()
"""


def test_torch_device_of_an_int_is_that_cuda_device():
    assert _codes(_ORDINAL) == [(8, "DEV201")]


def test_ordinal_renamed_and_given_as_a_keyword():
    src = """
        import torch

        gpu = torch.device(index=0, type="cuda") if False else torch.device(1)
        weights = torch.ones(4, device=gpu)
        bias = torch.zeros(4)
        print(weights + bias)
    """
    assert _codes(src) == [(6, "DEV201")]


def test_device_keyword_given_an_int():
    src = """
        import torch

        table = torch.arange(10, device=0)
        idx = torch.randint(0, 10, (4,))
        print(table.float() * torch.ones(10))
    """
    assert _codes(src) == [(6, "DEV201")]


def test_to_an_int_moves_to_that_gpu():
    src = """
        import torch

        x = torch.randn(4, 4).to(0)
        w = torch.randn(4, 4)
        print(x @ w)
    """
    assert _codes(src) == [(5, "DEV201")]


def test_ordinal_one_helper_deeper_inside_a_class():
    src = """
        import torch


        def pick(i):
            return torch.device(i)


        class Renderer:
            def __init__(self):
                self.device = pick(0)
                self.K = torch.eye(3, device=self.device)

            def project(self, pts):
                return pts @ self.K


        r = Renderer()
        print(r.project(torch.rand(5, 3)))
    """
    assert _codes(src) == [(19, "DEV201")]


def test_cameras_left_on_their_default_cpu_split_into_files(tmp_path):
    files = {
        "cams/__init__.py": "from .cameras import Cameras, from_opencv\n",
        "cams/cameras.py": """
            import torch


            class Cameras:
                def __init__(self, R=None, device="cpu"):
                    self.device = torch.device(device) if isinstance(device, str) else device
                    self.R = R.to(device=self.device)

                def transform_points(self, points):
                    return points.bmm(self.R)


            def from_opencv(R):
                return Cameras(R=R.clone().permute(0, 2, 1))
        """,
        "project.py": """
            import torch

            from cams import from_opencv


            def main():
                device = torch.device(0)
                R = torch.eye(3, device=device)[None]
                cameras = from_opencv(R)
                pts = torch.rand(1, 10, 3, device=device)
                return cameras.transform_points(pts)


            if __name__ == "__main__":
                main()
        """,
    }
    assert _path_codes(tmp_path, files) == [("cams/cameras.py", 8, "DEV202"), ("project.py", 12, "DEV202")]


# --- silent twins ------------------------------------------------------------------------------------------------


def test_ordinal_on_both_sides_is_silent():
    src = """
        import torch

        device = torch.device(0)
        a = torch.ones(3, device=device)
        b = torch.zeros(3, device=0)
        c = torch.randn(3).to(0)
        print(a + b + c)
    """
    assert _codes(src) == []


def test_ordinal_from_the_command_line_stays_unknown():
    src = """
        import argparse
        import torch

        parser = argparse.ArgumentParser()
        parser.add_argument("--gpu", type=int, default=0)
        args = parser.parse_args()
        device = torch.device(args.gpu)
        a = torch.ones(3, device=device)
        print(a + torch.ones(3).to(args.gpu))
    """
    assert _codes(src) == []


def test_cameras_given_the_points_device_are_silent(tmp_path):
    files = {
        "cams.py": """
            import torch


            class Cameras:
                def __init__(self, R=None, device="cpu"):
                    self.device = torch.device(device) if isinstance(device, str) else device
                    self.R = R.to(device=self.device)

                def transform_points(self, points):
                    return points.bmm(self.R)


            def from_opencv(R):
                return Cameras(R=R.clone(), device=R.device)
        """,
        "project.py": """
            import torch

            from cams import from_opencv

            device = torch.device(0)
            R = torch.eye(3, device=device)[None]
            print(from_opencv(R).transform_points(torch.rand(1, 10, 3, device=device)))
        """,
    }
    assert _path_codes(tmp_path, files) == []


# --- the parts of a join --------------------------------------------------------------------------------------

_SCHEDULER = """
    import torch


    class Scheduler:
        def set_timesteps(self, n, device=None):
            self.sigmas = torch.linspace(1, 0, n + 1)
            self.timesteps = (self.sigmas[:-1] * 1000).to(device)
            self.sigmas = self.sigmas.to("cpu")

        def step(self, sample, index, order=3):
            h = self.sigmas[index + 1] - self.sigmas[index]
            rks = []
            for i in range(1, order):
                rk = (self.sigmas[index - i] - self.sigmas[index]) / h
                rks.append(rk)
            rks.append(torch.ones((), device=sample.device))
            rks = torch.stack(rks)
            return sample * rks.sum()


    device = torch.device("cuda")
    s = Scheduler()
    s.set_timesteps(10, device=device)
    print(s.step(torch.randn(2, 4, device=device), 5))
"""


def test_stacked_0dim_cpu_ratios_with_a_cuda_one():
    assert _codes(_SCHEDULER) == [(9, "DEV202")]  # the move to the cpu


def test_literal_stack_of_a_0dim_cpu_and_a_cuda_tensor():
    src = """
        import torch

        device = torch.device("cuda")
        table = torch.linspace(0, 1, 10)
        first = table[0]
        last = torch.zeros((), device=device)
        print(torch.stack([first, last]))
    """
    assert _codes(src) == [(5, "DEV201")]  # the schedule made on the cpu


def test_cat_of_parts_appended_in_a_helper_one_deeper():
    src = """
        import torch


        def parts(table, device):
            out = []
            out.append(table.sum())
            out.append(torch.ones((), device=device))
            return out


        device = torch.device("cuda")
        print(torch.stack(parts(torch.arange(5.0), device)))
    """
    assert [c for _, c in _codes(src)] and all(c.startswith("DEV2") for _, c in _codes(src))


def test_fixed_scheduler_keeping_sigmas_on_the_device_is_silent():
    assert _codes(_SCHEDULER.replace('self.sigmas.to("cpu")', "self.sigmas.to(device)")) == []


def test_elementwise_ops_with_a_0dim_cpu_tensor_stay_silent():
    src = """
        import torch

        device = torch.device("cuda")
        table = torch.linspace(0, 1, 10)
        x = torch.randn(4, device=device)
        y = x * table[3] + table[2]
        print(torch.stack([y, x]))
    """
    assert _codes(src) == []


def test_replaced_or_popped_items_keep_the_list_joined():
    src = """
        import torch

        device = torch.device("cuda")
        table = torch.linspace(0, 1, 10)
        parts = [table[0], torch.ones((), device=device)]
        parts[0] = parts[0].to(device)
        print(torch.stack(parts))
        more = [table[1], torch.ones((), device=device)]
        more.pop(0)
        print(torch.stack(more))
    """
    assert _codes(src) == []


# --- a device ordinal read off a tensor ---------------------------------------------------------------------------

_MODULE_DEVICE = """
    import numpy as np
    import torch
    import torch.nn as nn


    def get_module_device(module):
        if next(module.parameters()).is_cuda:
            return next(module.parameters()).get_device()
        return "cpu"


    class Diffusion(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(4, 4)
            self.sqrt_alphas_bar = np.linspace(1, 0, 1000)

        def q_sample(self, x_0, t):
            return x_0 * torch.from_numpy(self.sqrt_alphas_bar)[t].float()[:, None]

        def train_step(self, x_0):
            t = torch.from_numpy(np.random.choice(1000, size=(x_0.shape[0],)))
            t = t.to(get_module_device(self))
            return self.q_sample(x_0, t)


    model = Diffusion().cuda()
    print(model.train_step(torch.randn(8, 4).cuda()))
"""


def test_timesteps_moved_to_the_module_ordinal_index_a_cpu_schedule():
    assert _codes(_MODULE_DEVICE) == [(20, "DEV204")]


def test_get_device_renamed_inside_a_helper_split_into_files(tmp_path):
    files = {
        "common.py": """
            def device_of(module):
                p = next(module.parameters())
                return p.get_device() if p.is_cuda else "cpu"
        """,
        "train.py": """
            import torch
            import torch.nn as nn

            from common import device_of

            net = nn.Linear(3, 3).to("cuda:1")
            idx = torch.randint(0, 10, (4,)).to(device_of(net))
            table = torch.linspace(0, 1, 10)
            print(table[idx])
        """,
    }
    assert _path_codes(tmp_path, files) == [("train.py", 10, "DEV204")]


def test_schedule_indexed_with_cpu_timesteps_is_silent():
    assert _codes(_MODULE_DEVICE.replace("[t].float()", "[t.cpu()].float().to(x_0.device)")) == []


def test_module_left_on_the_cpu_gives_the_cpu_branch():
    assert _codes(_MODULE_DEVICE.replace("Diffusion().cuda()", "Diffusion()").replace(
        "torch.randn(8, 4).cuda()", "torch.randn(8, 4)")) == []


def test_get_device_of_a_tensor_of_unknown_device_stays_unknown():
    src = """
        import torch

        def run(x):
            table = torch.linspace(0, 1, 10)
            idx = torch.randint(0, 10, (4,)).to(x.get_device())
            return table[idx]

        run(load_input())
    """
    assert _codes(src) == []


# --- a helper that passes an object's cpu state through -----------------------------------------------------

_PASSTHROUGH = """
    import torch


    class Sampler:
        def set_timesteps(self, n, device):
            self.sigmas = torch.linspace(1, 0, n + 1, device=device)
            self.sigmas = self.sigmas.to("cpu")

        def to_alpha_sigma(self, sigma):
            return 1 - sigma, sigma

        def ratios(self, sample, i):
            alpha, sigma = self.to_alpha_sigma(self.sigmas[i])
            parts = [alpha / sigma, torch.ones((), device=sample.device)]
            return torch.stack(parts)


    device = torch.device("cuda")
    s = Sampler()
    s.set_timesteps(8, device)
    print(s.ratios(torch.randn(2, device=device), 3))
"""


def test_state_passed_through_a_helper_keeps_the_origin_of_its_move():
    assert _codes(_PASSTHROUGH) == [(8, "DEV202")]  # the move to the cpu, not the helper call


def test_helper_that_makes_the_tensor_is_still_the_anchor():
    src = """
        import torch


        def make(n):
            return torch.ones(n)


        device = torch.device("cuda")
        x = torch.randn(3, device=device)
        y = make(3)
        print(x + y)
    """
    assert _codes(src) == [(11, "DEV202")]  # the call that returned it


def test_passthrough_fixed_is_silent():
    assert _codes(_PASSTHROUGH.replace('self.sigmas.to("cpu")', "self.sigmas.to(device)")) == []
