"""`# noqa` suppressions (api.check_source, shared with the language server)."""

from __future__ import annotations

import pytest
from cli_support import CANONICAL, CANONICAL_LINE

from devflow import api, noqa


def _with_comment(comment: str, line: int = CANONICAL_LINE) -> str:
    lines = CANONICAL.splitlines()
    lines[line - 1] += "  " + comment
    return "\n".join(lines) + "\n"


def test_the_canonical_snippet_is_reported():
    assert [d.code for d in api.check_source(CANONICAL, "t.py").diagnostics] == ["DEV101"]


@pytest.mark.parametrize("comment", [
    "# noqa", "# noqa: DEV101", "# noqa:DEV101", "# noqa: DEV203, DEV101", "# noqa: DEV203 DEV101",
    "# NOQA: dev101", "# noqa: DEV1", "#noqa:DEV101 the new head is moved later",
])
def test_suppressed(comment):
    assert api.check_source(_with_comment(comment), "t.py").diagnostics == []


@pytest.mark.parametrize("comment", ["# noqa: DEV2", "# noqa: DEV1011", "# no qa", "# noqa: E501"])
def test_not_suppressed(comment):
    assert [d.code for d in api.check_source(_with_comment(comment), "t.py").diagnostics] == ["DEV101"]


def test_only_the_diagnostics_first_line_counts():
    assert api.check_source(_with_comment("# noqa", CANONICAL_LINE - 1), "t.py").diagnostics != []


def test_noqa_inside_a_string_is_not_a_comment():
    src = CANONICAL.replace("model.head = nn.Linear(8, 2)", 'model.head = nn.Linear(8, 2); tag = "# noqa"')
    assert [d.code for d in api.check_source(src, "t.py").diagnostics] == ["DEV101"]


def test_file_level_suppression():
    assert api.check_source("# devflow: noqa\n" + CANONICAL, "t.py").diagnostics == []
    assert api.check_source("# devflow: noqa: DEV1\n" + CANONICAL, "t.py").diagnostics == []
    assert api.check_source("# devflow: noqa: DEV3\n" + CANONICAL, "t.py").diagnostics != []


def test_cli_respects_noqa(devflow, tmp_path):
    (tmp_path / "t.py").write_text(_with_comment("# noqa: DEV101"))
    assert devflow("check", cwd=tmp_path).code == 0


def test_parse_survives_broken_tokens():
    sup = noqa.parse('x = """never closed  # noqa\n')
    assert isinstance(sup, noqa.Suppressions)
