"""`[tool.devflow]` in pyproject.toml, the command-line overrides, and config errors."""

from __future__ import annotations

import pytest

from devflow.config import Config, ConfigError, load_config


def _pyproject(folder, body: str) -> None:
    (folder / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.devflow]\n{body}\n")


def _codes(run) -> list[str]:
    return [d["code"] for d in run.json()["diagnostics"]]


def test_ignore_a_family(devflow, project):
    _pyproject(project, 'ignore = ["DEV1"]')
    r = devflow("check", cwd=project)
    assert r.code == 0 and r.out == "All checks passed!\n"


def test_select_other_rules_only(devflow, project):
    _pyproject(project, 'select = ["DEV2", "DEV3"]')
    assert devflow("check", cwd=project).code == 0


def test_extend_select_adds_to_select(devflow, project):
    _pyproject(project, 'select = ["DEV2"]\nextend-select = ["DEV101"]')
    assert _codes(devflow("check", "--format", "json", cwd=project)) == ["DEV101"]


def test_cli_select_replaces_and_the_most_specific_selector_wins(devflow, project):
    _pyproject(project, 'select = ["DEV2"]\nignore = ["DEV1"]')
    assert devflow("check", cwd=project).code == 0
    # --select DEV101 (6 characters) beats ignore DEV1 (4 characters), as in ruff.
    assert _codes(devflow("check", "--select", "DEV101", "--format", "json", cwd=project)) == ["DEV101"]
    # The same length: ignore wins.
    assert devflow("check", "--select", "DEV1", cwd=project).code == 0


def test_cli_ignore_and_select(devflow, project):
    assert devflow("check", "--ignore", "DEV101", cwd=project).code == 0
    assert devflow("check", "--ignore", "DEV2,DEV3", cwd=project).code == 1
    assert devflow("check", "--select", "DEV2", cwd=project).code == 0
    assert devflow("check", "--select", "dev1", cwd=project).code == 1  # case does not matter
    assert devflow("check", "--select", "DEV3", "--extend-select", "DEV101", cwd=project).code == 1


def test_unknown_or_malformed_selector_is_a_usage_error(devflow, project):
    r = devflow("check", "--select", "DEV999", cwd=project)
    assert r.code == 2 and "unknown rule selector 'DEV999'" in r.err
    r = devflow("check", "--ignore", "not-a-code", cwd=project)
    assert r.code == 2 and "not a rule code" in r.err


def test_per_file_ignores(devflow, project):
    (project / "scripts").mkdir()
    (project / "scripts" / "exp.py").write_text((project / "train.py").read_text())
    _pyproject(project, '[tool.devflow.per-file-ignores]\n"train.py" = ["DEV101"]\n"scripts/*.py" = ["DEV1"]')
    assert devflow("check", cwd=project).code == 0
    _pyproject(project, '[tool.devflow.per-file-ignores]\n"scripts/**" = ["DEV2"]')
    paths = [d["path"] for d in devflow("check", "--format", "json", cwd=project).json()["diagnostics"]]
    assert sorted(paths) == ["scripts/exp.py", "train.py"]


def test_severity_overrides(devflow, project):
    _pyproject(project, 'severity = { DEV1 = "warning", DEV101 = "info" }')
    (d,) = devflow("check", "--format", "json", cwd=project).json()["diagnostics"]
    assert d["severity"] == "info"  # the most specific selector wins
    _pyproject(project, 'severity = { DEV1 = "warning" }')
    import json

    doc = json.loads(devflow("check", "--format", "sarif", cwd=project).out)
    assert doc["runs"][0]["results"][0]["level"] == "warning"
    _pyproject(project, 'severity = { DEV1 = "hint" }')
    doc = json.loads(devflow("check", "--format", "sarif", cwd=project).out)
    assert doc["runs"][0]["results"][0]["level"] == "note"


