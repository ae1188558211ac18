"""Notebooks: code cells checked as one program, findings at `path:cell N:line`, --fix written
back into the cells with everything else in the .ipynb kept."""

from __future__ import annotations

import json

import pytest
from cli_support import CANONICAL, validate_sarif

from devflow.api import CellSpanError, _Cells
from devflow.model import Edit, Span


def _notebook(cells: list[tuple[str, str]], as_lists: bool = True) -> dict:
    out = []
    for kind, text in cells:
        cell = {"cell_type": kind, "metadata": {"tags": ["keep-me"]},
                "source": text.splitlines(keepends=True) if as_lists else text}
        if kind == "code":
            cell.update(execution_count=3, outputs=[{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}])
        out.append(cell)
    return {"cells": out, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


CELLS = [
    ("markdown", "# Fine-tune a head\nSome text with `model.head = ...`\n"),
    ("code", "%matplotlib inline\nimport torch\nimport torch.nn as nn\n"),
    ("code", 'device = torch.device("cuda")\nmodel = nn.Sequential(nn.Linear(8, 8))\nmodel.to(device)\n'),
    ("code", "model.head = nn.Linear(8, 2)\ny = model(torch.randn(4, 8, device=device))"),
]


@pytest.fixture
def nb_path(tmp_path):
    path = tmp_path / "finetune.ipynb"
    path.write_text(json.dumps(_notebook(CELLS), indent=1, ensure_ascii=False) + "\n")
    return path


def test_text_reports_code_cell_and_line(devflow, nb_path):
    r = devflow("check", nb_path.name, cwd=nb_path.parent)
    assert r.code == 1
    assert r.out.splitlines()[0].startswith("finetune.ipynb:cell 3:1:1: DEV101 [*] ")


def test_json_has_cell_fields(devflow, nb_path):
    doc = devflow("check", "--format", "json", cwd=nb_path.parent).json()
    (d,) = doc["diagnostics"]
    assert (d["path"], d["cell"], d["line"], d["column"]) == ("finetune.ipynb", 3, 1, 1)
    assert d["related"][0]["cell"] == 2 and d["related"][0]["line"] == 3
    assert all(e["cell"] == 3 for e in d["fix"]["edits"])


def test_sarif_carries_the_cell(devflow, nb_path):
    doc = json.loads(devflow("check", "--format", "sarif", cwd=nb_path.parent).out)
    validate_sarif(doc)
    (result,) = doc["runs"][0]["results"]
    assert result["properties"]["cell"] == 3
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


def test_fix_rewrites_only_the_cell(devflow, nb_path):
    before = json.loads(nb_path.read_text())
    r = devflow("check", "--fix", nb_path.name, cwd=nb_path.parent)
    assert "(1 fixed, " in r.out, r.out + r.err
    after = json.loads(nb_path.read_text())
    changed = [i for i, (a, b) in enumerate(zip(before["cells"], after["cells"])) if a != b]
    assert changed == [3]
    cell = after["cells"][3]
    assert isinstance(cell["source"], list) and cell["source"][0].startswith("model.head = nn.Linear(8, 2).to(")
    assert cell["outputs"] == before["cells"][3]["outputs"] and cell["metadata"] == {"tags": ["keep-me"]}
    assert after["metadata"] == before["metadata"] and after["nbformat_minor"] == 5
    # Jupyter's layout is kept: one-space indent and a final newline.
    assert nb_path.read_text().startswith('{\n "cells": [') and nb_path.read_text().endswith("}\n")


def test_fix_with_string_sources(devflow, tmp_path):
    path = tmp_path / "s.ipynb"
    path.write_text(json.dumps(_notebook(CELLS, as_lists=False)))
    assert "(1 fixed, " in devflow("check", "--fix", cwd=tmp_path).out
    cell = json.loads(path.read_text())["cells"][3]
    assert isinstance(cell["source"], str) and ".to(" in cell["source"]


def test_magics_and_empty_notebooks(devflow, tmp_path):
    (tmp_path / "empty.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                       "nbformat_minor": 5}))
    (tmp_path / "magic.ipynb").write_text(json.dumps(_notebook([("code", "!pip install torch\n%time x = 1\n")])))
    r = devflow("check", cwd=tmp_path)
    assert r.code == 0 and r.out == "All checks passed!\n"


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a valid notebook: JSON error at line 1"),
    ('{"nbformat": 4}', "not a valid notebook: no 'cells' list"),
    ('{"cells": [{"cell_type": "code", "source": 5}]}', "cell 1 has a source that is not text"),
])
def test_malformed_notebook_is_reported_and_others_still_checked(devflow, tmp_path, content, message):
    (tmp_path / "bad.ipynb").write_text(content)
    (tmp_path / "ok.py").write_text("x = 1\n")
    r = devflow("check", "--format", "json", cwd=tmp_path)
    assert r.code == 1
    doc = r.json()
    assert doc["files_checked"] == 2
    (err,) = doc["errors"]
    assert err["path"] == "bad.ipynb" and err["code"] == "E902" and message in err["message"]
    text = devflow("check", cwd=tmp_path).out
    assert text.startswith("bad.ipynb:1:1: E902 not a valid notebook")
    validate_sarif(json.loads(devflow("check", "--format", "sarif", cwd=tmp_path).out))


def test_an_edit_across_cells_is_refused():
    cells = _Cells(["a = 1\n", "b = 2\n"])
    with pytest.raises(CellSpanError):
        cells.edited([Edit(Span(1, 0, 2, 1), "x")])
    # An edit that ends exactly where the next cell starts stays in its own cell.
    assert cells.edited([Edit(Span(1, 0, 2, 0), "")]).texts == ["", "b = 2\n"]


def test_line_references_in_messages_name_the_cell(devflow, nb_path):
    (d,) = devflow("check", "--format", "json", cwd=nb_path.parent).json()["diagnostics"]
    # The engine saw the joined program ("moved at line 6"); the user sees cells.
    assert "line 6" not in d["message"]
    if "line" in d["message"]:
        assert "cell 2, line 3" in d["message"]


def test_a_cell_with_a_syntax_error_is_left_out_and_the_others_checked(devflow, tmp_path):
    lines = CANONICAL.split("\n")
    cells = ["\n".join(lines[:6]), "def unfinished(:\n    pass\n", "\n".join(lines[6:])]
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c}
                    for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    r = devflow("check", "nb.ipynb", "--format", "json", cwd=tmp_path)
    found = json.loads(r.out)["diagnostics"]
    assert [(d["code"], d["cell"], d["line"]) for d in found] == [("E999", 2, 1), ("DEV101", 3, 1)], found
    assert "the other cells" in found[0]["message"]
    # --fix mends the other cells and leaves the broken one as the user typed it.
    r = devflow("check", "nb.ipynb", "--fix", "--unsafe-fixes", cwd=tmp_path)
    after = [c["source"] for c in json.loads((tmp_path / "nb.ipynb").read_text())["cells"]]
    assert after[1] == cells[1] and after[2] != cells[2] and after[0] == cells[0]
    assert "Found 2 errors (1 fixed, 1 remaining)." in r.out and "cell 2:1:16: E999" in r.out
