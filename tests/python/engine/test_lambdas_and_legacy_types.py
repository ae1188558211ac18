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


MIXED = HEAD + """
OPS = [
    lambda C: nn.Identity(),
    lambda C: nn.Conv2d(C, C, 3, padding=1),
    lambda C: nn.MaxPool2d(3, stride=1, padding=1),
]


class MixedOp(nn.Module):
    def __init__(self, C):
        super().__init__()
        self._ops = nn.ModuleList([op(C) for op in OPS])

    def forward(self, x):
        return sum(op(x) for op in self._ops) + torch.zeros(1, 4, 8, 8{device})


m = MixedOp(4).cuda()
y = m(torch.randn(1, 4, 8, 8).cuda())
"""


def test_comprehension_over_unlike_modules_runs_each_forward():
    # `op` is each of three unlike modules in turn: each forward runs, and their sum is on cuda
    assert codes(MIXED.format(device="")) == [("DEV201", 20)]


def test_comprehension_over_unlike_modules_clean_when_created_on_the_input_device():
    assert codes(MIXED.format(device=", device=x.device")) == []


def test_zip_with_a_known_list_pairs_each_element():
    src = HEAD + """
fns = [lambda t: t.cuda(), lambda t: t.cuda()]
outs = [f(t) for f, t in zip(fns, [torch.zeros(3), torch.ones(3)])]
y = outs[1] + torch.ones(3, 3)
"""
    assert codes(src) == [("DEV201", 9)]


RESUME = HEAD + """
def load_epoch(path, model, optm):
    checkpoint = torch.load(path, map_location=lambda storage, loc: storage)
    model.load_state_dict(checkpoint["state_dict"])
    optm.load_state_dict(checkpoint["opt_dict"])


def train(path, device):
    model = nn.Linear(4, 3)
    optm = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    load_epoch(path, model, optm)
    model.to(device)
{after}
    for x, y in torch.load("data.pt", map_location="cpu"):
        optm.zero_grad()
        nn.functional.mse_loss(model(x.to(device)), y.to(device)).backward()
        optm.step()


train("epoch-3.pth.tar", torch.device("cuda"))
"""


def test_resume_before_move_is_reported_at_the_load():
    assert codes(RESUME.format(after="")) == [("DEV302", 10)]


def test_state_moved_after_the_model_is_clean():
    loop = ("    for state in optm.state.values():\n"
            "        for k, v in state.items():\n"
            "            if isinstance(v, torch.Tensor):\n"
            "                state[k] = v.to(device)\n")
    assert codes(RESUME.format(after=loop)) == []


TYPED = HEAD + """
cuda = True if torch.cuda.is_available() else False
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
net = nn.Linear(4, 3).cuda()
imgs = torch.randn(2, 4)
{line}
"""


def test_type_with_a_class_chosen_at_run_time_is_unknown():
    # `imgs.type(Tensor)` may move the batch to cuda: nothing is known, nothing reported
    assert codes(TYPED.format(line="out = net(Variable(imgs.type(Tensor)))")) == []


def test_type_with_a_cuda_class_moves_and_a_dtype_keeps():
    assert codes(TYPED.format(line="out = net(imgs.type(torch.cuda.FloatTensor))")) == []
    assert [c for c, _ in codes(TYPED.format(line="out = net(imgs.type(torch.float32))"))] == ["DEV201"]
    assert [c for c, _ in codes(TYPED.format(line="out = net(imgs.cuda().type('torch.FloatTensor'))"))] == ["DEV202"]


DECORATED = HEAD + """
def add_helpers(cls):
    def run_twice(self, x):
        return self(x) + self(x)

    setattr(cls, "run_twice", run_twice)
    return cls


@add_helpers
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


net = Net().cuda()
y = net.run_twice(torch.randn(2, 4){move})
"""


def test_method_a_class_decorator_sets_is_called():
    assert [c for c, _ in codes(DECORATED.format(move=""))] == ["DEV201"]


def test_method_a_class_decorator_sets_clean_input():
    assert codes(DECORATED.format(move=".cuda()")) == []


LOOPED = HEAD + """
OPS = [
    lambda C: nn.Identity(),
    lambda C: nn.Conv2d(C, C, 3, padding=1),
]


class MixedOp(nn.Module):
    def __init__(self, C):
        super().__init__()
        self._ops = nn.ModuleList()
        for op in OPS:
            self._ops.append(op(C))

    def forward(self, x):
        out = 0
        for {loop}:
            out = out + op(x)
        return out + torch.zeros(1, 4, 8, 8{device})


m = MixedOp(4).cuda()
y = m(torch.randn(1, 4, 8, 8).cuda())
"""


def test_for_loop_over_unlike_modules_runs_each_forward():
    assert [c for c, _ in codes(LOOPED.format(device="", loop="op in self._ops"))] == ["DEV201"]


def test_for_loop_over_unlike_modules_clean():
    assert codes(LOOPED.format(device=", device=x.device", loop="op in self._ops")) == []


def test_for_loop_zipped_with_a_tensor_of_unknown_length_may_not_run():
    # zip(weights, ops) is empty when weights is: `out` may still be the int 0 after the loop
    assert codes(LOOPED.format(device="", loop="w, op in zip(torch.ones(2).cuda(), self._ops)")) == []


def test_for_loop_with_break_keeps_one_pass():
    src = HEAD + """
fns = [lambda t: t.cuda(), lambda t: t]
for f in fns:
    y = f(torch.zeros(3))
    if y.sum() > 0:
        break
z = y + torch.ones(3, 3)
"""
    assert codes(src) == []  # which function ran last is not known: silent


def test_type_with_another_tensors_dtype_keeps_the_device():
    assert [c for c, _ in codes(TYPED.format(line="out = net(imgs.type(net.weight.dtype))"))] == ["DEV201"]
