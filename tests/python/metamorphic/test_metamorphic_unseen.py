"""Metamorphic suite on the unseen real cases (issue 10): the rewrites of tests/metamorphic applied to
tests/fixtures/engine/unseen (multi-file projects and packages; bug lines from expect.txt; `_fixed`
twins; silent cases as fixed-only variants). A case found as written but lost after a rename, a split
into files or one helper deeper is a shape-matched mechanism, so agreement with the unrewritten
result is the target here; rewritten fixed twins and silent cases must stay silent.

    PYTHONPATH=$PWD/server .venv/bin/python -m pytest -q tests/python/metamorphic/test_metamorphic_unseen.py -s
    .venv/bin/python tests/metamorphic/run.py --fixtures tests/fixtures/engine/unseen   # the table, per case with --json
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))

from metamorphic import fixtures, measure  # noqa: E402
from metamorphic.rename import rename  # noqa: E402
from metamorphic.rewrite import REWRITES, variant  # noqa: E402
from metamorphic.project import render  # noqa: E402

UNSEEN = ROOT / "tests" / "fixtures" / "engine" / "unseen"
# Measured (s13): agreement 95.0% over all rewrites at first (rename 78.8%, split_module 87.5%, wrap_main 97.0%;
# the rename and wrap_main losses were rewriter faults, the split_module ones engine gaps), 100% after the
# fixes; every rewrite kind must agree on at least this share.
AGREEMENT_TARGET = 0.97
FIXED_DIAGNOSTICS_MAX = 0
MIN_APPLIED = {"identity": 60, "rename": 60, "split_module": 18, "wrap_main": 40, "helper_1": 60, "helper_2": 60,
               "device_args": 35, "device_config": 35, "trainer": 25}


@pytest.fixture(scope="module")
def results():
    res = measure.evaluate(None, fixtures=UNSEEN)
    print()
    print(measure.report(res))
    return res


def test_every_rewrite_produces_valid_python(results):
    invalid = [(r["case"], r["kind"], why) for r in results["rows"]
               for why in (r["skipped"], r["fixed_skipped"]) if why and why.startswith("invalid output")]
    assert not invalid


def test_rewrites_apply(results):
    table = results["table"]
    low = {k: table[k]["applied"] for k, n in MIN_APPLIED.items() if table[k]["applied"] < n}
    assert not low, f"rewrites applied to fewer unseen cases than expected: {low}"


def test_identity_rewrite_changes_nothing(results):
    t = results["table"]["identity"]
    assert t["agreement"] == 1.0 and t["fixed_diagnostics"] == 0


def test_agreement_per_rewrite_kind(results):
    lost = {(r["case"], r["kind"]) for r in results["rows"] if "hit" in r and r["hit"] != r["base_hit"]}
    low = {k: t["agreement"] for k, t in results["table"].items() if t["agreement"] is not None
           and t["agreement"] < AGREEMENT_TARGET}
    assert not low, f"agreement below {AGREEMENT_TARGET:.0%}: {low}; cases: {sorted(lost)}"


def test_no_diagnostics_on_rewritten_fixed_twins_and_silent_cases(results):
    noisy = {(r["case"], r["kind"]): r["fixed_diagnostics"] for r in results["rows"] if r.get("fixed_diagnostics")}
    assert sum(len(v) for v in noisy.values()) <= FIXED_DIAGNOSTICS_MAX, noisy


# ---- the fixture source and the rewriter on multi-file projects (no engine)

def _case(tmp_path: Path, files: dict[str, str], expect: str, fixed: dict[str, str] | None = None) -> Path:
    for root, content, exp in ((tmp_path / "c", files, expect), (tmp_path / "c_fixed", fixed or files, "")):
        for name, text in content.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        (root / "expect.txt").write_text(exp)
    return tmp_path / "c"


PKG_MODEL = """import torch
import torch.nn as nn


class Net(nn.Module):
    scale = 2.0
    device = "cuda"

    def __init__(self, width=4):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x, return_loss=False):
        out = self.fc(x) * self.scale
        return out.sum() if return_loss else out
"""
SCRIPT = """import torch
from pkg import models
from pkg.models import Net


def main():
    net = Net(width=4)
    x = torch.randn(2, 4).to(Net.device)
    print(net(x, return_loss=True), models.Net.scale)


if __name__ == "__main__":
    main()
