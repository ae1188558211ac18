"""`.to(dtype)` where the running function binds `dtype` only to `.dtype` attributes (`dtype =
self.encoder.conv1.weight.dtype`) changes the dtype only: the tensor stays where it is, as with
`.to(w.dtype)` written inline. So a cpu tensor converted that way still meets a moved model.

Silent neighbours: a name bound to an unknown value, a name also bound to something else, the tensor moved
to the device as well."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


SRC = """
    import torch
    from torch import nn


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv1d(80, 16, 3)

        def forward(self, x):
            return self.conv1(x)


    class Runner:
        def __init__(self):
            self.encoder = Encoder().to("cuda")

        def encode(self, features{param}):
            {bind}
            features = features.to({target})
            return self.encoder(features)


    def main():
        runner = Runner()
        feats = torch.randn(1, 80, 100)
        return runner.encode(feats)


    if __name__ == "__main__":
        main()
"""


def _src(param="", bind="dtype = self.encoder.conv1.weight.dtype", target="dtype"):
    return SRC.format(param=param, bind=bind, target=target)


def test_a_name_bound_to_a_weight_dtype_keeps_the_device(tmp_path):
    _project(tmp_path, {"run.py": _src()})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV201"]


def test_a_name_bound_to_an_unknown_value_is_silent(tmp_path):
    _project(tmp_path, {"run.py": _src(bind="dtype = pick_target(features)")})
    assert _codes(tmp_path, "run.py") == []


def test_a_name_also_bound_to_a_device_is_silent(tmp_path):
    _project(tmp_path, {"run.py": _src(bind="dtype = self.encoder.conv1.weight.dtype\n        if features.dim() == 2:\n"
                                           "            dtype = torch.device('cuda')")})
    assert _codes(tmp_path, "run.py") == []


def test_moved_with_its_dtype_is_silent(tmp_path):
    _project(tmp_path, {"run.py": _src(target="'cuda', dtype")})
    assert _codes(tmp_path, "run.py") == []
