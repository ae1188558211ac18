"""Python and torch semantics the engine models (found missing on unseen cases, batch A):

- a lambda is a function: called, it evaluates its body (`cast = lambda x: Tensor(x).cuda()`,
  `self.out_fn = lambda x: x`, `fn = lambda m: m.cuda(); a.policy = fn(a.policy)`);
- an element of a list known only by its element value (a comprehension) is that value;
- `type(t)` of a tensor is `torch.Tensor`, whose (legacy) constructor builds on the cpu, also with
  `*sizes`; `torch.autograd.Variable(t)` is `t`."""

from __future__ import annotations

from devflow.engine import analyze


def codes(src):
    return [(d.code, d.span.line) for d in analyze(src).diagnostics]


HEAD = """import numpy as np
import torch
import torch.nn as nn
from torch import Tensor
from torch.autograd import Variable
"""


def test_lambda_result_is_its_body():
    src = HEAD + """
def run():
    to_gpu = lambda x: x.cuda()
    a = to_gpu(torch.zeros(3))
    return a + torch.ones(3, 3)


run()
"""
    assert codes(src) == [("DEV201", 10)]


def test_lambda_identity_keeps_the_device():
    src = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.out_fn = lambda x: x

    def forward(self, x):
        return self.out_fn(self.fc(x)) + torch.ones(2, 3)


net = Net().cuda()
y = net(torch.randn(2, 4).cuda())
"""
    assert codes(src) == [("DEV201", 14)]


def test_lambda_moving_a_module_moves_it():
    src = HEAD + """
fn = lambda m: m.cuda()
net = fn(nn.Linear(4, 3))
y = net(torch.randn(2, 4))
"""
    assert codes(src) == [("DEV201", 9)]


def test_comprehension_element_by_index():
    src = HEAD + """
def sample(buf):
    cast = lambda x: Variable(Tensor(x), requires_grad=False).cuda()
    return [cast(b) for b in buf], [cast(b) for b in buf]


obs, acs = sample([np.zeros((3, 3))])
y = obs[0] + torch.ones(3, 3)
"""
    assert codes(src) == [("DEV201", 13)]


def test_comprehension_element_moved_back_is_clean():
    src = HEAD + """
xs = [torch.zeros(3).cuda() for _ in range(2)]
ys = [x.cpu() for x in xs]
y = ys[0] + torch.ones(3, 3)
"""
    assert codes(src) == []


def test_type_of_a_tensor_builds_on_the_cpu():
    src = HEAD + """
def sample_gumbel(shape, eps=1e-20, tens_type=torch.FloatTensor):
    U = Variable(tens_type(*shape).uniform_(), requires_grad=False)
    return -torch.log(-torch.log(U + eps) + eps)


def run(x):
    logits = nn.Linear(4, 5).cuda()(x.cuda())
    return logits + sample_gumbel(logits.shape, tens_type=type(logits.data))


run(torch.randn(3, 4))
"""
    assert codes(src) == [("DEV201", 8)]


def test_sample_moved_to_the_logits_is_clean():
    src = HEAD + """
def run(x):
    logits = nn.Linear(4, 5).cuda()(x.cuda())
    return logits + type(logits.data)(*logits.shape).uniform_().to(logits.device)


run(torch.randn(3, 4))
"""
    assert codes(src) == []


def test_lambda_of_unknown_result_stays_silent():
    src = HEAD + """
import some_lib

cast = lambda x: some_lib.convert(x)
y = cast(torch.zeros(3)) + torch.ones(3, 3).cuda()
"""
    assert codes(src) == []
