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


# -- M24: DEV103 for a plain list of modules that hold no parameters or buffers -----------------------

DECOMP = """import torch
import torch.nn as nn


class MovingAvg(nn.Module):
    def __init__(self, kernel_size, stride):
        super().__init__()
        self.kernel_size = kernel_size
        {state}

    def forward(self, x):
        front = x[:, 0:1, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        return self.avg(torch.cat([front, x], dim=1).permute(0, 2, 1)).permute(0, 2, 1)


class Decomp(nn.Module):
    def __init__(self, kernel_size):
        super(Decomp, self).__init__()
        self.moving_avg = MovingAvg(kernel_size, stride=1)

    def forward(self, x):
        mean = self.moving_avg(x)
        return x - mean, mean


class DecompMulti(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.decomps = [Decomp(k) for k in kernel_size]

    def forward(self, x):
        return [f(x) for f in self.decomps]


model = DecompMulti([3, 5]).to("cuda")
out = model(torch.randn(2, 8, 4, device="cuda"))
"""


def test_list_of_parameter_free_modules_is_not_reported():
    # pooling only, two classes deep: unregistered, nothing is left behind by the move
    assert codes(DECOMP.format(state="self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=0)")) == []


def test_list_of_modules_with_parameters_is_reported():
    assert codes(DECOMP.format(state="self.avg = nn.Conv1d(4, 4, kernel_size, stride=stride)")) == [("DEV103", 29)]
    assert codes(DECOMP.format(state="self.avg = nn.AvgPool1d(kernel_size)\n        self.scale = nn.Parameter(torch.ones(1))")) \
        == [("DEV103", 30)]
    assert codes(DECOMP.format(state="self.avg = nn.AvgPool1d(kernel_size)\n        self.register_buffer('w', torch.ones(1))")) \
        == [("DEV103", 30)]


def test_a_wrapper_of_a_given_module_may_hold_parameters():
    src = """import torch.nn as nn


class Wrap(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [Wrap(nn.Linear(4, 4)) for _ in range(2)]

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x
"""
    assert codes(src) == [("DEV103", 16)]


# -- M20: entries of a dict stored under a computed key -------------------------------------------------

MAKE_BATCH = """import numpy as np
import torch
import torch.nn as nn


def make_batch(image, mask, device):
    image = torch.from_numpy(image)
    mask = torch.from_numpy(mask)
    batch = {{"image": image, "mask": mask, "masked_image": (1 - mask) * image}}
    for k in batch:
        batch[k] = batch[k]{conversion}
        batch[k] = batch[k] * 2.0 - 1.0
    return batch


device = torch.device("cuda")
model = nn.Conv2d(3, 3, 1).to(device)
batch = make_batch(np.zeros((1, 3, 4, 4), np.float32), np.zeros((1, 1, 4, 4), np.float32), device)
c = model(batch["masked_image"])
"""


def test_entries_moved_under_a_computed_key_are_not_cpu_any_more():
    assert codes(MAKE_BATCH.format(conversion=".to(device=device)")) == []


def test_entries_converted_under_a_computed_key_keep_their_device():
    assert codes(MAKE_BATCH.format(conversion=".float()")) == [("DEV202", 8)]


# -- M22: a method torch.Tensor does not have, on a value of unknown kind that was moved -----------------

MOVED_UNKNOWN = """import torch
from torch_geometric.nn import RENet

device = torch.device("cuda")
model = RENet(10, 5, hidden_channels=200, seq_len=4).to(device)


def test(loader):
    result = torch.tensor([0, 0, 0, 0], dtype=torch.float)
    for data in loader:
        data = data.to(device)
        result += model.{call} * data.obj.size(0)
    return result
"""


def test_a_method_tensors_lack_proves_the_moved_value_is_no_tensor():
    # RENet.test() builds its result from `.item()` floats (cpu); decode() takes index tensors: unknown here
    assert codes(MOVED_UNKNOWN.format(call="test(data.log_prob, data.obj)")) == []
    assert codes(MOVED_UNKNOWN.format(call="decode(data.z, torch.arange(4))")) == []


def test_a_tensor_method_on_the_moved_value_still_meets_the_cpu_tensor():
    # `.matmul` is a Tensor method: if the moved value is a tensor, it is on cuda here (a value of unknown
    # kind: torch_geometric's RENet is a known module class, which has no `matmul`)
    unknown = MOVED_UNKNOWN.replace("from torch_geometric.nn import RENet", "from temporal_graphs import RENet")
    assert codes(unknown.format(call="matmul(torch.ones(4))")) == [("DEV201", 12)]


# -- M25: a module built after the move from the moved model's own tensors ---------------------------

SPLIT_BIAS = """import torch
import torch.nn as nn


class AddBias(nn.Module):
    def __init__(self, bias):
        super().__init__()
        self._bias = nn.Parameter({param})

    def forward(self, x):
        return x + self._bias.t().view(1, -1)


class SplitBias(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module
        self.add_bias = AddBias(module.bias.data)
        self.module.bias = None

    def forward(self, x):
        return self.add_bias(self.module(x))


def split_bias(module):
    for name, child in module.named_children():
        if hasattr(child, "bias") and child.bias is not None:
            module._modules[name] = SplitBias(child)
        else:
            split_bias(child)


device = torch.device("cuda")
policy = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
policy.to(device)
split_bias(policy)
"""


def test_a_parameter_made_from_the_moved_model_is_not_new_cpu_state():
    # KFAC's SplitBias: the child and `nn.Parameter(child.bias.data...)` already sit on the model's device
    assert codes(SPLIT_BIAS.format(param="bias.unsqueeze(1)")) == []


def test_a_new_cpu_parameter_in_the_wrapper_is_still_reported():
    assert codes(SPLIT_BIAS.format(param="torch.zeros(4, 1)")) == [("DEV102", 36)]


def test_a_module_kept_through_a_local_name_may_hold_parameters():
    src = """import torch.nn as nn
import torch.nn.functional as F


class Lin(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.Linear(4, 4)
        self.layer = layer

    def forward(self, x):
        return F.linear(x, self.layer.weight)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [Lin() for _ in range(2)]
"""
    assert codes(src) == [("DEV103", 18)]


# -- a generator call whose device= comes from a `**kwargs` spread (NVlabs/edm generate.py: an internal error) --

def test_generator_draw_with_device_from_a_spread():
    src = """import torch

class StackedRandomGenerator:
    def __init__(self, device, seeds):
        self.generators = [torch.Generator(device).manual_seed(int(s) % (1 << 32)) for s in seeds]

    def randn(self, size, **kwargs):
        return torch.stack([torch.randn(size[1:], generator=gen, **kwargs) for gen in self.generators])

rnd = StackedRandomGenerator(torch.device("cuda"), [0, 1])
a = rnd.randn([2, 3], device=torch.device("cuda"))
g = torch.Generator()
b = torch.randn(3, generator=g, **{"device": "cuda"})
"""
    result = analyze(src)
    assert not result.rule_errors, result.rule_errors
    # the cpu generator drawing for cuda (device= given through the spread) is still reported
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("DEV205", 13)]
