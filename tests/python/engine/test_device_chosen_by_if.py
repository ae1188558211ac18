"""`if opt.use_gpu: device = torch.device("cuda:0") else: device = torch.device("cpu")` is the statement form of
`"cuda:0" if opt.use_gpu else "cpu"`: the accelerator the flag picks, one device for everything placed on that
name (found missing on a rewrite of a batch C case: the same resume bug with the device chosen by a flag)."""

from __future__ import annotations

import textwrap

from devflow.api import check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def test_device_chosen_by_a_flag_is_the_accelerator():
    assert _codes("""
        import torch
        import torch.nn as nn

        def main(use_gpu, path):
            if use_gpu:
                device = torch.device("cuda:0")
            else:
                device = "cpu"
            model = nn.Linear(4, 2)
            optimizer = torch.optim.Adam(model.parameters())
            ckpt = torch.load(path, map_location="cpu")
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            model.to(device)
            x = torch.randn(3, 4)
            return model(x)
        """) == [(14, "DEV302"), (16, "DEV201")]


def test_everything_placed_on_the_chosen_device_agrees():
    assert _codes("""
        import torch
        import torch.nn as nn

        def main(use_gpu):
            if use_gpu:
                device = torch.device("cuda")
            else:
                device = torch.device("cpu")
            model = nn.Linear(4, 2).to(device)
            x = torch.randn(3, 4).to(device)
            h = torch.zeros(3, 2, device=device)
            return model(x) + h
        """) == []


def test_two_gpus_or_one_branch_only_stay_as_they_were():
    # no cpu side: not a cpu-fallback choice; assigned on one branch only: unknown
    assert _codes("""
        import torch
        import torch.nn as nn

        def main(flag, device):
            if flag:
                dev = "cuda:1"
            else:
                dev = "cuda:0"
            if flag:
                device = "cuda"
            model = nn.Linear(4, 2).to(dev)
            other = nn.Linear(4, 2).to(device)
            x = torch.randn(3, 4)
            return model(x.to(device)), other(x.to(dev))
        """) == []
