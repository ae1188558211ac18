"""`nn.Parameter(x).float()` returns the Parameter itself when it has that dtype already, so it is
registered and moved with its module: never a plain tensor attribute (field: an RMSNorm in a
notebook). A plain tensor converted the same way still is one."""

from __future__ import annotations

from pathlib import Path

from devflow.engine import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "parameter_dtype_conversion.py"


def test_parameter_converted_is_a_parameter_a_tensor_is_not():
    r = analyze(FIXTURE.read_text(), str(FIXTURE))
    assert sorted({(d.code, d.span.line) for d in r.diagnostics}) == [("DEV105", 19), ("DEV201", 19)]
