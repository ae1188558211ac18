"""Probe unit tests on real cross-device errors raised on a CPU-only machine: the meta device and
FakeTensorMode fake cuda tensors (no_grad, parameters built directly: autograd/RNG on fake cuda fail)."""

import json
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from devflow.runtime.probe import placement_report, placement_report_json  # noqa: E402
from devflow.runtime.render import render_text  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning)


def raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError("no error raised")


@pytest.fixture(scope="module")
def fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def fake_cuda_linear(mode, i, o):
    lin = nn.Linear(i, o, device="meta")
    with mode:
        lin.weight = nn.Parameter(torch.empty(o, i, device="cuda"))
        lin.bias = nn.Parameter(torch.empty(o, device="cuda"))
    return lin


def names(report):
    c = report["culprit"]
    out = []
    for t in c["tensors"]:
        out.append(t["name"])
        out.extend(t.get("aliases", []))
    return out


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.out_head = nn.Linear(8, 2)

    def forward(self, x):
        return self.out_head(torch.relu(self.body(x)))


def test_head_replaced_after_move_is_the_culprit():
    model = Classifier().to("meta")
    model.out_head = nn.Linear(8, 2)  # added after .to(): stays on cpu
    x = torch.randn(4, 8, device="meta")
    exc = raised(lambda: model(x))
    rep = placement_report(exc)
    c = rep["culprit"]
    assert rep["error"]["parsed"]["family"] == "meta-expected-device"
    assert c["device"] == "cpu" and c["expected_device"] == "meta"
    assert c["module"] == "model.out_head"
    assert {"model.out_head.weight", "model.out_head.bias"} <= set(names(rep))
    assert c["line"] == Classifier.forward.__code__.co_firstlineno + 1
    root = next(m for m in rep["modules"] if m["name"] == "model")
    assert root["split"] is True
    head = next(k for k in root["children"] if k["short"] == "out_head")
    assert head["devices"] == {"cpu": 18}
    # every parameter is listed under its device with its full name
    cpu_names = {t["name"] for t in rep["devices"]["cpu"]["tensors"]}
    meta_names = {t["name"] for t in rep["devices"]["meta"]["tensors"]}
    assert "model.out_head.weight" in cpu_names and "model.body.weight" in meta_names
    text = render_text(rep)
    assert "culprit: model.out_head" in text and "split across devices" in text


def test_optimizer_state_on_another_device():
    model = nn.Linear(4, 2, device="meta")
    optimizer = torch.optim.Adam(model.parameters(), foreach=False)
    for p in model.parameters():  # what load_state_dict before model.to(device) leaves behind
        optimizer.state[p] = {"step": torch.tensor(1.0), "exp_avg": torch.zeros(p.shape),
                              "exp_avg_sq": torch.zeros(p.shape)}
    model(torch.randn(3, 4, device="meta")).sum().backward()
    exc = raised(optimizer.step)
    rep = placement_report(exc)
    c = rep["culprit"]
    assert c["device"] == "cpu" and c["optimizer"] == "optimizer"
    assert c["tensors"][0]["name"].startswith("optimizer.state[model.")
    assert c["tensors"][0]["origin"] == "optimizer-state"
    opt = rep["optimizers"][0]
    assert opt["name"] == "optimizer" and opt["param_devices"] == {"meta": 2}
    bad = {m["name"] for m in opt["mismatches"]}
    assert "optimizer.state[model.weight]['exp_avg']" in bad
    assert not any("'step'" in n for n in bad), "a cpu scalar step is legal"


def test_optimizer_state_on_cpu_params_on_fake_cuda(fake_mode):
    """The real "cpu and cuda:0" message from AdamW.step (single-tensor path; the foreach path
    needs data-dependent values that fake tensors do not have).  Grads are set directly."""
    model = fake_cuda_linear(fake_mode, 4, 2)
    with fake_mode:
        for p in model.parameters():
            p.grad = torch.empty_like(p)
    optimizer = torch.optim.AdamW(model.parameters(), foreach=False)
    for p in model.parameters():  # a checkpoint loaded before the model moved
        optimizer.state[p] = {"step": torch.tensor(3.0), "exp_avg": torch.zeros(p.shape),
                              "exp_avg_sq": torch.zeros(p.shape)}

    def step():
        with fake_mode:
            optimizer.step()

    rep = placement_report(raised(step))
    assert set(rep["error"]["parsed"]["devices"]) == {"cpu", "cuda:0"}
    c = rep["culprit"]
    assert c["device"] == "cpu" and c["expected_device"] == "cuda:0" and c["optimizer"] == "optimizer"
    assert c["tensors"][0]["name"] in ("optimizer.state[model.weight]['exp_avg']",
                                       "optimizer.state[model.weight]['exp_avg_sq']")
    assert rep["optimizers"][0]["param_devices"] == {"cuda:0": 2}
    assert rep["optimizers"][0]["mismatch_count"] == 4


def test_inputs_on_another_device_fake_cuda(fake_mode):
    model = fake_cuda_linear(fake_mode, 4, 4)
    batch = torch.randn(2, 4)  # never moved to cuda

    def step():
        with torch.no_grad(), fake_mode:
            model(batch)

    rep = placement_report(raised(step))
    parsed = rep["error"]["parsed"]
    assert parsed["family"] == "same-device" and set(parsed["devices"]) == {"cpu", "cuda:0"}
    c = rep["culprit"]
    assert c["device"] == "cpu" and c["expected_device"] == "cuda:0"
    assert c["tensors"][0]["name"] == "batch"
    assert rep["devices"]["cuda:0"]["count"] >= 2


