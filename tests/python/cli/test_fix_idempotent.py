"""`devflow check --fix --unsafe-fixes` run twice changes nothing the second time, on every rule fixture,
variant, sample and corpus buggy file; a fix that does not resolve its finding is never applied."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "rules"


def _files(shared: Path) -> list[Path]:
    files = sorted(FIXTURES.glob("*/*.py")) + sorted(FIXTURES.glob("*/variants/*.py")) + sorted((ROOT / "samples").glob("*.py"))
    for folder in ("public", "public2"):
        for case in sorted((shared / "corpus" / folder).glob("*/case.json")):
            files.extend(sorted(case.parent.glob("*.py")))
    return files


def test_fix_twice_changes_nothing_the_second_time(devflow, tmp_path, shared_dir):
    files = _files(shared_dir)
    assert len(files) > 100
    copies = []
    for i, f in enumerate(files):
        folder = tmp_path / str(i)
        folder.mkdir()
        shutil.copy(f, folder / f.name)
        copies.append((f, folder / f.name))
    devflow("check", "--fix", "--unsafe-fixes", "--exit-zero", *[c for _, c in copies])
    first = {c: c.read_text() for _, c in copies}
    devflow("check", "--fix", "--unsafe-fixes", "--exit-zero", *[c for _, c in copies])
    changed = [str(f) for f, c in copies if c.read_text() != first[c]]
    assert not changed, f"a second --fix changed: {changed}"


DEV102_ASSIGNED_MOVE = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 10)

    def reset_classifier(self, n):
        self.fc = nn.Linear(8, n)

    def forward(self, x):
        return self.fc(x)


device = torch.device("cuda")
model = Net().to(device)
model.reset_classifier(2)
out = model(torch.randn(2, 8, device=device))
'''


@pytest.mark.parametrize("runs", [1, 3])
def test_no_fix_moves_a_temporary_object(devflow, tmp_path, runs):
    path = tmp_path / "train.py"
    path.write_text(DEV102_ASSIGNED_MOVE)
    for _ in range(runs):
        devflow("check", "--fix", "--unsafe-fixes", "--exit-zero", path)
    assert "\nNet().to(device)" not in path.read_text()
    assert path.read_text().count("Net().to(device)") == 1
