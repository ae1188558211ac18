"""Semantics found missing on unseen real cases, batch BO (tests/fixtures/engine/unseen/bo_*): research code, the
model in models.py and the loop / demo / evaluation script beside it.

- A module's forward parameter that the forward never reads is device-free: PyTorch checks no argument's device
  when a module is called, only where two tensors meet, so a cpu tensor handed to a cuda model for a parameter it
  ignores (MORAN_v2's demo passes the cpu `length` / `text` of a `torch.IntTensor` / `torch.LongTensor` to the
  cuda recogniser, which in test mode does not need them) raises nothing. It holds through a parent's forward
  that hands the input on to a submodule ignoring it, and whoever calls the model (a script, a trainer method,
  another file). A parameter the forward does combine with a tensor is still reported at the call.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_source
from project_fixtures import codes, write_project


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_MODEL = """
    import torch
    import torch.nn as nn


    class Recognizer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, {x}, {length}, {text}, test=False):
            return self.fc({x}){use}
"""

_SCRIPT = """
    device = torch.device("cuda")
    model = Recognizer().to(device)
    image = torch.randn(2, 8).to(device)
    length = torch.IntTensor(2)
    text = torch.LongTensor(10)
    out = model(image, length, text, test=True)
"""


def _module(x="x", length="length", text="text", use=""):
    return _MODEL.format(x=x, length=length, text=text, use=use)


def test_inputs_the_forward_never_reads_meet_nothing():
    assert _codes(_module() + _SCRIPT) == []


def test_renamed_parameters():
    assert _codes(_module(x="inp", length="lens", text="labels") + _SCRIPT) == []


def test_input_read_by_the_forward_is_still_reported():
    # `text` combined with the cuda output: it meets the module's device
    assert _codes(_module(use=" + text[:4].float()") + _SCRIPT) == [(18, "DEV201")]


def test_handed_on_to_a_submodule_that_ignores_it():
    src = """
        import torch
        import torch.nn as nn


        class ASRN(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 4)

            def forward(self, input, length, text, text_rev, test=False):
                return self.fc(input)


        class MORAN(nn.Module):
            def __init__(self):
                super().__init__()
                self.rectifier = nn.Linear(8, 8)
                self.ASRN = ASRN()

            def forward(self, x, length, text, text_rev, test=False):
                x_rectified = self.rectifier(x)
                return self.ASRN(x_rectified, length, text, text_rev, test)


        model = MORAN().cuda()
        image = torch.randn(2, 8).cuda()
        text = torch.LongTensor(10)
        length = torch.IntTensor(2)
        preds = model(image, length, text, text, test=True)
    """
    assert _codes(src) == []


def test_submodule_that_combines_it_is_still_reported():
    src = """
        import torch
        import torch.nn as nn


        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Parameter(torch.randn(10, 4))

            def forward(self, feats, text):
                return feats + self.emb[0] * text


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(8, 4)
                self.dec = Decoder()

            def forward(self, x, text):
                return self.dec(self.enc(x), text)


        model = Model().cuda()
        out = model(torch.randn(2, 8).cuda(), torch.ones(4))
    """
    assert _codes(src) == [(26, "DEV201")]


def test_split_into_files_and_called_from_a_trainer(tmp_path: Path):
    write_project(tmp_path, {
        "models/__init__.py": "",
        "models/recognizer.py": _module(),
        "demo.py": """
            import torch
            from models.recognizer import Recognizer


            class Tester:
                def __init__(self):
                    self.device = torch.device("cuda")
                    self.model = Recognizer().to(self.device)

                def predict(self, image):
                    length = torch.IntTensor(image.size(0))
                    text = torch.LongTensor(5 * image.size(0))
                    return self.model(image.to(self.device), length, text, test=True)


            if __name__ == "__main__":
                print(Tester().predict(torch.randn(2, 8)))
        """,
    })
    assert codes(tmp_path, "demo.py") == []


def test_fixed_and_unknown_device_stay_silent():
    # the model's device unknown (a parameter): nothing is said either way
    src = _module(use=" + text[:4].float()") + """
    def run(model_device):
        model = Recognizer().to(model_device)
        return model(torch.randn(2, 8), torch.IntTensor(2), torch.ones(4), test=True)
    """
    assert _codes(src) == []


def test_fixed_twin_input_moved_stays_silent():
    src = _module(use=" + text[:4].float()") + _SCRIPT.replace("text = torch.LongTensor(10)",
                                                               "text = torch.LongTensor(10).to(device)")
    assert _codes(src) == []
