"""Semantics found missing on unseen real cases, batch AG (tests/fixtures/engine/unseen/ag_*): computer
vision projects (detection target assignment, GAN perceptual losses, evaluation scripts).

- A package's `__init__.py` that re-exports its submodules (`from .bench import DetBenchTrain`) is no module
  between a script and the code it runs: `from effdet import DetBenchTrain` runs effdet/bench.py. The walk
  from an entry script to the files it runs (a bounded number of module hops) does not count such
  `__init__` files, so a library file five packages deep (effdet's train.py -> effdet -> bench -> anchors ->
  object_detection -> argmax_matcher) is checked as the script runs it: the cpu match indices made there
  without a device meet the cuda ground truth (DEV201, efficientdet-pytorch#105)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path

_MATCHER = """
    import torch


    class Match:
        def __init__(self, results):
            self.results = results

        def gather(self, values):
            return torch.index_select(values, 0, torch.clamp(self.results, min=0))


    def match(similarity):
        if similarity.shape[0] == 0:
            return Match(-1 * torch.ones(similarity.shape[1], dtype=torch.long{device}))
        return Match(similarity.argmax(0))
"""

_LABELER = """
    import torch.nn as nn

    from .{matching} import match


    class Labeler(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(4, n)

        def label(self, gt_boxes, anchors):
            return match(gt_boxes @ anchors.t()).gather(gt_boxes)
"""

_BENCH = """
    import torch.nn as nn

    from .labeling import Labeler


    class Bench(nn.Module):
        def __init__(self):
            super().__init__()
            self.labeler = Labeler(8)

        def forward(self, gt_boxes, anchors):
            return self.labeler.label(gt_boxes, anchors)
"""

_TRAIN = """
    import torch

    from {top} import Bench


    def main():
        bench = Bench().cuda()
        anchors = torch.rand(8, 4).cuda()
        for _ in range(3):
            gt = torch.zeros(0, 4).cuda()
            bench(gt, anchors)


    if __name__ == "__main__":
        main()
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def _project(root: Path, *, device: str = "", nested: bool = True, script_dir: str = "") -> Path:
    """det/ (re-exporting Bench) -> bench -> labeling (a package re-exporting its submodules when `nested`)
    -> matching.matcher: the cpu indices are made in matcher.py, the deepest file."""
    files = {
        "setup.py": "from setuptools import setup, find_packages\nsetup(name='det', packages=find_packages())\n",
        "det/__init__.py": "from .bench import Bench\n",
        "det/bench.py": _BENCH,
        f"{script_dir}train.py": _TRAIN.format(top="det"),
    }
    matcher = _MATCHER.format(device=device)
    if nested:
        files.update({
            "det/labeling/__init__.py": "from .labeler import Labeler\n",
            "det/labeling/labeler.py": _LABELER.format(matching="matching"),
            "det/labeling/matching/__init__.py": "from .matcher import match, Match\n",
            "det/labeling/matching/matcher.py": matcher,
        })
        _write(root, files)
        return root / "det/labeling/matching/matcher.py"
    files.update({"det/labeling.py": _LABELER.format(matching="matcher"), "det/matcher.py": matcher})
    _write(root, files)
    return root / "det/matcher.py"


def _codes(path: Path) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_path(str(path)).diagnostics]


def test_file_behind_reexporting_packages_is_run_by_the_script(tmp_path):
    # train.py -> det/__init__ -> bench -> labeling/__init__ -> labeler -> matching/__init__ -> matcher
    assert (15, "DEV201") in _codes(_project(tmp_path))


def test_same_chain_without_the_packages(tmp_path):
    assert (15, "DEV201") in _codes(_project(tmp_path, nested=False))


def test_script_in_a_scripts_folder(tmp_path):
    (tmp_path / "tools").mkdir()
    assert (15, "DEV201") in _codes(_project(tmp_path, script_dir="tools/"))


def test_indices_made_on_the_similarity_device_are_silent(tmp_path):
    assert _codes(_project(tmp_path, device=", device=similarity.device")) == []


def test_library_without_a_script_is_silent(tmp_path):
    path = _project(tmp_path)
    (tmp_path / "train.py").unlink()
    assert _codes(path) == []
