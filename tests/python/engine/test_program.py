"""Whole-program fixtures: tests/fixtures/engine/program/<case>/ holds a small project (several files,
packages, relative imports); every .py file in it is checked by path, so its imports of the other
files resolve, and the findings must be exactly `expect.txt` ("file:LINE CODE" per finding; an empty
file for a clean project). Not corpus copies: variations a user writes (a model in its own module,
a trainer class in another file, a helper one call deeper, a dataclass config, a package)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from devflow.analysis.program import Project, package_of
from devflow.api import check_path
from project_fixtures import findings
from devflow.engine import analyze

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "program"


def _findings(case: Path) -> list[str]:
    return findings(case)


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.iterdir() if (p / "expect.txt").exists()))
def test_project_case(name):
    case = CASES / name
    want = sorted(line for line in (case / "expect.txt").read_text().splitlines() if line.strip())
    assert _findings(case) == want


def test_findings_inside_an_imported_file_are_anchored_in_the_checked_file():
    case = CASES / "forward_mask_two_files"
    result = check_path(str(case / "main.py"))
    (d,) = result.diagnostics
    assert d.span.line == 7 and "blocks.py:11" in d.message
    assert d.fix is None  # its edit would belong to the other file
    assert all(r.span.line < 1000 for r in d.related)


def test_without_a_path_imports_stay_unresolved():
    src = (CASES / "forward_mask_two_files" / "main.py").read_text()
    assert analyze(src).diagnostics == []


def test_extra_roots_resolve_imports(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "noise.py").write_text("import torch\n\ndef noise(n):\n    return torch.randn(n)\n")
    src = "import torch\nfrom noise import noise\nx = torch.ones(3, device='cuda')\ny = x + noise(3)\n"
    (tmp_path / "app.py").write_text(src)
    assert analyze(src, str(tmp_path / "app.py")).diagnostics == []
    result = analyze(src, str(tmp_path / "app.py"), roots=[str(tmp_path / "lib")])
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(4, "DEV201")]


def test_package_of_and_relative_roots():
    pkg, top = package_of(str(CASES / "package_relative" / "textnet" / "encoder.py"))
    assert pkg == "textnet" and top == str(CASES / "package_relative")
    project = Project.for_file(str(CASES / "package_relative" / "serve.py"))
    assert project.find("textnet.positions").endswith("positions.py")
    assert project.find("torch.nn") is None


def test_an_edited_imported_file_is_read_again(tmp_path):
    (tmp_path / "parts.py").write_text("import torch\n\ndef make():\n    return torch.ones(2, device='cuda')\n")
    src = "import torch\nfrom parts import make\ny = make() + torch.ones(2, device='cuda')\n"
    (tmp_path / "main.py").write_text(src)
    assert analyze(src, str(tmp_path / "main.py")).diagnostics == []
    (tmp_path / "parts.py").write_text("import torch\n\ndef make():\n    return torch.ones(2)\n")
    st = os.stat(tmp_path / "parts.py")
    os.utime(tmp_path / "parts.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert [d.code for d in analyze(src, str(tmp_path / "main.py")).diagnostics] == ["DEV201"]


def test_circular_imports_do_not_hang(tmp_path):
    (tmp_path / "a.py").write_text("import torch\nfrom b import g\n\ndef f(x):\n    return g(x)\n")
    (tmp_path / "b.py").write_text("import torch\nfrom a import f\n\ndef g(x):\n    return f(x)\n")
    src = "import torch\nfrom a import f\ny = f(torch.ones(2))\n"
    (tmp_path / "main.py").write_text(src)
    assert analyze(src, str(tmp_path / "main.py")).diagnostics == []


def test_the_project_root_resolves_packages_for_scripts_in_subfolders(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "data.py").write_text("import torch\n\ndef sample(n):\n    return torch.rand(n, 2)\n")
    (tmp_path / "scripts").mkdir()
    src = ("import torch\nfrom mypkg.data import sample\n\nnet = torch.nn.Linear(2, 1).to('cuda')\n"
           "print(net(sample(4)))\n")
    (tmp_path / "scripts" / "train.py").write_text(src)
    result = analyze(src, str(tmp_path / "scripts" / "train.py"))
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(5, "DEV201")]


def test_a_file_gets_the_findings_its_importers_runs_place_in_it():
    case = CASES / "trainer_class_two_files"
    (d,) = check_path(str(case / "trainer.py")).diagnostics
    assert (d.span.line, d.code) == (12, "DEV201")
    assert "run.py" in d.message and "line 12" in d.message
    assert d.fix is not None  # the edit lies in trainer.py itself


def test_unsaved_edits_ignore_the_importers_runs():
    case = CASES / "trainer_class_two_files"
    src = (case / "trainer.py").read_text() + "\n# edited\n"
    assert analyze(src, str(case / "trainer.py")).diagnostics == []


_SHARED = ("import torch\nimport torch.nn as nn\n\nnet = nn.Linear(4, 2)\n\n"
           "def infer():\n    return net(torch.ones(1, 4, device='cuda'))\n")


@pytest.mark.parametrize("script, silent", [
    ("from shared import net as policy, infer\npolicy.cuda()\ninfer()\n", True),  # renamed, moved
    ("import torch\nimport shared\nshared.net = torch.nn.Linear(4, 2).cuda()\nshared.infer()\n", True),  # rebound
    ("from shared import infer\ninfer()\n", False),  # the global is never taken: its own code decides
])
def test_a_global_an_importer_changes_is_unknown_to_uncalled_functions(tmp_path, script, silent):
    (tmp_path / "shared.py").write_text(_SHARED)
    (tmp_path / "main.py").write_text(script)
    own = [d for d in analyze(_SHARED, str(tmp_path / "shared.py")).diagnostics if "runs)" not in d.message]
    assert (own == []) == silent


def test_an_imported_module_body_runs_its_calls_but_not_its_main_guard(tmp_path):
    (tmp_path / "state.py").write_text(
        "import torch\nimport torch.nn as nn\n\ndef build():\n    return nn.Linear(4, 2).cuda()\n\n"
        "model = build()\n\nif __name__ == '__main__':\n    model = nn.Linear(4, 2)\n")
    src = "import torch\nfrom state import model\ny = model(torch.ones(1, 4))\n"
    (tmp_path / "main.py").write_text(src)
    assert [d.code for d in analyze(src, str(tmp_path / "main.py")).diagnostics] == ["DEV201"]
    fixed = "import torch\nfrom state import model\ny = model(torch.ones(1, 4, device='cuda'))\n"
    assert analyze(fixed, str(tmp_path / "main.py")).diagnostics == []