"""


def test_fixture_source_loads_packages_bug_lines_and_the_fixed_twin(tmp_path):
    fixed = {"pkg/__init__.py": "", "pkg/models.py": PKG_MODEL,
             "train.py": SCRIPT.replace("Net(width=4)", "Net(width=4).to(Net.device)")}
    case = _case(tmp_path, {"pkg/__init__.py": "", "pkg/models.py": PKG_MODEL, "train.py": SCRIPT},
                 "train.py:9 DEV106\n", fixed)
    assert fixtures.case_dirs(tmp_path) == [case]
    buggy, twin = fixtures.load(case, "buggy"), fixtures.load(case, "fixed")
    assert set(buggy.trees) == {"pkg/__init__.py", "pkg/models.py", "train.py"}
    assert buggy.entry == "train.py" and buggy.labels == ["train.py:9"]
    assert twin.labels == ["train.py:9"]  # mapped by diff onto the fixed twin's line
    assert buggy.module_names() >= {"pkg", "models", "train"} and buggy.top_level_modules() == {"pkg", "train"}


def test_rename_keeps_a_multi_file_project_consistent(tmp_path):
    case = _case(tmp_path, {"pkg/__init__.py": "", "pkg/models.py": PKG_MODEL, "train.py": SCRIPT}, "train.py:9 DEV106\n")
    out = render(rename(fixtures.load(case, "buggy"))).files
    model, script = ast.parse(out["pkg/models.py"]), out["train.py"]
    cls = next(n for n in ast.walk(model) if isinstance(n, ast.ClassDef))
    fields = [t.id for s in cls.body if isinstance(s, ast.Assign) for t in s.targets]
    assert "device" in fields  # a library attribute name is kept as a field too (read as `Net.device`)
    scale = next(f for f in fields if f != "device")
    assert f".{scale}" in script and "models.Net" not in script  # the module alias's attribute follows the class
    fwd = next(n for n in ast.walk(model) if isinstance(n, ast.FunctionDef) and n.name == "forward")
    flag = fwd.args.args[2].arg
    assert f"{flag}=True" in script  # the keyword of a call on a user instance follows the parameter
    assert "torch.randn" in script  # library attributes untouched


RENAME_TRAPS = {
    "pkg/__init__.py": "from pkg import train\n",
    "pkg/train/__init__.py": "from pkg.train.trainer import Trainer\n",
    "pkg/train/trainer.py": """class Trainer:
    def __init__(self, steps):
        self.steps = steps
        self._state = {}

    @property
    def state(self):
        return self._state

    @state.setter
    def state(self, value):
        self._state = value

    def run(self, mode):
        return getattr(self, "_" + mode)()

    def _fit(self):
        return self.steps
""",
    "pkg/losses.py": """class Weighted:
    def __init__(self, weight=1.0):
        self.weight = weight
        self.scale = 2 * weight


registry = {"weighted": Weighted}
DEFAULT = Weighted(0.25)
""",
    "pkg/build.py": """from .losses import DEFAULT, registry


def build(name):
    assert DEFAULT.scale == 0.5
    return registry[name](weight=0.5)
""",
    "run.py": """import pkg as P
from pkg.build import build

trainer = P.train.Trainer(steps=3)
trainer.state = {"epoch": 1}
print(trainer.run(mode="fit"), build("weighted").weight)
""",
}


def test_rename_keeps_what_python_resolves_by_name(tmp_path):
    """The renamed program must run as the original does: a property setter's decorator names the method
    (not a local of the same spelling), `P.train.Trainer` follows the class through a subpackage, a method
    reached by `getattr(self, "_" + mode)` keeps its name, a keyword passed through a registry imported
    relatively keeps the parameter it names, and the attributes of a project object imported relatively
    follow their definitions."""
    case = _case(tmp_path, RENAME_TRAPS, "run.py:4 DEV201\n")
    out = render(rename(fixtures.load(case, "buggy"))).files
    root = tmp_path / "renamed"
    for name, text in out.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    import subprocess

    done = subprocess.run([sys.executable, "run.py"], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "0.5"]
    assert "Trainer" not in out["run.py"]  # the class was renamed, and the subpackage path followed it


def test_split_module_inside_a_package_imports_relatively(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/train_lib.py": PKG_MODEL + "\nmodel = Net()\nprint(model(__import__('torch').randn(1, 4)))\n"}
    case = _case(tmp_path, files, "pkg/train_lib.py:14 DEV106\n")
    v = variant(case, "split_module", "buggy", fixtures.load(case, "buggy"))
    assert v.rendered is not None, v.skipped
    assert "pkg/networks.py" in v.rendered.files
    assert "from .networks import Net" in v.rendered.files["pkg/train_lib.py"]


def test_wrap_main_leaves_an_imported_module_alone(tmp_path):
    lib = "import torch\ndevice = torch.device('cuda')\n\ndef to_dev(x):\n    return x.to(device)\n"
    case = _case(tmp_path, {"lib.py": lib, "run.py": "import torch\nfrom lib import to_dev\nprint(to_dev(torch.zeros(1)))\n"},
                 "lib.py:2 DEV201\n")
    v = variant(case, "wrap_main", "buggy", fixtures.load(case, "buggy"))
    assert v.rendered is None and "imported by another project file" in v.skipped


def test_every_kind_is_measured_on_unseen_fixtures():
    assert set(REWRITES) >= set(MIN_APPLIED)
