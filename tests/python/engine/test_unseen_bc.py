"""Semantics found missing on unseen real cases, batch BC (tests/fixtures/engine/unseen/bc_*): graph nets,
forecasting, reinforcement and meta-learning, knowledge-graph embeddings, self-supervised queues.

- `setattr(module, "name", nn.Parameter(...))` registers a parameter exactly as `module.name =
  nn.Parameter(...)` does (nn.Module.__setattr__ runs either way): the parameter moves with its module,
  so reading it back (`getattr(self, "W")` or `self.W`) after `model.cuda()` is on the module's device
  (GNN-for-text-classification's SimpleConv: no false DEV201). A plain tensor stored the same way stays
  where it was made."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_SETATTR_PARAM = """
import torch
import torch.nn as nn


class SimpleConv(nn.Module):
    def __init__(self, in_feats, out_feats):
        super().__init__()
        setattr(self, 'W', nn.Parameter(torch.randn(in_feats, out_feats)))

    def forward(self, feat):
        return feat.mm(getattr(self, 'W'))


model = SimpleConv(3, 4)
x = torch.randn(2, 3)
if torch.cuda.is_available():
    x = x.cuda()
    model = model.cuda()
model(x)
"""


def test_setattr_parameter_moves_with_its_module():
    assert _codes(_SETATTR_PARAM) == []


def test_setattr_parameter_read_as_attribute():
    assert _codes(_SETATTR_PARAM.replace("getattr(self, 'W')", "self.W")) == []


def test_setattr_parameter_with_dtype_conversion_and_renamed():
    src = _SETATTR_PARAM.replace("nn.Parameter(torch.randn(in_feats, out_feats))",
                                 "nn.Parameter(torch.randn(in_feats, out_feats)).float()").replace("'W'", "'weight_0'")
    assert _codes(src) == []


def test_setattr_parameter_inside_a_classifier_in_another_file(tmp_path):
    (tmp_path / "layers.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn


        class SimpleConv(nn.Module):
            def __init__(self, in_feats, out_feats):
                super().__init__()
                setattr(self, 'W', nn.Parameter(torch.randn(in_feats, out_feats)))

            def forward(self, feat):
                return feat.mm(getattr(self, 'W'))
        """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from layers import SimpleConv


        class Classifer(nn.Module):
            def __init__(self, conv):
                super().__init__()
                self.gcn1 = conv(3, 8)
                self.gcn2 = conv(8, 2)

            def forward(self, features):
                return self.gcn2(F.relu(self.gcn1(features)))


        model = Classifer(conv=SimpleConv)
        t_features = torch.randn(5, 3)
        if torch.cuda.is_available():
            t_features = t_features.cuda()
            model = model.cuda()
        logits = model(t_features)
        """))
    for name in ("main.py", "layers.py"):
        assert [d.code for d in check_path(str(tmp_path / name)).diagnostics] == [], name


def test_setattr_plain_tensor_in_another_file_is_reported(tmp_path):
    (tmp_path / "layers.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn


        class SimpleConv(nn.Module):
            def __init__(self, in_feats, out_feats):
                super().__init__()
                setattr(self, 'W', torch.randn(in_feats, out_feats))

            def forward(self, feat):
                return feat.mm(getattr(self, 'W'))
        """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import torch
        from layers import SimpleConv

        model = SimpleConv(3, 8)
        t = torch.randn(5, 3)
        if torch.cuda.is_available():
            t = t.cuda()
            model = model.cuda()
        model(t)
        """))
    found = [d.code for f in ("main.py", "layers.py") for d in check_path(str(tmp_path / f)).diagnostics]
    assert found and set(found) == {"DEV201"}


def test_setattr_plain_tensor_is_still_left_on_the_cpu():
    src = _SETATTR_PARAM.replace("nn.Parameter(torch.randn(in_feats, out_feats))", "torch.randn(in_feats, out_feats)")
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_setattr_parameter_module_never_moved_still_reported():
    src = _SETATTR_PARAM.replace("    model = model.cuda()\n", "")
    assert [c for _, c in _codes(src)] != []
