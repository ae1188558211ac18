"""A library module checked alone gets the findings its importers' runs make inside it, from scripts at
the project's roots, in the script folders right under them (`tools/`, `scripts/`: not packages), and in
the top package's own subfolders (`pkg/bin/train.py`); hidden folders and environments are not searched."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path

LOSS = """
import torch
from torch import nn


class SpectralLoss(nn.Module):
    def __init__(self, n_fft):
        super().__init__()
        self.window = torch.hann_window(n_fft)

    def forward(self, x):
        return torch.stft(x, 64, window=self.window, return_complex=True).abs().mean()
"""

SCRIPT = """
import torch

from {module} import SpectralLoss


def main():
    loss = SpectralLoss(64).to("cuda")
    wave = torch.randn(2, 4000, device="cuda")
    print(loss(wave{move}))


if __name__ == "__main__":
    main()
"""


def _project(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "setup.py").write_text("")
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))


def _codes(path: Path) -> list[tuple[int, str, str]]:
    return [(d.span.line, d.code, d.message.rsplit("(when ", 1)[-1]) for d in check_path(str(path)).diagnostics]


def test_script_in_a_tools_folder(tmp_path):
    _project(tmp_path, {"audio/__init__.py": "", "audio/losses.py": LOSS,
                        "tools/train.py": SCRIPT.format(module="audio.losses", move="")})
    assert _codes(tmp_path / "audio" / "losses.py") == [(8, "DEV201", "`train.py` runs)")]


def test_script_in_a_subpackage_of_the_top_package(tmp_path):
    _project(tmp_path, {"voc/__init__.py": "", "voc/layers/__init__.py": "", "voc/layers/losses.py": LOSS,
                        "voc/bin/__init__.py": "", "voc/bin/fit.py": SCRIPT.format(module="voc.layers.losses", move="")})
    assert _codes(tmp_path / "voc" / "layers" / "losses.py") == [(8, "DEV201", "`fit.py` runs)")]


def test_silent_neighbours(tmp_path):
    # the loss moved with its module (a buffer would be); here the script gives it a cpu wave: no cuda at all
    _project(tmp_path / "ok", {"audio/__init__.py": "", "audio/losses.py": LOSS,
                               "tools/train.py": SCRIPT.format(module="audio.losses", move="").replace('.to("cuda")', "")
                               .replace(', device="cuda"', "")})
    assert _codes(tmp_path / "ok" / "audio" / "losses.py") == []
    # a hidden folder's script is not an importer
    _project(tmp_path / "hidden", {"audio/__init__.py": "", "audio/losses.py": LOSS,
                                   ".cache/train.py": SCRIPT.format(module="audio.losses", move="")})
    assert _codes(tmp_path / "hidden" / "audio" / "losses.py") == []


def test_a_script_of_assignments_only_runs_code(tmp_path):
    # `out = loss(wave)` at the top of a file that defines nothing is a script (it runs when launched); a module
    # that defines functions next to such setup lines (`log = logging.getLogger()`) is a library module
    script = """
        import torch
        from audio.losses import SpectralLoss

        loss = SpectralLoss(64).to("cuda")
        value = loss(torch.randn(2, 4000, device="cuda"))
    """
    _project(tmp_path / "a", {"audio/__init__.py": "", "audio/losses.py": LOSS, "run.py": script})
    assert _codes(tmp_path / "a" / "audio" / "losses.py") == [(8, "DEV201", "`run.py` runs)")]
    library = script + """
        def helper():
            return value
    """
    _project(tmp_path / "b", {"audio/__init__.py": "", "audio/losses.py": LOSS, "setup_loss.py": library})
    assert _codes(tmp_path / "b" / "audio" / "losses.py") == []
