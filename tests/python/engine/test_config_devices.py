"""Devices that come from configuration, without any rule about parameter names:
- a config library's attribute dict (yacs `CfgNode`, `EasyDict`, addict's `Dict`; the classes are generated
  from the wheels into frameworks.json `attribute_dicts`) keeps the entries the code stores in it; once the
  code merges it (`merge_from_file`, `merge_from_list(argv)`, `update(...)`), a default naming an accelerator
  is that key's symbolic accelerator and the other defaults are unknown (a branch on one is not decided);
- `"cuda:{}".format(i)` and `"cuda:" + str(i)` name a cuda device, as `f"cuda:{i}"` and `"cuda:%d" % i` do.
Each is checked renamed, split into files, one helper deeper, inside a trainer class, and with the
neighbours that must stay silent (a "cpu" default, a config never merged, code that moves its inputs)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def _defaults(device: str = "cuda", module: str = "yacs.config", cls: str = "CfgNode") -> str:
    return f"""
    from {module} import {cls} as CN

    _C = CN()
    _C.MODEL = CN()
    _C.MODEL.DEVICE = "{device}"
    _C.MODEL.PRETRAIN = "imagenet"
    _C.SOLVER = CN()
    _C.SOLVER.EPOCHS = 3
    """


TRAINER = """
import torch
from torch import nn


class Trainer:
    def __init__(self, cfg):
        self.device = cfg.MODEL.DEVICE
        self.model = nn.Linear(8, 2).to(self.device)

    def step(self):
        x = torch.randn(4, 8)
        return self.model(x)
"""

TRAIN = """
import sys

from config.defaults import _C as cfg
from engine.trainer import Trainer


def main():
    cfg.merge_from_list(sys.argv[1:])
    cfg.freeze()
    Trainer(cfg).step()


if __name__ == "__main__":
    main()
