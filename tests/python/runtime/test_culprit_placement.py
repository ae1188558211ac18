"""The culprit is decided from the placement (where the model, the optimizer and the moved inputs
are), never from which argument the message happens to name first.

Every real CUDA message of ../shared/corpus/gpu/h100_runs.json is raised over a placement built to
match its case (fake cuda tensors from FakeTensorMode, cpu tensors), with the culprit written down
from the case's fix_summary; every wording of ../shared/corpus/error_messages.txt is raised over a
"head left on cpu" placement with its devices in both orders; and the meta / fake-cuda scenarios
run for real both ways (majority on cpu with the odd part on the accelerator, and the reverse)."""

from __future__ import annotations

import json
import re
import types
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from devflow.runtime.messages import parse_message  # noqa: E402
from devflow.runtime.probe import placement_report  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning)


@pytest.fixture(scope="module")
def fake():
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def tensor(mode, dev, *shape):
    if dev == "cpu":
        return torch.zeros(*shape)
    if dev == "meta":
        return torch.empty(*shape, device="meta")
    with mode:
        return torch.empty(*shape, device="cuda")


def linear(mode, dev, i, o):
    lin = nn.Linear(i, o, device="meta")
    lin.weight = nn.Parameter(tensor(mode, dev, o, i), requires_grad=False)
    lin.bias = nn.Parameter(tensor(mode, dev, o), requires_grad=False)
    return lin


