"""`devflow run` over the runnable cases of ../shared/corpus/public*, with meta_run.py's CUDA -> meta
rewrite (plain or --strict, as each case was validated): the report names the culprit.

All cases run in one driver process (corpus_driver.py) so torch is imported once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

HERE = Path(__file__).parent

# What the culprit must name (a tensor name, alias or module), from each case's fix_summary.
EXPECTED = {
    "biome-cat-zeros-no-device": None,  # an unnamed torch.zeros(...) temporary: checked by device only
    "bn-created-in-forward": "<BatchNorm2d",
    "ce-weight-cpu": "loss_fn.weight",
    "conv1d-layers-python-list": "model.conv_layers[0]",
    "diffusion-betas-index-cpu": "sqrt_alphas_cumprod",
    "diffusion-sampler-discarded-to": "weights",
    "gpt2-chitchat-discarded-to": "input_ids",
    "lightning-criterions-list-weights": "model.criterions[0]",
    "llms-from-scratch-ch06-out-head": "model.out_head",
    "opensr-test-input-not-moved": "X",
    "pose-demo-model-not-moved": "model.",
    "pose-resume-dataparallel-after-load": "optimizer.state[",
    "predict-model-left-on-cpu-after-load": "clf.model",
    "pypots-eval-path-tensors-cpu": "X_pred",
    "resume-optimizer-loaded-before-to": "optimizer.state[",
    "rope-position-ids-cpu": "position_ids",
    "sac-deterministic-policy-tensor-attrs": "policy.action_scale",
    "skeleton-inference-input-cpu": "x",
    "syncbn-convert-after-cuda": "model.module.encoder",
    "thor-load-gpu-checkpoint-on-cpu": "map_location",
    "tts-guided-attention-arange": "grid_",
    "yolov7-from-which-layer-index": "from_which_layer",
    # public2
    "biotrainer-class-weights": "loss_function",
    "contextualized-eye-no-device": None,  # an unnamed torch.eye(...) temporary: device only
    "dataparallel-force-cpu-device-ids": "model",
    "deepcca-discarded-to": "x1",
    "ema-cpu-shadow-lerp": "ema_v",  # the cpu shadow the model tensor meets in lerp_
    "fourier-positional-arange": "coeffs",  # built from torch.arange(m) without device=
    "frcnn-optimizer-before-cuda-resume": "optimizer.state[",
    "map-location-passed-to-load-state-dict": "map_location",
    "mobilesam-tinyvit-attn-bias-attr": ".ab",
    "multitask-heads-python-list": "model.softmaxes[0]",
    "nerf-pixel-sampler-mask-nonzero-index": "batch['image']",
    "nero-optimizer-eager-state-before-cuda": "optimizer.state[",
    "sagpool-net-not-moved": "model",
    "semicon-similarity-index": "S",
    "timm-reset-classifier-after-to": "model.head",
    "tokenlearner-python-list": "tokenizers[0]",
    "transformer-nopeak-mask-batch-cpu": "trg",
}


def runnable_cases(corpus: Path):
    cases = []
    # every public folder (public, public2, ...): the case ids follow the folders
    for case_json in sorted(corpus.glob("public*/*/case.json")):
        c = json.loads(case_json.read_text())
        v = c.get("validated") or {}
        if not c.get("runnable_offline") or v.get("status") is not True:
            continue
        steps = c.get("validation_steps") or []
        runs = (v.get("runs") or {}).get("buggy")
        if runs:
            checks = [r for r in runs if r.get("role") == "check" and r.get("status") == "error" and r.get("device_error")]
            if not checks:
                continue
            mode, line = checks[0]["mode"], checks[0].get("script_line")
        else:  # validated by hand with --strict (details say so)
            mode, line = "strict", None
        check = [s for s in steps if s.get("role") == "check"]
        cases.append({"id": c["id"], "dir": str(case_json.parent), "mode": mode, "line": line,
                      "args": check[0].get("args", []) if check else [],
                      "setup": [s for s in steps if s.get("role") in ("setup", "fixture")]})
    return cases


@pytest.fixture(scope="module")
def corpus_results(shared_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus_reports")
    cases = runnable_cases(shared_dir / "corpus")
    spec = out / "cases.json"
    spec.write_text(json.dumps(cases))
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, str(HERE / "corpus_driver.py"), str(shared_dir / "corpus/tools/meta_run.py"),
                           str(out), str(spec)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cases, {c["id"]: json.loads((out / f"{c['id']}.json").read_text()) for c in cases}


def test_every_runnable_case_ran(corpus_results):
    cases, results = corpus_results
    assert len(cases) >= 20
    assert set(EXPECTED) == {c["id"] for c in cases}


@pytest.mark.parametrize("case_id", sorted(EXPECTED))
def test_report_names_the_culprit(corpus_results, case_id):
    cases, results = corpus_results
    case = next(c for c in cases if c["id"] == case_id)
    res = results[case_id]
    assert "driver_error" not in res, res["driver_error"]
    assert res["rc"] == 1
    rep = res["report"]
    assert rep["error"]["cross_device"], rep["error"]
    assert rep["location"]["file"] == res["run_path"]
    if case["line"] is not None:
        assert rep["location"]["line"] == case["line"]
    c = rep["culprit"]
    assert c and c["line"] == rep["location"]["line"]
    # the report is printed before the traceback
    assert res["stderr"].index("devflow: device placement report") < res["stderr"].index("Traceback")
    want = EXPECTED[case_id]
    if case_id in ("thor-load-gpu-checkpoint-on-cpu", "map-location-passed-to-load-state-dict"):
        assert want in c["summary"]
        return
    assert c["device"] == "cpu", c
    named = []
    for t in c["tensors"][:4]:
        named += [t["name"] or ""] + t.get("aliases", [])
    named.append(c.get("module") or "")
    if want is not None:
        assert any(want in n for n in named), (named, c["summary"])
