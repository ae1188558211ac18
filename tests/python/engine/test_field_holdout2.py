"""False alarms of the second held-out field (bench/field_holdout2.txt, bench/field_review.md M20-M25),
each removed by modelling what torch really does, with a silent case and a variation still reported."""

from __future__ import annotations

from devflow.engine import analyze


def codes(src):
    return [(d.code, d.span.line) for d in analyze(src).diagnostics]


# -- M21: a tensor argument that gives only its shape, ops returning one result per input -----------

CONSTANT = """import torch
device = torch.device("cuda")

def constant(value, shape, device):
    tensor = torch.as_tensor(value, device=device)
    tensor, {second} = torch.broadcast_tensors(tensor, torch.empty(shape))
    return {ret}

c = constant(1.0, (4, 3), device)
"""


def test_broadcast_tensors_leaves_each_input_on_its_device():
    assert codes(CONSTANT.format(second="_", ret="tensor")) == []


def test_broadcast_tensors_results_still_meet_later():
    # the cpu result is used with the cuda one: reported where they meet
    assert codes(CONSTANT.format(second="cpu", ret="tensor + cpu")) == [("DEV201", 6)]


PENALTY = """import torch
device = torch.device("cuda")

def penalty(expert, policy):
    alpha = torch.rand(expert.size(0), 1)
    alpha = alpha.{shape_of}(expert){move}
    return alpha * expert + (1 - alpha) * policy

x = torch.randn(4, 3).to(device)
p = penalty(x, x)
"""


def test_shape_of_another_device_tensor_is_no_meeting():
    for method in ("expand_as", "view_as", "reshape_as"):
        assert codes(PENALTY.format(shape_of=method, move=".to(expert.device)")) == [], method


def test_shape_argument_result_stays_on_the_receiver_device():
    # without the move the cpu `alpha` meets the cuda `expert` in the arithmetic
    assert codes(PENALTY.format(shape_of="expand_as", move="")) == [("DEV201", 5)]