def raise_in(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError("no error raised")


class Net(nn.Module):
    """A body (big) and whatever the scenario adds; forward raises the scenario's message."""

    def __init__(self, mode, dev):
        super().__init__()
        self.body = linear(mode, dev, 64, 64)
        self.message = ""

    def forward(self, x):
        h = x  # noqa: F841 - a local the probe sees, like a real forward
        raise RuntimeError(self.message)


# --- scenarios: each returns the exception, raised with the real message over that placement -----

def head(mode, msg, name, acc="cuda"):
    model = Net(mode, acc)
    setattr(model, name, linear(mode, "cpu", 64, 2))  # replaced after the move: left on cpu
    model.message = msg
    x = tensor(mode, acc, 4, 64)
    return raise_in(lambda: model(x))


def head_list(mode, msg, name, acc="cuda"):
    model = Net(mode, acc)
    setattr(model, name, [linear(mode, "cpu", 64, 2), linear(mode, "cpu", 64, 2)])  # a plain list
    model.message = msg
    x = tensor(mode, acc, 4, 64)
    return raise_in(lambda: model(x))


def loss_weight(mode, msg, name, acc="cuda"):
    model = Net(mode, acc)
    out = tensor(mode, acc, 4, 2)
    src = (f"def f(model, out, msg):\n    {name} = nn.CrossEntropyLoss(weight=torch.ones(2))\n"
           f"    raise RuntimeError(msg)\n")  # class weights never moved
    g = {"torch": torch, "nn": nn, "RuntimeError": RuntimeError}
    exec(compile(src, __file__, "exec"), g)
    return raise_in(lambda: g["f"](model, out, msg))


def model_not_moved(mode, msg, name, acc="cuda"):
    x = tensor(mode, acc, 4, 64)  # the input was moved, the model was not
    if "." in name:
        clf = types.SimpleNamespace(model=Net(mode, "cpu"))
        clf.model.message = msg

        def predict(clf, x):
            return clf.model(x)
        return raise_in(lambda: predict(clf, x))
    model = Net(mode, "cpu")
    model.message = msg
    return raise_in(lambda: model(x))


def local(mode, msg, name, acc="cuda"):
    model = Net(mode, acc)
    x = tensor(mode, acc, 4, 64)
    # a real local of that name in the failing frame, created without device=
    src = f"def f(model, x, msg):\n    {name} = torch.zeros(4, 64)\n    raise RuntimeError(msg)\n"
    g = {"torch": torch, "RuntimeError": RuntimeError}
    exec(compile(src, __file__, "exec"), g)
    return raise_in(lambda: g["f"](model, x, msg))


def attribute(mode, msg, name, acc="cuda"):
    model = Net(mode, acc)
    setattr(model, name, torch.ones(64))  # a plain tensor attribute: Module.to() skips it
    model.message = msg
    x = tensor(mode, acc, 4, 64)
    return raise_in(lambda: model(x))


def optimizer_state(mode, msg, name, acc="cuda"):
    model = Net(mode, acc)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for p in model.parameters():  # momentum loaded on cpu (optimizer built before the move)
        optimizer.state[p]["momentum_buffer"] = torch.zeros(tuple(p.shape))

    def train_step(model, optimizer):
        raise RuntimeError(msg)
    return raise_in(lambda: train_step(model, optimizer))


def indexed(mode, msg, name, acc="cuda"):
    src = (f"def f(msg, idx):\n    {name} = torch.zeros(10)\n    raise RuntimeError(msg)\n")
    g = {"torch": torch, "RuntimeError": RuntimeError}
    exec(compile(src, __file__, "exec"), g)
    idx = tensor(mode, acc, 4)
    return raise_in(lambda: g["f"](msg, idx))


def no_tensor(mode, msg, name, acc="cuda"):
    model = Net(mode, acc)
    x = tensor(mode, acc, 4, 64)

    def evaluate(model, x):
        raise RuntimeError(msg)
    return raise_in(lambda: evaluate(model, x))


def two_models(mode, msg, name, acc="cuda"):
    model = Net(mode, acc)
    ema = Net(mode, "cpu")  # an EMA copy kept on cpu on purpose

    def update(ema, model):
        ema_v = ema.body.weight  # noqa: F841
        model_v = model.body.weight  # noqa: F841
        raise RuntimeError(msg)
    return raise_in(lambda: update(ema, model))


# What the culprit must name, written from each case's fix_summary (case.json).
# (scenario, name used in the scenario, accepted culprit names, culprit device)
H100_EXPECTED = {
    "biome-cat-zeros-no-device": (local, "padding", ["padding"], "cpu"),
    "biotrainer-class-weights": (loss_weight, "loss_function", ["loss_function"], "cpu"),
    "bn-created-in-forward": (head, "bn", ["model.bn"], "cpu"),
    "ce-weight-cpu": (loss_weight, "loss_fn", ["loss_fn"], "cpu"),
    "contextualized-eye-no-device": (local, "eye", ["eye"], "cpu"),
    "conv1d-layers-python-list": (head_list, "conv_layers", ["model.conv_layers[0]"], "cpu"),
    "dataparallel-force-cpu-device-ids": (model_not_moved, "model", ["model"], "cpu"),
    "deepcca-discarded-to": (local, "x1", ["x1"], "cpu"),
    "diffusion-betas-index-cpu": (indexed, "sqrt_alphas_cumprod", ["sqrt_alphas_cumprod"], "cpu"),
    "diffusion-sampler-discarded-to": (local, "weights", ["weights"], "cpu"),
    "ema-cpu-shadow-lerp": (two_models, "ema", ["ema", "ema_v", "model_v"], "cpu"),
    "fourier-positional-arange": (local, "freqs", ["freqs"], "cpu"),
    "frcnn-optimizer-before-cuda-resume": (optimizer_state, "optimizer", ["optimizer"], "cpu"),
    "gpt2-chitchat-discarded-to": (local, "input_ids", ["input_ids"], "cpu"),
    "lightning-criterions-list-weights": (head_list, "criterions", ["model.criterions[0]"], "cpu"),
    "llms-from-scratch-ch06-out-head": (head, "out_head", ["model.out_head"], "cpu"),
    "lstm-forward-h0-zeros-cpu": (local, "h0", ["h0"], "cpu"),
    "mobilesam-tinyvit-attn-bias-attr": (attribute, "ab", ["model.ab"], "cpu"),
    "multitask-heads-python-list": (head_list, "softmaxes", ["model.softmaxes[0]"], "cpu"),
    "nerf-pixel-sampler-mask-nonzero-index": (indexed, "image", ["image"], "cpu"),
    "nero-optimizer-eager-state-before-cuda": (optimizer_state, "optimizer", ["optimizer"], "cpu"),
    "opensr-test-input-not-moved": (local, "X", ["X"], "cpu"),
    "pose-demo-model-not-moved": (model_not_moved, "model", ["model"], "cpu"),
    "pose-resume-dataparallel-after-load": (optimizer_state, "optimizer", ["optimizer"], "cpu"),
    "predict-model-left-on-cpu-after-load": (model_not_moved, "clf.model", ["clf.model"], "cpu"),
    "pypots-eval-path-tensors-cpu": (local, "X_pred", ["X_pred"], "cpu"),
    "resume-optimizer-loaded-before-to": (optimizer_state, "optimizer", ["optimizer"], "cpu"),
    "rope-position-ids-cpu": (local, "position_ids", ["position_ids"], "cpu"),
    "sac-deterministic-policy-tensor-attrs": (attribute, "action_scale", ["model.action_scale"], "cpu"),
    "sagpool-net-not-moved": (model_not_moved, "model", ["model"], "cpu"),
    "semicon-similarity-index": (indexed, "S", ["S"], "cpu"),
    "skeleton-inference-input-cpu": (local, "static_a", ["static_a"], "cpu"),
    "ssd-default-cuda-tensor-generator": (no_tensor, "generator", [], "cpu"),
    "timm-reset-classifier-after-to": (head, "head", ["model.head"], "cpu"),
    "tokenlearner-python-list": (head_list, "tokenizers", ["model.tokenizers[0]"], "cpu"),
    "torchmetrics-metric-not-moved": (no_tensor, "metric", [], None),
    "transformer-nopeak-mask-batch-cpu": (local, "trg", ["trg"], "cpu"),
    "tts-guided-attention-arange": (local, "grid_x", ["grid_x"], "cpu"),
    "widedeep-metrics-not-moved": (no_tensor, "metric", [], None),
    "yolov7-from-which-layer-index": (indexed, "from_which_layer", ["from_which_layer"], "cpu"),
}


def h100_messages(shared_dir):
    data = json.loads((shared_dir / "corpus/gpu/h100_runs.json").read_text())
    out = {cid: c["buggy"]["exception"].split(": ", 1)[1] for cid, c in data["cases"].items()
           if c["buggy"].get("device_error")}
    for i, s in enumerate(data.get("debugpy_session_cuda") or []):
        out[f"debugpy-session-{i}"] = s["message"]
    return out


def culprit_names(c) -> list[str]:
    out = [c.get("module") or "", c.get("optimizer") or ""]
    for t in c.get("tensors", [])[:3]:
        out += [t.get("name") or ""] + t.get("aliases", [])
    return [n for n in out if n]


def check(rep, accepted, device):
    c = rep["culprit"]
    assert c is not None, rep["error"]
    if device is None:
        assert c["hint"], c
        return
    assert c["device"] is not None and c["device"].split(":")[0] == device, c
    if accepted:
        names = culprit_names(c)
        assert names and any(n in accepted for n in names[:3]), (names, c["summary"])
        lead = [c.get("module"), c.get("optimizer"), c["tensors"][0]["name"] if c["tensors"] else None]
        assert any(n in accepted for n in lead if n), (lead, c["summary"])


def test_every_h100_message_has_an_expectation(shared_dir):
    msgs = h100_messages(shared_dir)
    cases = {k for k in msgs if not k.startswith("debugpy-session")}
    assert cases == set(H100_EXPECTED)


@pytest.mark.parametrize("case_id", sorted(H100_EXPECTED))
def test_h100_message_culprit(shared_dir, fake, case_id):
    msg = h100_messages(shared_dir)[case_id]
    scenario, name, accepted, device = H100_EXPECTED[case_id]
    rep = placement_report(scenario(fake, msg, name), gc_scan=False)
    check(rep, accepted, device)


def test_h100_debugpy_session_message(shared_dir, fake):
    for key, msg in h100_messages(shared_dir).items():
        if key.startswith("debugpy-session"):
            rep = placement_report(head(fake, msg, "out_head"), gc_scan=False)
            check(rep, ["model.out_head"], "cpu")
            c = rep["culprit"]
            assert c["argument"] == "mat1" and c["op"] == "wrapper_CUDA_addmm"
            assert "torch: argument mat1 in wrapper_CUDA_addmm" in c["summary"]


# --- every wording of error_messages.txt ----------------------------------------------------------

# Wordings whose text itself says what is odd (not an argument-order message): the expected
# culprit device over the same "head on cpu" placement.
ONE_SIDED = {
    "index-device": "cpu", "deserialize-cuda": "cuda", "numpy-cuda": "cuda", "meta-copy": "meta",
    "dataparallel-module-device": None, "generator-device": None, "ddp-device-ids": None,
}


def wordings(shared_dir):
    out = []
    for line in (shared_dir / "corpus/error_messages.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        msg = line.split("\t", 1)[0]
        msg = msg.replace("<op>", "wrapper_CUDA_addmm").replace("<arg>", "mat1")
        if "<dev>" in msg:
            out.append(msg.replace("<dev>", "cuda:0").replace("<dev2>", "cpu"))
            out.append(msg.replace("<dev>", "cpu").replace("<dev2>", "cuda:0"))
        else:
            out.append(msg)
    return out


def test_wording_count(shared_dir):
    assert len(wordings(shared_dir)) >= 50


@pytest.mark.parametrize("index", range(60))
def test_every_wording_over_a_head_left_on_cpu(shared_dir, fake, index):
    ws = wordings(shared_dir)
    if index >= len(ws):
        pytest.skip("fewer wordings")
    msg = ws[index]
    exc_type, _, text = msg.partition(": ")
    parsed = parse_message(msg)
    assert parsed is not None, msg
    devs = {d.split(":")[0] for d in parsed["devices"]}
    fam = parsed["family"]
    acc = "meta" if "meta" in devs and "cuda" not in devs else "cuda"
    exc = head(fake, text, "out_head", acc=acc)
    rep = placement_report(exc, gc_scan=False)
    c = rep["culprit"]
    assert c is not None, msg
    if fam in ONE_SIDED or not ({"cpu", acc} <= devs):
        want = ONE_SIDED.get(fam)
        if want:
            assert (c["device"] or "").split(":")[0] == want, (msg, c)
        return
    # a two-device wording in either order: the head left on cpu, never the input
    assert c["device"] == "cpu", (msg, c["summary"])
    assert c["module"] == "model.out_head", (msg, c["summary"])


# --- real errors on meta and fake cuda, both ways ---------------------------------------------------


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.Linear(16, 16))
        self.out_head = nn.Linear(16, 2)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.out_head(h)


def test_meta_head_built_under_device_context_on_cpu_model():
    """The issue's example: the model on cpu, its out_head built under torch.device("meta")."""
    model = Classifier()
    with torch.device("meta"):
        model.out_head = nn.Linear(16, 2)
    x = torch.randn(4, 16)
    rep = placement_report(raise_in(lambda: model(x)))
    c = rep["culprit"]
    assert c["device"] == "meta" and c["expected_device"] == "cpu", c["summary"]
    assert c["module"] == "model.out_head", c["summary"]
    assert {t["name"] for t in c["tensors"]} <= {"model.out_head.weight", "model.out_head.bias"}
    assert c["created"] and "model.out_head = nn.Linear(16, 2)" in c["created"]["code"]
    assert "h (local" not in c["summary"]


def test_meta_majority_with_head_left_on_cpu():
    model = Classifier().to("meta")
    model.out_head = nn.Linear(16, 2)
    x = torch.randn(4, 16, device="meta")
    c = placement_report(raise_in(lambda: model(x)))["culprit"]
    assert c["device"] == "cpu" and c["expected_device"] == "meta"
    assert c["module"] == "model.out_head"


def test_meta_model_never_moved_input_moved():
    model = Classifier()
    x = torch.randn(4, 16).to("meta")
    c = placement_report(raise_in(lambda: model(x)))["culprit"]
    assert c["device"] == "cpu" and c["expected_device"] == "meta"
    assert c["module"] == "model" and c["whole_module"], c["summary"]


def test_meta_model_moved_input_not():
    model = Classifier().to("meta")
    x = torch.randn(4, 16)
    c = placement_report(raise_in(lambda: model(x)))["culprit"]
    assert c["device"] == "cpu" and c["expected_device"] == "meta"
    assert c["module"] is None and c["tensors"][0]["name"] in ("x", "input", "h"), c["summary"]


def _fake_classifier(mode, dev_body, dev_head):
    m = nn.Module()
    m.body = linear(mode, dev_body, 16, 16)
    m.body2 = linear(mode, dev_body, 16, 16)
    m.out_head = linear(mode, dev_head, 16, 2)
    return m


def _fake_forward(m, x):
    with torch.no_grad():
        h = m.body2(m.body(x))
        return m.out_head(h)


def test_fake_cuda_majority_with_head_on_cpu(fake):
    model = _fake_classifier(fake, "cuda", "cpu")
    with fake:
        x = torch.empty(4, 16, device="cuda")
    exc = raise_in(lambda: _fake_forward(model, x))
    c = placement_report(exc, gc_scan=False)["culprit"]
    assert c["device"] == "cpu" and c["expected_device"].startswith("cuda"), c["summary"]
    assert c["module"] == "model.out_head", c["summary"]


def test_fake_cuda_head_on_cpu_majority(fake):
    """The reverse: the model on cpu, one head on (fake) cuda."""
    model = _fake_classifier(fake, "cpu", "cuda")
    x = torch.zeros(4, 16)
    exc = raise_in(lambda: _fake_forward(model, x))
    c = placement_report(exc, gc_scan=False)["culprit"]
    assert c["device"].startswith("cuda") and c["expected_device"] == "cpu", c["summary"]
    assert c["module"] == "model.out_head", c["summary"]


def test_message_argument_order_does_not_decide(fake):
    """The same placement with the newest wording naming either side: the same culprit."""
    a = "Expected all tensors to be on the same device, but got mat1 is on cuda:0, different from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)"
    b = "Expected all tensors to be on the same device, but got mat2 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)"
    for msg in (a, b):
        c = placement_report(head(fake, msg, "out_head"), gc_scan=False)["culprit"]
        assert c["device"] == "cpu" and c["module"] == "model.out_head", c["summary"]
        assert re.search(r"model\.out_head", c["summary"])
