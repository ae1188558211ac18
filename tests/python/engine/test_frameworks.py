"""Frameworks users run around torch (issue 10, capability 6): tests/fixtures/engine/frameworks/<case>/
holds a small project (one or more files); every .py file is checked by path (its imports of the other
files resolve) and the findings must be exactly `expect.txt` ("file:LINE CODE"; empty: clean). Each
buggy case has a `_clean` twin, the same code fixed. Written for these tests, not corpus copies:
Lightning steps and hooks, generate() logits processors / stopping criteria, torch.jit.trace,
torch.distributions, torch.Generator, pack_padded_sequence lengths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devflow.analysis import framework_api as F
from devflow.api import check_path
from project_fixtures import findings
from devflow.engine import analyze

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "frameworks"
KNOWLEDGE = Path(__file__).resolve().parents[3] / "server" / "devflow" / "knowledge" / "frameworks.json"


def _findings(case: Path) -> list[str]:
    return findings(case)


NAMES = sorted(p.name for p in CASES.iterdir() if (p / "expect.txt").exists())


@pytest.mark.parametrize("name", NAMES)
def test_framework_case(name):
    case = CASES / name
    want = sorted(line for line in (case / "expect.txt").read_text().splitlines() if line.strip())
    assert _findings(case) == want


def test_every_bug_has_a_clean_twin():
    buggy = [n for n in NAMES if (CASES / n / "expect.txt").read_text().strip()]
    assert buggy and all(f"{n}_clean" in NAMES for n in buggy if n not in ("lightning_before_transfer_on_device",
                                                                            "generator_in_sampler_class"))


def test_tables_come_from_the_generated_knowledge():
    data = json.loads(KNOWLEDGE.read_text())
    assert data["_header"]["generated_by"].startswith("tools/knowledge/generate.py")
    assert {"loc", "scale"} <= set(F.DISTRIBUTIONS["Normal"]["params"])
    assert "log_prob" in F.DIST_VALUE_METHODS and "rsample" in F.DIST_SAMPLE_METHODS
    assert {"randn", "randperm", "multinomial"} <= F.GENERATOR_FUNCTIONS and "normal_" in F.GENERATOR_METHODS
    assert F.CPU_LENGTHS["nn.utils.rnn.pack_padded_sequence"]["param"] == "lengths"
    assert "jit.trace" in F.TRACE_FUNCTIONS
    assert "training_step" in F.LIGHTNING_AFTER_TRANSFER and "on_before_batch_transfer" in F.LIGHTNING_BEFORE_TRANSFER
    assert F.LIGHTNING_TRANSFER == "transfer_batch_to_device"
    assert F.GENERATION_CALLBACKS["LogitsProcessor"]["params"] == ["input_ids", "scores"]


def test_messages_and_fixes():
    src = (CASES / "generator_cpu_for_cuda" / "noise.py").read_text()
    (d, _) = analyze(src).diagnostics
    assert d.code == "DEV205" and "Expected a 'cuda' device type for generator" in d.message
    from devflow.edits import apply_edits
    fixed = apply_edits(src, d.fix.edits)
    assert "g = torch.Generator(device=device)" in fixed and analyze(fixed).diagnostics == []
    src = (CASES / "pack_lengths_on_cuda" / "rnn_train.py").read_text()
    (d,) = analyze(src).diagnostics
    assert "pack_padded_sequence(self.emb(tokens), lengths.cpu()" in apply_edits(src, d.fix.edits)
    src = (CASES / "hf_logits_processor_mask" / "generate_text.py").read_text()
    (d,) = analyze(src).diagnostics
    assert "device=scores.device" in apply_edits(src, d.fix.edits)
    src = (CASES / "lightning_noise_in_step" / "module.py").read_text()
    (d,) = analyze(src).diagnostics
    assert "device=clean.device" in apply_edits(src, d.fix.edits)


def test_torch_tables_are_what_the_installed_torch_gives():
    """The torch part of frameworks.json is re-derived from the installed torch (the wheel scans need
    downloads: `make knowledge-check` covers them)."""
    import sys

    sys.path.insert(0, str(KNOWLEDGE.parents[3] / "tools"))
    try:
        from knowledge import frameworks
    finally:
        sys.path.pop(0)
    data = json.loads(KNOWLEDGE.read_text())
    fresh = json.loads(json.dumps(frameworks.torch_tables()))
    for key in ("distributions", "generators", "cpu_lengths", "trace"):
        assert fresh[key] == data[key], key


def test_transformers_own_processors_are_clean(tmp_path):
    """Precision on real code: transformers' own logits processors and stopping criteria (from the pinned
    wheel `make knowledge` downloads), seen as a user's subclasses of the generate() callback bases, build
    their tensors on `scores.device` / `input_ids.device`: no finding, and their inputs are on that device."""
    import zipfile

    wheels = sorted((KNOWLEDGE.parents[3] / ".cache" / "knowledge").glob(f"transformers-{F.VERSIONS['transformers'][0]}-*.whl"))
    if not wheels:
        pytest.skip("the transformers wheel is downloaded by `make knowledge`")
    seen = 0
    with zipfile.ZipFile(wheels[0]) as z:
        for mod, base in (("logits_process", "LogitsProcessor"), ("stopping_criteria", "StoppingCriteria")):
            src = z.read(f"transformers/generation/{mod}.py").decode()
            src = src.replace(f"class {base}:", "class _Base:").replace(f"class {base}(ABC):", "class _Base(ABC):")
            path = tmp_path / f"{mod}.py"
            path.write_text(f"from transformers import {base}\n" + src)
            result = check_path(str(path))
            assert result.diagnostics == [] and not result.rule_errors
            seen += sum(h.device in ("`scores.device`", "`input_ids.device`") for h in result.hints)
    assert seen > 100
