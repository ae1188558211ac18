"""Each rule's severity (registry) reaches the JSON and SARIF outputs: error when the line raises a
cross-device error, warning when it fails only elsewhere."""

from __future__ import annotations

import json

from devflow.rules import RULES

BOTH = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
model.load_state_dict(torch.load("weights.pt"))
model.head = nn.Linear(4, 2)
'''


def test_every_rule_has_a_severity():
    assert {r.severity for r in RULES.values()} == {"error", "warning"}
    assert RULES["DEV301"].severity == "warning" and RULES["DEV402"].severity == "warning"
    assert RULES["DEV101"].severity == "error" and RULES["DEV201"].severity == "error"


def test_json_output_carries_the_rule_severity(devflow, tmp_path):
    (tmp_path / "t.py").write_text(BOTH)
    out = devflow("check", "--output-format", "json", "t.py", cwd=tmp_path).json()
    rows = out if isinstance(out, list) else out.get("diagnostics", out)
    got = {d["code"]: d["severity"] for d in rows}
    assert got == {"DEV301": "warning", "DEV101": "error"}


def test_sarif_levels_and_rule_defaults(devflow, tmp_path):
    (tmp_path / "t.py").write_text(BOTH)
    sarif = json.loads(devflow("check", "--output-format", "sarif", "t.py", cwd=tmp_path).out)
    run = sarif["runs"][0]
    assert {r["ruleId"]: r["level"] for r in run["results"]} == {"DEV301": "warning", "DEV101": "error"}
    defaults = {r["id"]: r["defaultConfiguration"]["level"] for r in run["tool"]["driver"]["rules"]}
    assert defaults["DEV301"] == "warning" and defaults["DEV503"] == "warning" and defaults["DEV101"] == "error"


def test_config_severity_still_overrides(devflow, tmp_path):
    (tmp_path / "t.py").write_text(BOTH)
    (tmp_path / "pyproject.toml").write_text('[tool.devflow]\nseverity = { DEV301 = "error", DEV1 = "info" }\n')
    out = devflow("check", "--output-format", "json", "t.py", cwd=tmp_path).json()
    rows = out if isinstance(out, list) else out.get("diagnostics", out)
    assert {d["code"]: d["severity"] for d in rows} == {"DEV301": "error", "DEV101": "info"}
