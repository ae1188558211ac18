"""argparse options are devices by their default's value, never by their name (issue 10, stop 15)."""

from __future__ import annotations

import pytest

from project_fixtures import codes, write_project

_TRAIN = """
    import argparse
    import torch
    import torch.nn as nn

    p = argparse.ArgumentParser()
    p.add_argument({flag}, default={default})
    args = p.parse_args()
    model = nn.Linear(4, 2).to(args.{dest})
    x = torch.rand(3, 4)
    print(model(x))
    """


@pytest.mark.parametrize("flag,dest", [('"--device"', "device"), ('"--accel"', "accel"), ('"-g", "--gpu"', "gpu")])
@pytest.mark.parametrize("default", ['"cuda"', '"cuda:1"', 'torch.device("cuda")'])
def test_option_defaulting_to_an_accelerator_is_one_whatever_its_name(tmp_path, flag, dest, default):
    write_project(tmp_path, {"train.py": _TRAIN.format(flag=flag, dest=dest, default=default)})
    assert codes(tmp_path, "train.py") == [(9, "DEV201")]


@pytest.mark.parametrize("default", ["None", '"cpu"', '""'])
def test_option_named_device_without_an_accelerator_default_stays_unknown(tmp_path, default):
    # `--device` with no default (or the cpu) says nothing about where the model runs: silent
    write_project(tmp_path, {"train.py": _TRAIN.format(flag='"--device"', dest="device", default=default)})
    assert codes(tmp_path, "train.py") == []