def test_loss_weights_fake_cuda(fake_mode):
    class_weights = torch.tensor([1.0, 2.0, 3.0])
    loss_fn = nn.CrossEntropyLoss(weight=class_weights)
    with fake_mode:
        logits = torch.empty(2, 3, device="cuda")
        target = torch.zeros(2, dtype=torch.long, device="cuda")

    def step():
        with torch.no_grad(), fake_mode:
            loss_fn(logits, target)

    rep = placement_report(raised(step))
    c = rep["culprit"]
    assert c["device"] == "cpu" and c["module"] == "loss_fn"
    assert "loss_fn.weight" in names(rep) and "class_weights" in names(rep)


def test_index_tensors_embedding_fake_cuda(fake_mode):
    emb = nn.Embedding(10, 4, device="meta")
    with fake_mode:
        emb.weight = nn.Parameter(torch.empty(10, 4, device="cuda"))
    token_ids = torch.zeros(2, 5, dtype=torch.long)

    def step():
        with torch.no_grad(), fake_mode:
            emb(token_ids)

    rep = placement_report(raised(step))
    c = rep["culprit"]
    assert c["device"] == "cpu" and c["tensors"][0]["name"] == "token_ids"


def test_cpu_tensor_indexed_by_device_indices(shared_dir):
    import importlib.util

    spec = importlib.util.spec_from_file_location("meta_run", shared_dir / "corpus/tools/meta_run.py")
    meta_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(meta_run)
    betas = torch.linspace(1e-4, 0.02, 100)  # schedule left on cpu
    t = torch.zeros(4, dtype=torch.long, device="meta")

    def step():
        with meta_run.make_check_mode(torch):
            betas[t]

    rep = placement_report(raised(step))
    assert rep["error"]["parsed"]["family"] == "index-device"
    assert rep["culprit"]["tensors"][0]["name"] == "betas"
    assert "indexed by indices on another device" in rep["culprit"]["summary"]


def test_grad_scaler_and_plain_attributes_are_reported():
    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.action_scale = torch.ones(3)  # plain attribute: .to() leaves it behind

        def forward(self, x):
            return self.fc(x) * self.action_scale

    policy = Policy().to("meta")
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(torch.ones(()))  # creates its state tensors
    exc = raised(lambda: policy(torch.ones(2, 3, device="meta")))
    rep = placement_report(exc)
    assert rep["culprit"]["tensors"][0]["name"] == "policy.action_scale"
    assert rep["culprit"]["tensors"][0]["origin"] == "attribute"
    assert any(s["name"] == "scaler" for s in rep["scalers"])
    del scaler


def test_caps_keep_the_report_bounded():
    many = [torch.zeros(1, device="meta") for _ in range(500)]  # noqa: F841 - live tensors
    model = nn.Linear(2, 2)
    exc = raised(lambda: model(torch.ones(1, 2, device="meta")))
    rep = placement_report(exc, max_names=20)
    meta = rep["devices"]["meta"]
    assert meta["count"] >= 500 and len(meta["tensors"]) == 20 and meta["unlisted"] >= 480
    assert rep["truncated"] is True
    doc = placement_report_json(exc, max_names=20)
    assert len(doc) < 200_000
    json.loads(doc)


def test_not_a_device_error_has_no_culprit():
    rep = placement_report(ValueError("bad shape"))
    assert rep["error"]["cross_device"] is False and rep["culprit"] is None


def test_without_torch_loaded_the_probe_says_so(repo_root):
    code = ("import sys, json; from devflow.runtime.probe import placement_report_json;"
            "r = json.loads(placement_report_json(RuntimeError('Expected all tensors to be on the same device, "
            "but found at least two devices, cuda:0 and cpu!')));"
            "assert 'torch' not in sys.modules; print(json.dumps(r))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rep = json.loads(out.stdout)
    assert rep["torch"] is None and "torch is not loaded" in rep["notes"][0]
    assert rep["error"]["parsed"]["devices"] == ["cuda:0", "cpu"]


def test_probe_errors_are_reported_not_raised(monkeypatch):
    import devflow.runtime.probe as probe

    monkeypatch.setattr(probe, "_frames_from_exc", lambda exc: 1 / 0)
    rep = json.loads(probe.placement_report_json(RuntimeError("x")))
    assert "ZeroDivisionError" in rep["probe_error"]


def test_newest_wording_names_the_argument(fake_mode):
    """torch >= 2.8 says which argument is odd: 'but got weight is on cpu, different from other
    tensors on cuda:0'.  Raised here by hand with real placements around it."""
    criterion = nn.NLLLoss(weight=torch.ones(3))
    scale = torch.ones(3)  # another cpu tensor in scope that is not the culprit  # noqa: F841
    with fake_mode:
        log_probs = torch.empty(2, 3, device="cuda")
        target = torch.zeros(2, dtype=torch.long, device="cuda")

    def nll_loss_forward(input, target, weight):
        raise RuntimeError("Expected all tensors to be on the same device, but got weight is on cpu, different "
                           "from other tensors on cuda:0 (when checking argument in method "
                           "wrapper_CUDA_nll_loss_forward)")

    rep = placement_report(raised(lambda: nll_loss_forward(log_probs, target, criterion.weight)))
    c = rep["culprit"]
    assert (c["device"], c["expected_device"], c["argument"], c["op"]) == \
        ("cpu", "cuda:0", "weight", "wrapper_CUDA_nll_loss_forward")
    assert c["tensors"][0]["name"] == "criterion.weight"
