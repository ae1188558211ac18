"""The world the analysis runs in (a machine with CUDA) and the records code keeps its settings and
batches in: tests/fixtures/engine/cuda_world/<case>/, checked like tests/fixtures/engine/multigpu
(every .py file by path; findings exactly `expect.txt`, "file:LINE CODE" per line, empty when clean).

- `torch.cuda.is_available()` is True, so a choice made once from it (`no_cuda = not ...`, an int GPU
  id picked from it) is followed consistently; code that handles both worlds stays silent;
- `types.SimpleNamespace` configs and `collections.namedtuple` batches keep their fields;
- the cpu tensors a project data iterator yields are batches, reported where the loop uses them;
- `with device:` (a torch.device as a context manager) sets the default device;
- DEV104 follows forward() into the helpers it runs.

tests/fixtures/engine/helpers/<case>/: mechanisms followed through helpers (the metamorphic helper_1 /
helper_2 rewrites): a fused optimizer restored from a cpu-mapped checkpoint in another function or
file (DEV401), an optimizer whose `__init__` fills the state through a helper given `self.state[p]`
(DEV304)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devflow.api import check_source
from project_fixtures import findings

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "cuda_world"
HELPERS = CASES.parent / "helpers"


def _findings(case: Path) -> list[str]:
    return findings(case)


@pytest.mark.parametrize("case", sorted((p for root in (CASES, HELPERS) for p in root.iterdir()
                                          if (p / "expect.txt").exists()), key=lambda p: (p.parent.name, p.name)),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cuda_world_case(case):
    want = sorted(line for line in (case / "expect.txt").read_text().splitlines() if line.strip())
    assert _findings(case) == want


def test_availability_conditional_keeps_the_variable_in_messages():
    src = ("import torch\nimport torch.nn as nn\n"
           "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
           "model = nn.Linear(2, 2).to(device)\n"
           "print(model(torch.randn(1, 2)))\n")
    (d,) = check_source(src, "t.py").diagnostics
    assert "is on `device`" in d.message  # the symbolic accelerator, named by its variable (fixes use it)


def test_namedtuple_fields_and_items_agree():
    src = ("import collections\nimport torch\n"
           "B = collections.namedtuple('B', ['x', 'y'])\n"
           "b = B(torch.zeros(2), y=torch.ones(2).cuda())\n"
           "x, y = b\n"
           "print(b.x + b.y)\n"
           "print(x + y)\n")
    lines = sorted(d.span.line for d in check_source(src, "t.py").diagnostics)
    assert lines and all(ln == 4 for ln in lines)  # the cpu tensor, made at line 4, reported once
