"""`devflow dryrun`: real torch (CPU build), real subprocess runs of real scripts.

Scripts with several independent mixes must have all of them reported in one run; scripts with
data-dependent control flow must behave as a plain run does; the corpus runs in test_corpus.py."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("torch")

SCRIPTS = Path(__file__).parent / "scripts"

# script -> the lines (of that script) where a mix must be reported, and the codes
MULTI = {
    "multi_train_loop.py": {14: "DEV901", 16: "DEV901", 18: "DEV901"},
    "multi_model_parts.py": {14: "DEV901", 16: "DEV901", 28: "DEV901"},
    "multi_indexing.py": {7: "DEV902", 10: "DEV901", 11: "DEV901"},
    "multi_resume.py": {21: "DEV901", 26: "DEV901", 28: "DEV901"},
    "amp_fused_dataloader.py": {17: "DEV901"},
    "multi_data_dependent.py": {21: "DEV901"},  # line 27: a cuda tensor, a cpu mask: allowed
}


def dryrun(*args: str, cwd: Path = SCRIPTS, timeout: int = 180) -> tuple[dict, subprocess.CompletedProcess]:
    proc = subprocess.run([sys.executable, "-m", "devflow.dryrun", "--format", "json", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    return json.loads(proc.stdout), proc


@pytest.fixture(scope="module")
def multi_results():
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(MULTI, pool.map(lambda s: dryrun("--no-static", s), MULTI)))


@pytest.mark.parametrize("script", list(MULTI))
def test_every_mix_reported_in_one_run(multi_results, script):
    doc, proc = multi_results[script]
    got = {(d["line"], d["code"]) for d in doc["diagnostics"] if Path(d["path"]).name == script}
    want = set(MULTI[script].items())
    assert want <= got, (script, sorted(got), proc.stderr[-2000:])
    # nothing else: no echo of a mix in backward, no false alarm on the correct lines
    assert got == want, (script, sorted(got - want))
    assert doc["status"]["state"] in ("finished", "stopped"), doc["status"]
    assert proc.returncode == 1


def test_findings_carry_origins_counts_and_cuda_wording(multi_results):
    doc, _ = multi_results["multi_train_loop.py"]
    by_line = {d["line"]: d for d in doc["diagnostics"]}
    weight = by_line[14]
    assert weight["message"] == ("Expected all tensors to be on the same device, but got weight is on cpu, different "
                                 "from other tensors on cuda:0 (when checking argument in method "
                                 "wrapper_CUDA_nll_loss_forward)")
    assert weight["count"] == 4  # every iteration of the loop runs (steps past --max-steps change nothing)
    ops = {o["name"]: o for o in weight["operands"]}
    assert ops["weight"]["device"] == "cpu"
    assert ops["weight"]["origins"][0] == {"kind": "created", "path": str(SCRIPTS / "multi_train_loop.py"), "line": 9}
    assert any(r["line"] == 9 for r in weight["related"])
    assert by_line[16]["message"] == ("Expected all tensors to be on the same device, but found at least two devices, "
                                      "cuda:0 and cpu!")


def _plain(script: str) -> str:
    return subprocess.run([sys.executable, script], cwd=SCRIPTS, capture_output=True, text=True, timeout=120).stdout


def test_data_dependent_control_flow_as_on_a_gpu():
    # Early stopping on a loss value, .item() in a condition, boolean masks and nonzero() give the
    # same values as a plain cpu run of the same script: the data is real.
    doc, proc = dryrun("--no-static", "--max-steps", "0", "multi_data_dependent.py")
    plain = _plain("multi_data_dependent.py")
    assert "early stop at epoch" in plain
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith(("early stop", "selected"))] == \
        [ln for ln in plain.splitlines() if ln.startswith(("early stop", "selected"))]
    assert doc["status"]["state"] == "finished"


def test_text_format_and_static_fix(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = nn.Linear(4, 2).to(device)\n"
        "x = torch.randn(3, 4)\n"
        "print(model(x).shape)\n")
    proc = subprocess.run([sys.executable, "-m", "devflow", "dryrun", str(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "train.py:7:1: DEV901" in proc.stdout
    assert "static rule DEV201 (line 6)" in proc.stdout  # the static rule on the cause line, with its fix
    assert "fix: Create it on the right device" in proc.stdout
    assert "the script ran to its end" in proc.stdout
    assert "torch.Size([3, 2])" in proc.stdout


def test_sarif_and_module_mode(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text("import torch\nt = torch.zeros(3, device='cuda') + torch.ones(3)\n")
    proc = subprocess.run([sys.executable, "-m", "devflow.dryrun", "--format", "sarif", "-m", "pkg.main"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    sarif = json.loads(proc.stdout)
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["DEV901"]
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]} >= {"DEV901", "DEV907"}


def test_timeout_and_clean_exit(tmp_path):
    loop = tmp_path / "loop.py"
    loop.write_text("import torch\nx = torch.ones(2, device='cuda')\nwhile True:\n    x = x * 1\n")
    doc, proc = dryrun("--timeout", "3", str(loop), cwd=tmp_path)
    assert doc["status"]["state"] == "stopped" and "timeout" in doc["status"]["reason"]
    assert proc.returncode == 0 and doc["diagnostics"] == []


def test_script_error_ends_with_a_summary(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nx = torch.ones(2).cuda()\nraise ValueError('boom')\n")
    doc, proc = dryrun(str(bad), cwd=tmp_path)
    assert doc["status"]["state"] == "error"
    assert doc["status"]["exception"] == "ValueError: boom" and doc["status"]["line"] == 3
    assert "ValueError: boom" in proc.stderr  # the traceback, as python prints it


def test_without_torch_says_how_to_install(monkeypatch, capsys):
    import importlib.util

    from devflow.dryrun import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert cli.main([str(SCRIPTS / "multi_indexing.py")]) == 2
    err = capsys.readouterr().err
    assert "PyTorch is not installed" in err and "pip install torch" in err


def test_usage_errors(capsys):
    from devflow.dryrun import cli

    assert cli.main([]) == 2
    assert cli.main(["/no/such/script.py"]) == 2
    assert "no such file" in capsys.readouterr().err
