"""`devflow run` (via `python -m devflow.runtime`, and devflow.runtime.cli.main) end to end."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

DEVICE_SCRIPT = textwrap.dedent("""\
    import sys
    import torch
    import torch.nn as nn

    print("name", __name__, "argv", sys.argv[1:])
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).to("meta")
    model.append(nn.Linear(4, 2))  # appended after the move: left on cpu
    batch = torch.randn(3, 4, device="meta")
    model(batch)
""")


def run(args, cwd, env_extra=None, module="devflow.runtime"):
    env = dict(os.environ, PYTHONWARNINGS="ignore", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                          text=True, env=env, timeout=120)


def test_device_error_prints_report_before_traceback_and_writes_json(tmp_path):
    (tmp_path / "train.py").write_text(DEVICE_SCRIPT)
    out = run(["--report-json", "rep.json", "train.py", "--lr", "3"], tmp_path)
    assert out.returncode == 1
    assert "name __main__ argv ['--lr', '3']" in out.stdout
    err = out.stderr
    assert err.index("devflow: device placement report") < err.index("Traceback (most recent call last)")
    assert "culprit: model.2.bias" in err or "culprit: model.2.weight" in err
    assert "RuntimeError: Tensor on device cpu is not on the expected device meta!" in err
    # the traceback starts in the user's script, as python's would
    tb = err[err.index("Traceback"):]
    assert tb.splitlines()[1].strip().startswith('File "') and "train.py" in tb.splitlines()[1]
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert rep["culprit"]["module"] == "model.2" and rep["culprit"]["line"] == 9
    assert rep["location"]["file"].endswith("train.py")


def test_torchrun_rank_is_carried(tmp_path):
    (tmp_path / "train.py").write_text(DEVICE_SCRIPT)
    # through the top-level CLI's dispatch: python -m devflow run ...
    out = run(["run", "--report-json=rep.json", "train.py"], tmp_path,
              {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}, module="devflow")
    assert out.returncode == 1 and "(rank 1 of 2)" in out.stderr
    rep = json.loads((tmp_path / "rep.rank1.json").read_text())
    assert rep["rank"] == {"rank": 1, "local_rank": 1, "world_size": 2}


def test_exit_status_other_errors_and_bad_usage(tmp_path, monkeypatch, capsys):
    from devflow.runtime.cli import main

    (tmp_path / "ok.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "value.py").write_text("raise ValueError('not about devices')\n")
    (tmp_path / "clean.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["ok.py"]) == 3
    assert main(["clean.py"]) == 0
    assert main(["value.py"]) == 1
    err = capsys.readouterr().err
    assert "ValueError: not about devices" in err and "placement report" not in err
    (tmp_path / "syntax.py").write_text("x = (\n")
    assert main(["syntax.py"]) == 1
    err = capsys.readouterr().err
    assert "SyntaxError" in err and "runpy" not in err and "Traceback" not in err
    (tmp_path / "app").mkdir()
    assert main(["app"]) == 1
    (tmp_path / "app" / "__main__.py").write_text("import sys\nsys.exit(len(sys.argv))\n")
    assert main(["app", "x", "y"]) == 3
    assert main(["missing.py"]) == 2
    assert main(["--report-json"]) == 2
    assert main([]) == 2
    assert main(["--help"]) == 0
    assert "no such file" in capsys.readouterr().err


def test_install_excepthook(tmp_path):
    code = DEVICE_SCRIPT.replace("import sys\n", "import sys\nimport devflow.runtime\ndevflow.runtime.install()\n")
    (tmp_path / "nb.py").write_text(code)
    out = subprocess.run([sys.executable, "nb.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert out.returncode == 1
    assert out.stderr.index("devflow: device placement report") < out.stderr.index("Traceback")
