"""Files that cannot be checked are reported as such (E902 / E999), in every format, and the
other files are still checked."""

from __future__ import annotations

import json
import os

import pytest
from cli_support import CANONICAL, CANONICAL_LINE, validate_sarif


def _errors(devflow, folder) -> dict[str, dict]:
    doc = devflow("check", "--format", "json", cwd=folder).json()
    return {e["path"]: e for e in doc["errors"]}


def test_syntax_error_is_e999_and_the_rest_is_checked(devflow, project):
    (project / "broken.py").write_text("import torch\n\ndef f(:\n    pass\n")
    r = devflow("check", cwd=project)
    assert r.code == 1
    lines = r.out.splitlines()
    assert lines[0].startswith("broken.py:3:") and " E999 " in lines[0] and "syntax" in lines[0].lower()
    assert any(line.startswith(f"train.py:{CANONICAL_LINE}:1: DEV101") for line in lines)
    assert lines[-2] == "Found 2 errors."
    err = _errors(devflow, project)["broken.py"]
    assert err["code"] == "E999" and err["line"] == 3 and err["severity"] == "error"
    sarif = json.loads(devflow("check", "--format", "sarif", cwd=project).out)
    validate_sarif(sarif)
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"E999", "DEV101"}


def test_invalid_utf8_is_e902(devflow, tmp_path):
    (tmp_path / "bytes.py").write_bytes(b"import torch\nname = 'caf\xe9'\n")
    (tmp_path / "ok.py").write_text(CANONICAL)
    r = devflow("check", cwd=tmp_path)
    assert r.code == 1
    assert r.out.splitlines()[0] == ("bytes.py:1:1: E902 cannot decode file as utf-8: invalid byte 0xe9 at line 2, "
                                     "column 12 (declare the encoding with a `# -*- coding: ... -*-` line)")
    assert "ok.py:7:1: DEV101" in r.out


def test_declared_latin1_is_decoded(devflow, tmp_path):
    src = "# -*- coding: latin-1 -*-\n" + CANONICAL + "label = 'café'\n"
    (tmp_path / "latin.py").write_bytes(src.encode("latin-1"))
    r = devflow("check", "--format", "json", cwd=tmp_path)
    assert r.json()["errors"] == []
    assert [(d["code"], d["line"]) for d in r.json()["diagnostics"]] == [("DEV101", CANONICAL_LINE + 1)]


def test_unknown_declared_encoding_is_e902(devflow, tmp_path):
    (tmp_path / "enc.py").write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    err = _errors(devflow, tmp_path)["enc.py"]
    assert err["code"] == "E902" and "klingon" in err["message"]


def test_utf8_bom_is_fine(devflow, tmp_path):
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + CANONICAL.encode())
    doc = devflow("check", "--format", "json", cwd=tmp_path).json()
    assert doc["errors"] == [] and doc["diagnostics"][0]["line"] == CANONICAL_LINE


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_e902(devflow, project):
    target = project / "secret.py"
    target.write_text("x = 1\n")
    target.chmod(0)
    try:
        r = devflow("check", cwd=project)
    finally:
        target.chmod(0o644)
    assert r.code == 1
    assert "secret.py:1:1: E902 cannot read file: Permission denied" in r.out
    assert "train.py:7:1: DEV101" in r.out


def test_unreadable_file_is_e902_even_as_root(devflow, project, monkeypatch):
    # As root, chmod 0 does not stop reads: simulate the OS refusing this one file.
    from pathlib import Path

    real = Path.read_bytes

    def read_bytes(self):
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    (project / "secret.py").write_text("x = 1\n")
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    r = devflow("check", "--jobs", "1", cwd=project)
    assert r.code == 1 and "secret.py:1:1: E902 cannot read file: Permission denied" in r.out


def test_missing_path_is_e902(devflow, project):
    r = devflow("check", "nope.py", "train.py", cwd=project)
    assert r.code == 1
    assert r.out.splitlines()[0] == "nope.py:1:1: E902 no such file or directory"
    assert "train.py:7:1: DEV101" in r.out


def test_folder_without_python_files(devflow, tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    r = devflow("check", cwd=tmp_path)
    assert r.code == 0 and "no Python files" in r.err


def test_empty_and_whitespace_files(devflow, tmp_path):
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "blank.py").write_text("\n\n   \n")
    (tmp_path / "comment.py").write_text("# only a comment")
    r = devflow("check", cwd=tmp_path)
    assert r.code == 0 and r.out == "All checks passed!\n"


def test_null_bytes_and_deep_nesting_never_crash(devflow, tmp_path):
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    (tmp_path / "deep.py").write_text("x = " + "-" * 50_000 + "1\n")
    (tmp_path / "parens.py").write_text("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    (tmp_path / "ok.py").write_text(CANONICAL)
    r = devflow("check", "--format", "json", cwd=tmp_path)
    assert r.code == 1 and "Traceback" not in r.err
    doc = r.json()
    assert doc["files_checked"] == 4
    assert [d["path"] for d in doc["diagnostics"]] == ["ok.py"]
    for e in doc["errors"]:
        assert e["code"] in ("E000", "E902", "E999") and e["message"]


def test_huge_file(devflow, tmp_path):
    body = "".join(f"def f{i}(x):\n    return x * {i} + 1\n\n" for i in range(15_000))  # 45k lines
    (tmp_path / "huge.py").write_text(body + CANONICAL)
    doc = devflow("check", "--format", "json", cwd=tmp_path).json()
    assert [(d["code"], d["line"]) for d in doc["diagnostics"]] == [("DEV101", 45_000 + CANONICAL_LINE)]


def test_non_ascii_columns_count_code_points(devflow, tmp_path):
    src = CANONICAL.replace("model.head", "modèle = 1; model.head")
    (tmp_path / "w.py").write_bytes(src.encode())
    (d,) = devflow("check", "--format", "json", cwd=tmp_path).json()["diagnostics"]
    # Columns count code points: "modèle = 1; " is 12 characters (13 UTF-8 bytes).
    assert (d["line"], d["column"]) == (CANONICAL_LINE, 13)


def test_crlf_line_endings(devflow, tmp_path):
    (tmp_path / "w.py").write_bytes(CANONICAL.replace("\n", "\r\n").encode())
    (d,) = devflow("check", "--format", "json", cwd=tmp_path).json()["diagnostics"]
    assert (d["line"], d["column"], d["end_line"]) == (CANONICAL_LINE, 1, CANONICAL_LINE)
