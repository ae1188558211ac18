"""End-to-end debug session: a target under `python -m debugpy --listen ... --wait-for-client` stops
on an uncaught cross-device error; we speak DAP to it (initialize, attach, setExceptionBreakpoints,
configurationDone, stopped, exceptionInfo, stackTrace, evaluate with the shared expression) and
check the report; the session then terminates normally.

Set DEVFLOW_RECORD_DAP=1 to rewrite tests/fixtures/dap/uncaught_head_on_cpu.json (the recorded
exchange the TypeScript tracker tests replay)."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("debugpy")

from devflow.runtime.dap_expression import TS_PATH, build_expression, render_ts, source_digest  # noqa: E402

from .dap_client import DapClient  # noqa: E402

TARGET = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 8)
            self.out_head = nn.Linear(8, 2)

        def forward(self, x):
            return self.out_head(torch.relu(self.body(x)))


    def main():
        model = Classifier().to("meta")
        model.out_head = nn.Linear(8, 2)  # replaced after .to(): stays on cpu
        batch = torch.randn(4, 8, device="meta")
        return model(batch)


    main()
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_generated_typescript_expression_is_current(repo_root):
    path = repo_root / TS_PATH
    assert path.read_text(encoding="utf-8") == render_ts(), \
        "run: python -m devflow.runtime.dap_expression --write-ts"


def test_debugpy_session_reports_placement_and_terminates(tmp_path, repo_root):
    script = tmp_path / "train.py"
    script.write_text(TARGET)
    port = free_port()
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYDEVD_DISABLE_FILE_VALIDATION="1")
    # The debuggee must not be able to import devflow: the expression injects the probe's source.
    env.pop("PYTHONPATH", None)
    # Output goes to files, not pipes: debugpy's adapter subprocess inherits them and can outlive
    # the debuggee, so reading a pipe to EOF could wait for it indefinitely.
    out_path, err_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
        proc = subprocess.Popen([sys.executable, "-I", "-m", "debugpy", "--listen", f"127.0.0.1:{port}",
                                 "--wait-for-client", str(script)], cwd=tmp_path, env=env,
                                stdout=out_f, stderr=err_f, stdin=subprocess.DEVNULL)
    client = None
    # Watchdog: whatever goes wrong, the debuggee dies and every wait below ends.
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        client = DapClient("127.0.0.1", port)
        init = client.request("initialize", {"clientID": "devflow-test", "adapterID": "debugpy",
                                             "linesStartAt1": True, "columnsStartAt1": True,
                                             "pathFormat": "path", "supportsRunInTerminalRequest": False})
        assert init["success"]
        filters = {f["filter"] for f in init["body"]["exceptionBreakpointFilters"]}
        assert "uncaught" in filters
        attach_seq = client.send("attach", {"justMyCode": True})
        client.event("initialized")
        assert client.request("setExceptionBreakpoints", {"filters": ["uncaught"]})["success"]
        assert client.request("configurationDone")["success"]
        assert client.response(attach_seq)["success"]

        stopped = client.event("stopped", timeout=120)
        assert stopped["body"]["reason"] == "exception"
        thread_id = stopped["body"]["threadId"]
        info = client.request("exceptionInfo", {"threadId": thread_id})
        assert "is not on the expected device" in info["body"]["description"]
        frames = client.request("stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": 20})
        top = frames["body"]["stackFrames"][0]
        expression = build_expression()
        ev = client.request("evaluate", {"expression": expression, "frameId": top["id"], "context": "repl",
                                         "format": {"rawString": True}}, timeout=120)
        assert ev["success"], ev
        report = json.loads(ev["body"]["result"])
        c = report["culprit"]
        assert c["module"] == "model.out_head" and c["device"] == "cpu" and c["expected_device"] == "meta"
        assert c["file"] == str(script) and c["line"] == 12
        assert report["modules"][0]["name"] == "model" and report["modules"][0]["split"]
        assert "devflow" not in json.dumps(report["frames"])  # no devflow frames leak into the report

        # The debuggee is undisturbed: it continues and ends as it would have (exit status 1).
        assert client.request("continue", {"threadId": thread_id})["success"]
        client.event("terminated", timeout=120)
        recording = list(client.transcript)
    finally:
        if client:
            client.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        watchdog.cancel()
    assert proc.returncode == 1
    stderr = err_path.read_text()
    assert "Tensor on device cpu is not on the expected device meta!" in stderr
    if os.environ.get("DEVFLOW_RECORD_DAP"):
        write_fixture(repo_root / "tests/fixtures/dap/uncaught_head_on_cpu.json", recording, script, expression)


def write_fixture(path: Path, transcript: list, script: Path, expression: str):
    """Store the exchange with the (large) probe expression replaced by a digest marker."""
    marker = f"<devflow probe expression {source_digest()}>"
    text = json.dumps(transcript, indent=1).replace(json.dumps(expression)[1:-1], marker)
    text = text.replace(str(script.parent), "/workspace")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")
