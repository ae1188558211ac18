"""Two pieces of Python the engine models (found missing on unseen cases, batch A):

- `d = f"cuda:{i}" if gpus else "cpu"`: a choice between a device *value* and a device *string* is
  the chosen device (symbolic, the accelerator when there is one), as a choice of two strings is.
- `kw["weight"] = w; F.cross_entropy(x, y, **kw)`: the entries of a `**mapping` whose keys are known
  are keyword arguments of the call like written ones; an unknown mapping stays silent."""

from __future__ import annotations

import pytest

from devflow.engine import analyze


def codes(src):
    return [(d.code, d.span.line) for d in analyze(src).diagnostics]


CHOICE = """import torch
import torch.nn as nn


def run(x, gpus=(0,)):
    device = {choice}
    model = nn.Linear(4, 3).to(device)
    out = model(x.to(device))
    return out + torch.ones(3, 3)
"""


@pytest.mark.parametrize("choice", [
    'f"cuda:{gpus[0]}" if gpus else "cpu"',
    '"cpu" if not gpus else f"cuda:{gpus[0]}"',
    'torch.device("cuda", gpus[0]) if gpus else "cpu"',
    '"cuda:0" if gpus else "cpu"',
])
def test_choice_of_device_value_and_string_is_the_chosen_device(choice):
    assert codes(CHOICE.format(choice=choice)) == [("DEV201", 9)]


@pytest.mark.parametrize("choice", [
    'f"cuda:{gpus[0]}" if gpus else gpus[1]',  # one branch is not a device: unknown
    '"cpu" if gpus else "cpu"',  # the same device either way
])
def test_choice_that_names_no_two_devices_stays_unknown_or_cpu(choice):
    assert codes(CHOICE.format(choice=choice)) == []


SPREAD = """import torch
import torch.nn.functional as F


def loss(score, label, **kwargs):
{body}
    return F.cross_entropy(score, label, **kwargs)


def main(x, y):
    return loss(x.cuda(), y.cuda())


main(torch.randn(2, 3), torch.tensor([0, 1]))
"""


def test_known_mapping_entry_is_a_keyword_argument():
    src = SPREAD.format(body='    kwargs["weight"] = torch.ones(3)')
    assert codes(src) == [("DEV201", 6)]


def test_known_mapping_entry_moved_to_the_input_is_clean():
    src = SPREAD.format(body='    kwargs["weight"] = torch.ones(3).to(score.device)')
    assert codes(src) == []


def test_dict_literal_spread_and_helper_class_attribute():
    src = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Loss(nn.Module):
    def __init__(self, class_weight):
        super().__init__()
        self.class_weight = torch.Tensor(class_weight)

    def forward(self, score, label, **kwargs):
        kwargs["weight"] = self.class_weight
        return F.cross_entropy(score, label, **kwargs)


crit = Loss([1.0, 2.0, 3.0]).cuda()
out = crit(torch.randn(2, 3).cuda(), torch.tensor([0, 1]).cuda())
"""
    assert ("DEV201", 9) in codes(src)


def test_unknown_mapping_stays_silent():
    src = """import torch
import torch.nn.functional as F


def loss(score, label, opts):
    return F.cross_entropy(score, label, **opts)


loss(torch.randn(2, 3).cuda(), torch.tensor([0, 1]).cuda(), {})
"""
    assert codes(src) == []
