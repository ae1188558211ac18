"""A module's method called through another name: `getattr(self, name)(x)`, `layer = getattr(self, name); layer(x)`
(timm's ResNet / SENet feature loops, transformers' modeling_utils), `move = getattr(model, "to"); move(device)`.
The call has no `receiver.method` text; the analysis must go on (it once raised and lost the whole file)."""

from __future__ import annotations

import textwrap

from devflow import engine


def _analyze(src: str):
    return engine.analyze(textwrap.dedent(src), "t.py")


_FEATURES = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            for i in range(1, 3):
                self.add_module(f"layer{i}", nn.Linear(4, 4))

        def forward_intermediates(self, x):
            out = []
            for n in ("layer1", "layer2"):
                CALL
                out.append(x)
            return out
"""


def test_a_layer_named_at_run_time_and_called():
    for call in ("layer = getattr(self, n)\\n            x = layer(x)", "x = getattr(self, n)(x)"):
        r = _analyze(_FEATURES.replace("CALL", call.replace("\\n", "\n")))
        assert r.rule_errors == [], call


def test_a_mover_bound_by_getattr_moves_the_model():
    r = _analyze("""
        import torch
        from torch import nn


        def main():
            device = torch.device("cuda")
            model = nn.Linear(4, 1)
            move = getattr(model, "to")
            model = move(device)
            return model(torch.randn(2, 4, device=device))


        if __name__ == "__main__":
            main()
    """)
    assert r.rule_errors == []
    assert [d.code for d in r.diagnostics] == []