def test_exclude_and_extend_exclude(devflow, project):
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text((project / "train.py").read_text())
    _pyproject(project, 'extend-exclude = ["legacy/", "train.py"]')
    r = devflow("check", "--format", "json", cwd=project)
    assert r.json()["files_checked"] == 1 and r.code == 0
    # A file named on the command line is checked anyway (as ruff does).
    assert devflow("check", "train.py", cwd=project).code == 1
    # `exclude` replaces the defaults: .venv is then walked.
    (project / ".venv").mkdir()
    (project / ".venv" / "lib.py").write_text("x = 1\n")
    _pyproject(project, 'exclude = ["legacy"]')
    files = devflow("check", "--format", "json", cwd=project).json()["files_checked"]
    assert files == 3  # train.py, clean.py, .venv/lib.py


def test_nearest_pyproject_with_a_devflow_table_wins(devflow, project):
    _pyproject(project, 'ignore = ["DEV101"]')
    sub = project / "pkg"
    sub.mkdir()
    (sub / "train.py").write_text((project / "train.py").read_text())
    (sub / "pyproject.toml").write_text("[tool.devflow]\nselect = ['ALL']\n")
    paths = [d["path"] for d in devflow("check", "--format", "json", cwd=project).json()["diagnostics"]]
    assert paths == ["pkg/train.py"]
    # A pyproject.toml without [tool.devflow] does not stop the search.
    (sub / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    assert devflow("check", cwd=project).code == 0


def test_explicit_config_file(devflow, project, tmp_path_factory):
    other = tmp_path_factory.mktemp("cfg") / "devflow.toml"
    other.write_text('ignore = ["DEV101"]\n')
    assert devflow("check", "--config", other, cwd=project).code == 0
    other.write_text('[tool.devflow]\nignore = ["DEV101"]\n')
    assert devflow("check", "--config", other, cwd=project).code == 0
    r = devflow("check", "--config", other.parent / "missing.toml", cwd=project)
    assert r.code == 2 and "no such config file" in r.err


@pytest.mark.parametrize("body, message", [
    ('selekt = ["DEV1"]', "unknown key 'selekt'"),
    ('select = "DEV1', "invalid TOML"),
    ('severity = { DEV1 = "fatal" }', "'fatal' is not one of error, warning, info, hint"),
    ('ignore = [1]', "expected a list of rule codes"),
    ('exclude = "build"', "expected a list of path patterns"),
    ('per-file-ignores = ["x"]', "expected a table"),
    ('respect-gitignore = "yes"', "expected true or false"),
])
def test_config_errors_exit_2_with_a_clear_message(devflow, project, body, message):
    _pyproject(project, body)
    r = devflow("check", cwd=project)
    assert r.code == 2
    assert r.err.startswith("devflow: error: ") and message in r.err and "pyproject.toml" in r.err
    assert "Traceback" not in r.err and r.out == ""


def test_load_config_api(project):
    assert load_config(project) == Config()  # no [tool.devflow] anywhere above
    _pyproject(project, 'ignore = ["DEV2"]\nseverity = { DEV101 = "warning" }')
    for start in (project, project / "train.py", project / "pyproject.toml", project / "new_unsaved.py"):
        cfg = load_config(start)
        assert cfg.root == str(project.resolve()) and cfg.ignore == ("DEV2",)
        assert cfg.is_enabled("DEV101") and not cfg.is_enabled("DEV201")
        assert cfg.severity_for("DEV101", "error") == "warning"
        assert cfg.severity_for("DEV301", "error") == "error"
    assert cfg.is_excluded(project / ".venv") and cfg.is_excluded(project / "a" / "__pycache__")
    assert not cfg.is_excluded(project / "train.py")
    with pytest.raises(ConfigError):
        load_config(project / "nope.toml")


def test_a_broken_pyproject_that_is_not_ours_is_passed_over(devflow, project):
    (project / "pyproject.toml").write_text("[project\nname = ")
    assert devflow("check", cwd=project).code == 1  # defaults: DEV101 reported
    (project / "pyproject.toml").write_text("[tool.devflow]\nselect = [")
    r = devflow("check", cwd=project)
    assert r.code == 2 and "invalid TOML" in r.err