"""


def test_merged_yacs_default_is_the_accelerator_across_files(tmp_path):
    _project(tmp_path, {"config/__init__.py": "", "config/defaults.py": _defaults(), "engine/__init__.py": "",
                        "engine/trainer.py": TRAINER, "train.py": TRAIN})
    assert _codes(tmp_path, "engine/trainer.py") == [(11, "DEV201")]
    assert _codes(tmp_path, "train.py") == [(10, "DEV201")]  # shown at the call that leads to it


def test_renamed_and_one_helper_deeper(tmp_path):
    _project(tmp_path, {
        "settings.py": _defaults().replace("_C", "opts").replace("MODEL", "NET").replace("DEVICE", "WHERE"),
        "helpers.py": """
        import torch


        def noise_like(n):
            return torch.randn(n, 8)


        def place(net, where):
            return net.to(where)
        """,
        "run.py": """
        import sys

        from torch import nn

        from helpers import noise_like, place
        from settings import opts


        def go(o):
            net = place(nn.Linear(8, 2), o.NET.WHERE)
            return net(noise_like(4))


        o = opts
        o.merge_from_file(sys.argv[1])
        go(o)
        """})
    assert _codes(tmp_path, "run.py") == [(11, "DEV201")]


def test_easydict_updated_from_yaml(tmp_path):
    _project(tmp_path, {"run.py": """
        import sys

        import torch
        import yaml
        from easydict import EasyDict

        cfg = EasyDict({"device": "cuda:0", "train": {"lr": 0.1}})
        with open(sys.argv[1]) as f:
            cfg.update(yaml.safe_load(f))

        weights = torch.ones(10)
        logits = torch.randn(4, 10).to(cfg.device)
        loss = torch.nn.functional.cross_entropy(logits, torch.zeros(4, dtype=torch.long).to(cfg.device), weight=weights)
        """})
    assert _codes(tmp_path, "run.py") == [(11, "DEV201")]  # the class weights, made on the cpu


def test_merge_makes_other_defaults_unknown(tmp_path):
    """A branch on a merged default is not decided: the resume branch runs in some configuration."""
    resume = """
    import sys

    import torch
    from torch import nn

    from defaults import _C as cfg

    {merge}
    model = nn.Linear(8, 2)
    opt = torch.optim.Adam(model.parameters())
    if cfg.MODEL.PRETRAIN == "self":
        opt.load_state_dict(torch.load("opt.pth"))
    model.to(cfg.MODEL.DEVICE)
    """
    _project(tmp_path / "a", {"defaults.py": _defaults(), "train.py": resume.format(merge="cfg.merge_from_list(sys.argv[1:])")})
    assert [c for _, c in _codes(tmp_path / "a", "train.py")] == ["DEV302"]
    # never merged: the default ("imagenet") is the value, and the resume branch never runs
    _project(tmp_path / "b", {"defaults.py": _defaults(), "train.py": resume.format(merge="")})
    assert _codes(tmp_path / "b", "train.py") == []


def test_silent_neighbours(tmp_path):
    # a "cpu" default merged: the device is whatever the file says, unknown
    _project(tmp_path / "cpu", {"config/__init__.py": "", "config/defaults.py": _defaults("cpu"), "engine/__init__.py": "",
                                "engine/trainer.py": TRAINER, "train.py": TRAIN})
    assert _codes(tmp_path / "cpu", "engine/trainer.py") == []
    # the inputs are moved to the configured device
    moved = TRAINER.replace("torch.randn(4, 8)", "torch.randn(4, 8).to(self.device)")
    _project(tmp_path / "ok", {"config/__init__.py": "", "config/defaults.py": _defaults(), "engine/__init__.py": "",
                               "engine/trainer.py": moved, "train.py": TRAIN})
    assert _codes(tmp_path / "ok", "engine/trainer.py") == []
    # a dict whose keys are not attributes (a plain dict, attribute access is not its protocol): unknown
    _project(tmp_path / "plain", {"run.py": """
        import torch
        from torch import nn
        from mylib import Config

        cfg = Config()
        cfg.device = "cuda"
        cfg.load("x.yaml")
        net = nn.Linear(8, 2).to(cfg.device)
        net(torch.randn(4, 8))
        """})
    assert _codes(tmp_path / "plain", "run.py") == []


def test_parameter_named_device_is_not_a_device_by_name(tmp_path):
    """Only what a parameter is given decides its device: a function nobody calls with a known device
    stays silent whatever its parameter is called."""
    _project(tmp_path, {"lib.py": """
        import torch


        def evaluate(model, loader, device):
            model.to(device)
            for x in loader:
                mask = torch.ones(x.shape[0])
                model(x.to(device)) * mask
        """})
    assert _codes(tmp_path, "lib.py") == []


def test_formatted_cuda_strings(tmp_path):
    _project(tmp_path, {"gpu.py": """
        import torch


        def pick(gpu):
            return torch.device("cuda:{}".format(gpu))


        def pick_concat(gpu):
            return "cuda:" + str(gpu)
        """, "run.py": """
        import sys

        import torch
        from torch import nn

        from gpu import pick, pick_concat

        for where in (pick(sys.argv[1]), pick_concat(sys.argv[2])):
            net = nn.Linear(4, 2).to(where)
            net(torch.randn(3, 4))
        """, "quiet.py": """
        import sys

        import torch
        from torch import nn

        where = "{}:{}".format(sys.argv[1], sys.argv[2])
        net = nn.Linear(4, 2).to(where)
        net(torch.randn(3, 4))
        """})
    assert _codes(tmp_path, "run.py") == [(10, "DEV201")]
    assert _codes(tmp_path, "quiet.py") == []


def test_parameter_used_as_a_device_is_one_whatever_its_name(tmp_path):
    """What the function does with a parameter makes it a device: annotated `torch.device`, passed as
    `device=`, given to `torch.device(...)`; renamed, the finding stays."""
    body = """
    import torch


    def evaluate(model, loader, {sig}):
        {setup}
        for x in loader:
            mask = torch.ones(x.shape[0])
            out = x.to({p}) * mask
    """
    for name in ("device", "where", "d"):
        for sig, setup in ((f"{name}: torch.device", "pass"), (f"{name}: 'torch.device | None' = None", "pass"),
                           (name, f"model.to(device={name})"), (name, f"model.to(torch.device({name}))")):
            root = tmp_path / f"{name}{len(sig)}{len(setup)}"
            _project(root, {"lib.py": body.format(sig=sig, setup=setup, p=name)})
            assert _codes(root, "lib.py") == [(7, "DEV201")], (sig, setup)  # the mask, made on the cpu


def test_parameter_also_used_as_a_dtype_is_not_a_device(tmp_path):
    _project(tmp_path, {"lib.py": """
        import torch


        def cast(model, loader, kind):
            model.to(device=kind)
            for x in loader:
                mask = torch.ones(x.shape[0], dtype=kind)
                out = x.to(kind) * mask
        """})
    assert _codes(tmp_path, "lib.py") == []


def test_concatenated_rank_device_is_the_ranks_gpu(tmp_path):
    """`"cuda:" + str(local_rank)` is the rank's GPU, as `f"cuda:{local_rank}"` is: a tensor placed on the
    current device (`.cuda()`, never set_device) meets it on another GPU in every process but rank 0."""
    script = """
    import os

    import torch
    from torch import nn

    local_rank = int(os.environ["LOCAL_RANK"])
    {setdev}
    device = "cuda:" + str(local_rank)
    model = nn.Linear(4, 2).to(device)
    x = torch.randn(3, 4).cuda()
    model(x)
    """
    _project(tmp_path / "bug", {"run.py": script.format(setdev="")})
    assert _codes(tmp_path / "bug", "run.py") == [(10, "DEV202")]
    _project(tmp_path / "ok", {"run.py": script.format(setdev="torch.cuda.set_device(local_rank)")})
    assert _codes(tmp_path / "ok", "run.py") == []
