"""The device check of torch's RNN functions (`_VF.lstm / gru / rnn_tanh / rnn_relu`, what nn.LSTM,
nn.GRU and nn.RNN call). It runs in C++ before any aten op, on real devices, which under the dry run
are all the cpu: here it runs on the virtual ones, with CUDA's words (*Input and hidden tensors are
not at the same device, found input tensor at cuda:0 and hidden tensor at cpu*). After the finding the
call goes on with the stray tensors on the input's device, as after the fix."""

from __future__ import annotations

import torch

from devflow.dryrun import recorder
from devflow.dryrun.vtensor import vdevice

_VF = torch._C._VariableFunctions


def _fields(args):
    """(input, hidden tensors, parameter list, index of hx in args) for both forms: (input, hx,
    params, has_biases, ...) and the packed (data, batch_sizes, hx, params, ...)."""
    packed = len(args) > 3 and not isinstance(args[3], bool)
    at = 2 if packed else 1
    hx = args[at]
    hiddens = list(hx) if isinstance(hx, (tuple, list)) else [hx]
    return args[0], hiddens, list(args[at + 1]), at


def _moved(t, dev):
    return t.to(dev) if isinstance(t, torch.Tensor) and vdevice(t) != dev else t


def checked(args, kwargs) -> tuple:
    """The arguments to call with: the program's, or after a finding those with the fix applied."""
    if kwargs or len(args) < 4 or not isinstance(args[0], torch.Tensor):
        return args
    inp, hiddens, params, at = _fields(args)
    dev = vdevice(inp)
    for name, group in (("hidden", hiddens), ("parameter", params)):
        odd = next((t for t in group if isinstance(t, torch.Tensor) and vdevice(t) != dev), None)
        if odd is not None:
            recorder.record_error(
                "DEV901", f"Input and {name} tensors are not at the same device, found input tensor at {dev} and "
                f"{name} tensor at {vdevice(odd)}", "RuntimeError", [inp, odd])
            break
    else:
        return args
    args = list(args)
    hx = args[at]
    args[at] = type(hx)(_moved(h, dev) for h in hx) if isinstance(hx, (tuple, list)) else _moved(hx, dev)
    args[at + 1] = [_moved(p, dev) for p in args[at + 1]]
    return tuple(args)


CHECKED = frozenset((_VF.lstm, _VF.gru, _VF.rnn_tanh, _VF.rnn_relu))
