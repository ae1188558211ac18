"""torch.jit.save / torch.jit.load of TorchScript modules whose tensors are VirtualTensors.

The archive writer reads each tensor's memory, which a wrapper does not have: it is handed the real
data for the time of the save, and the virtual devices go into the archive as an extra file, so that
torch.jit.load puts the tensors back where a GPU run's archive would (cuda:N, or where map_location
says)."""

from __future__ import annotations

import json

import torch

from devflow.dryrun.vtensor import CPU, VirtualTensor

_plain = torch.utils._python_dispatch._disable_current_modes
_DEVICES = "devflow_dryrun_devices.json"
_orig: dict = {}


def _tensors(module):
    """(owner module, attribute name, qualified name, tensor) of every parameter and buffer."""
    for qual, sub in module.named_modules():
        for kind in (sub.named_parameters(recurse=False), sub.named_buffers(recurse=False)):
            for name, t in kind:
                if t is not None:
                    yield sub, name, f"{qual}.{name}" if qual else name, t


def _set(owner, name, t):
    if isinstance(owner, torch.jit.ScriptModule):
        owner._c.setattr(name, t)
    else:
        setattr(owner, name, t)


def _save(m, f, _extra_files=None, **kwargs):
    swapped, devices = [], {}
    if isinstance(m, torch.nn.Module):
        for owner, name, qual, t in list(_tensors(m)):
            if isinstance(t, VirtualTensor):
                devices[qual] = str(t.vdev)
                with _plain():  # under the dry run's mode, detach would wrap again
                    plain = t.elem.detach()
                    if isinstance(t, torch.nn.Parameter) or getattr(t, "_is_param", False):
                        plain = torch.nn.Parameter(plain, requires_grad=t.requires_grad)
                swapped.append((owner, name, t))
                _set(owner, name, plain)
    extra = dict(_extra_files or {})
    extra[_DEVICES] = json.dumps(devices)
    try:
        with _plain():
            return _orig["save"](m, f, _extra_files=extra, **kwargs)
    finally:
        for owner, name, t in swapped:
            _set(owner, name, t)


def _load(f, map_location=None, _extra_files=None, **kwargs):
    from devflow.dryrun.wrappers import _virtual_device

    extra = _extra_files if _extra_files is not None else {}
    extra.setdefault(_DEVICES, "")
    with _plain():
        m = _orig["load"](f, map_location="cpu", _extra_files=extra, **kwargs)
    devices = json.loads(extra.pop(_DEVICES) or "{}")
    for owner, name, qual, t in list(_tensors(m)):
        saved = devices.get(qual, "cpu")
        if map_location is None:
            dev = _virtual_device(saved)
        elif isinstance(map_location, dict):
            dev = _virtual_device(map_location.get(saved, saved))
        else:
            dev = _virtual_device(map_location)
        with _plain():
            data = t.detach()
        wrapped = VirtualTensor(data, dev if dev.type != "meta" else CPU)
        if isinstance(t, torch.nn.Parameter):
            wrapped = torch.nn.Parameter(wrapped, requires_grad=t.requires_grad)
        _set(owner, name, wrapped)
    return m


def install():
    _orig.update(save=torch.jit.save, load=torch.jit.load)
    torch.jit.save, torch.jit.load = _save, _load
