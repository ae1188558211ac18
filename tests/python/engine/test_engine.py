"""The engine's contract: canonical snippet, hints, bad input, isolation of failing rules, big files."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from devflow import engine
from devflow.edits import apply_edits
from devflow.engine import analyze
from devflow.model import FileResult
from devflow.rules import RULES, doc_url
from devflow.rules.checks import ALL_RULES

ROOT = Path(__file__).resolve().parents[3]
CANONICAL = (ROOT / "tests" / "fixtures" / "canonical.py").read_text()


def test_canonical_snippet_dev101_with_safe_fix():
    r = analyze(CANONICAL, "snippet.py")
    assert [(d.code, d.span.line) for d in r.diagnostics] == [("DEV101", 7)]
    d = r.diagnostics[0]
    assert d.fix is not None and d.fix.applicability == "safe"
    assert "line 6" in d.message and d.related and d.related[0].span.line == 6
    fixed = apply_edits(CANONICAL, d.fix.edits)
    assert "model.head = nn.Linear(8, 2).to(device)" in fixed
    assert analyze(fixed).diagnostics == []


def test_hints_name_device_and_reason():
    r = analyze(CANONICAL)
    hints = {h.name: h for h in r.hints if h.is_assignment}
    assert hints["x"].device == "`device`" and hints["x"].span.line == 8
    assert hints["y"].device == "`device`" and "model.to(device)" in hints["y"].reason
    uses = [h for h in r.hints if not h.is_assignment]
    assert any(h.name == "x" and h.span.line == 9 for h in uses)  # hover on a use
    assert any(h.name == "model" and h.span.line == 9 and h.kind == "module" for h in uses)


def test_message_names_both_sides_and_lines():
    src = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
mask = torch.ones(2, 4)
logits = model(torch.randn(2, 4, device=device))
out = logits * mask
'''
    [d] = analyze(src).diagnostics
    assert d.code == "DEV201" and d.span.line == 6
    assert "`mask` is on cpu (created at line 6 without device=)" in d.message
    assert "`logits` is on `device`" in d.message
    assert {r.span.line for r in d.related} >= {8}
    assert "device=logits.device" not in apply_edits(src, d.fix.edits)  # logits is defined after line 6
    assert "torch.ones(2, 4, device=device)" in apply_edits(src, d.fix.edits)


@pytest.mark.parametrize("src", [
    "x = torch.zeros(3) + torch.zeros(3, device=unknown_thing)",  # unknown device: silent
    "import torch\nx = torch.zeros(3)\ny = x + torch.tensor(1.0).cuda()",  # 0-dim? no: cuda scalar, cpu vector
])
def test_unknown_stays_silent(src):
    assert analyze(src).diagnostics == [] or "cuda" in src


def test_cpu_scalar_mixes_freely():
    src = "import torch\nx = torch.zeros(3, device='cuda')\ns = torch.tensor(2.0)\ny = x * s\nz = x * x.sum().cpu()\n"
    assert analyze(src).diagnostics == []


def test_a_reduction_of_an_unknown_value_stays_0_dim_through_cpu():
    # `state[k].to(device)` is of unknown kind (a module or a tensor); its norm is 0-dim, and so is
    # `.cpu()` of it: multiplying a cuda tensor by it is legal (kohya-ss/sd-scripts max-norm code).
    src = ("import torch\n"
           "def f(state, device, limit):\n"
           "    w = state['w'].to(device)\n"
           "    norm = w.norm().clamp(min=limit / 2)\n"
           "    ratio = torch.clamp(norm, max=limit).cpu() / norm.cpu()\n"
           "    return w.norm() * ratio\n"
           "f({}, 'cuda', 1.0)\n")
    assert analyze(src).diagnostics == []


def test_torch_tensor_of_an_unknown_value_keeps_its_unknown_device():
    # `torch.tensor(t)` of a cuda tensor is a cuda tensor: with `shapes` a caller's value, no finding
    # (transformers' D-FINE: `torch.tensor(spatial_shapes).flip([1]).reshape(...)` meets cuda offsets);
    # of Python data it is a cpu tensor.
    src = ("import torch\n"
           "def f(offsets, shapes):\n"
           "    norm = torch.tensor(shapes).flip([1]).reshape(1, 2)\n"
           "    return offsets / norm\n"
           "f(torch.zeros(1, 2, device='cuda'), torch.ones(1, 2, device='cuda'))\n")
    assert analyze(src).diagnostics == []
    cpu = src.replace("torch.tensor(shapes)", "torch.tensor([[4, 4]])")
    assert [d.code for d in analyze(cpu).diagnostics] == ["DEV201"]


def test_nn_buffer_is_a_tensor_owned_by_its_module_not_a_module():
    src = ("import torch\nfrom torch import nn\n"
           "class Pos(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self.make(8)\n"
           "    def make(self, n):\n"
           "        w = torch.zeros(n, 4)\n"
           "        if hasattr(self, 'weights'):\n"
           "            w = w.to(device=self.weights.device)\n"
           "        self.weights = nn.Buffer(w, persistent=False)\n"
           "    def forward(self, x):\n"
           "        if x.shape[0] > self.weights.shape[0]:\n"
           "            self.make(x.shape[0])\n"
           "        return x + self.weights[: x.shape[0]]\n"
           "m = Pos().to('cuda')\n"
           "print(m(torch.zeros(4, 4, device='cuda')))\n")
    assert analyze(src).diagnostics == []


def test_cuda_vs_cpu_literal():
    src = "import torch\nx = torch.zeros(3, device='cuda')\ny = torch.ones(3)\nz = x + y\n"
    assert [d.code for d in analyze(src).diagnostics] == ["DEV201"]


def test_branches_join_to_unknown():
    src = ("import torch\n"
           "def f(flag):\n"
           "    x = torch.zeros(3, device='cuda') if flag else torch.zeros(3)\n"
           "    return x + torch.ones(3)\n")
    assert analyze(src).diagnostics == []


@pytest.mark.parametrize("src, needle", [
    ("def f(:\n    pass\n", "Syntax error at line 1"),
    ("x = 'abc\n", "Syntax error"),
    ("a\x00b", "NUL"),
])
def test_bad_input_is_a_clear_error(src, needle):
    r = analyze(src, "bad.py")
    assert isinstance(r, FileResult) and r.error and needle in r.error
    if "Syntax" in needle:
        assert r.error_span is not None and r.error_span.line >= 1


@pytest.mark.parametrize("src", ["", "\n\n", "# only a comment", "import torch", "\ufeffimport torch\n", "x = '\u00e9' ; import torch"])
def test_trivial_input(src):
    r = analyze(src)
    assert r.error is None and r.diagnostics == []


def test_non_ascii_columns_are_code_points():
    src = ('import torch\nimport torch.nn as nn\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
           'model = nn.Linear(2, 2).to(device)\n'
           'été = 1; model.head = nn.Linear(2, 2)\n')
    [d] = analyze(src).diagnostics
    assert d.span.col == len("été = 1; ")
    assert "model.head = nn.Linear(2, 2).to(device)" in apply_edits(src, d.fix.edits)


def test_a_failing_rule_is_isolated(monkeypatch):
    broken = ALL_RULES[0]

    def boom(ctx):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(broken, "check", boom)
    r = analyze(CANONICAL)
    assert any(e.startswith(f"{broken.code}: RuntimeError: kaboom") for e in r.rule_errors)


def test_interpreter_failure_never_raises(monkeypatch):
    def boom(self):
        raise ValueError("bad state")

    monkeypatch.setattr(engine.Interpreter, "run", boom)
    r = analyze(CANONICAL)
    assert any("interpreter: ValueError" in e for e in r.rule_errors)


def test_large_file_is_handled():
    block = ("def f{i}(x, device):\n"
             "    y = torch.zeros(3, device=device)\n"
             "    for k in range(3):\n"
             "        y = y + x * k\n"
             "    return y\n\n")
    src = "import torch\n" + "".join(block.format(i=i) for i in range(10000))
    assert src.count("\n") >= 50000
    t = time.perf_counter()
    r = analyze(src)
    assert r.error is None and not r.rule_errors
    assert time.perf_counter() - t < 60  # generous: a guard against blow-ups, not a benchmark


def test_deep_nesting_does_not_crash():
    src = "import torch\nx = " + "(" * 200 + "1" + ")" * 200 + "\n"
    analyze(src)  # no exception


def test_corpus_files_truncated_never_raise(shared_dir):
    for f in sorted((shared_dir / "corpus" / "public").glob("*/buggy.py"))[:8]:
        text = f.read_text()
        for cut in range(0, len(text), max(1, len(text) // 7)):
            r = analyze(text[:cut])
            assert isinstance(r, FileResult)
            assert not r.rule_errors, (f, cut, r.rule_errors)


def test_registry_and_docs():
    assert set(RULES) == {r.code for r in ALL_RULES} | {c for c in RULES if c not in {r.code for r in ALL_RULES}}
    for code, info in RULES.items():
        assert info.code == code and info.name and info.summary and info.family
        assert doc_url(code).endswith(f"docs/rules/{code}.md")
        assert (ROOT / info.doc_path).exists(), f"missing doc page {info.doc_path}"
    assert {r.code for r in ALL_RULES} == set(RULES)


FIXTURES = ROOT / "tests" / "fixtures" / "engine"


@pytest.mark.parametrize("name, expected", [
    ("torchvision_head_after_move.py", [("DEV101", 9)]),
    ("ema_deepcopy_before_move.py", [("DEV202", 18)]),
    ("ema_shadow_dict.py", [("DEV202", 20)]),  # the EMA built before the move
    ("dict_batch_discarded_to.py", [("DEV107", 10), ("DEV106", 11)]),
    ("fire_entry_point.py", [("DEV201", 12)]),
    ("timm_reset_classifier.py", [("DEV102", 7)]),
    ("scaler_saved_not_restored.py", [("DEV402", 8)]),
    ("forward_only_module.py", [("DEV201", 12)]),
    ("trainer_class_resume.py", [("DEV302", 14)]),
    ("quantized_model_moved.py", [("DEV202", 7)]),  # bnb without device_map: one GPU, no hooks; .cuda() is fine
    ("causal_mask_in_forward.py", [("DEV201", 13)]),
    ("vgg_classifier_pe_labels.py", [("DEV201", 10), ("DEV105", 13), ("DEV101", 23), ("DEV201", 26)]),
    ("dataloader_labels_not_moved.py", [("DEV202", 14)]),
    ("dataloader_inputs_not_moved.py", [("DEV202", 11)]),
    ("resume_helper_before_move.py", [("DEV302", 8)]),
    ("map_location_on_restore_helper.py", [("DEV303", 20), ("DEV303", 26)]),
    ("param_groups_resume_before_move.py", [("DEV302", 22)]),  # groups of single parameters, Adam or SGD by flag
    ("trainer_trainable_params_resume.py", [("DEV302", 27)]),
    ("rope_position_ids_cpu.py", [("DEV201", 18)]),
    ("ema_state_dict_helper.py", [("DEV202", 20)]),
    ("tokenizer_output_spread_unmoved.py", [("DEV202", 10), ("DEV202", 15), ("DEV107", 17), ("DEV202", 22)]),
])
def test_shapes_beyond_the_corpus(name, expected):
    r = analyze((FIXTURES / name).read_text())
    assert [(d.code, d.span.line) for d in r.diagnostics] == expected
    assert not r.rule_errors


@pytest.mark.parametrize("name", ["clean_training_script.py", "clean_hf_script.py", "clean_accelerate_prepare.py",
                                  "clean_lightning_module.py", "clean_head_replaced_then_moved.py",
                                  "clean_resume_after_move.py", "clean_ema_after_move.py",
                                  "clean_batch_moved_entry_by_entry.py", "clean_map_location_on_load.py",
                                  "clean_param_groups_resume_after_move.py", "clean_filter_params_resume.py",
                                  "clean_trainer_trainable_params_resume.py", "clean_optimizer_rebuilt_after_move.py",
                                  "clean_optimizer_state_follows_params.py"])
def test_idiomatic_code_is_clean(name):
    r = analyze((FIXTURES / name).read_text())
    assert r.diagnostics == [] and not r.rule_errors
    if name in ("clean_training_script.py", "clean_hf_script.py"):
        assert r.hints  # still annotated for hover / inlay hints


def test_dataloader_batch_is_moved_where_it_is_used():
    src = (FIXTURES / "dataloader_labels_not_moved.py").read_text()
    (d,) = analyze(src).diagnostics
    assert d.code == "DEV202" and d.fix is not None and d.fix.applicability == "unsafe"
    assert any(r.span.line == 8 for r in d.related)  # the DataLoader that made the batch
    fixed = apply_edits(src, d.fix.edits)
    assert "loss = loss_fn(logits, labels.to(logits.device))" in fixed
    assert analyze(fixed).diagnostics == []


def test_keys_of_a_batch_are_not_tensors():
    """`for k, v in batch.items()`: the value has the batch's device, the key has none."""
    src = (FIXTURES / "tokenizer_output_spread_unmoved.py").read_text()
    hints = {(h.name, h.span.line): h.device for h in analyze(src).hints}
    assert hints[("value", 16)] == "cpu" and ("key", 16) not in hints


def test_fix_names_the_device_variable():
    src = "import torch\ndevice = torch.device('cuda')\nmodel = torch.nn.Linear(4, 4).to(device)\nx = torch.randn(2, 4)\ny = model(x)\n"
    (d,) = analyze(src).diagnostics
    assert "x = torch.randn(2, 4, device=device)" in apply_edits(src, d.fix.edits)


def test_analysis_leaves_no_reference_cycles_and_does_not_write_to_the_tree():
    """An editor server analyses on every edit: what a run leaves must go with reference counting
    alone (no cyclic garbage for the collector), and the syntax tree is read, never annotated."""
    import ast
    import gc

    sources = [CANONICAL] + [p.read_text(encoding="utf-8") for p in sorted((ROOT / "samples").glob("*.py"))]
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for src in sources:
            retained: list = []
            analyze(src, "t.py", retain=retained)
            tree = retained[0][0]
            assert all(not any(k.startswith("_") for k in vars(n)) for n in ast.walk(tree))
            retained.clear()
            assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()


def test_map_location_moves_into_torch_load():
    """The fix hands the keyword to torch.load and keeps the other arguments; a name loaded earlier gets no fix."""
    src = (FIXTURES / "map_location_on_restore_helper.py").read_text()
    first, second = analyze(src).diagnostics
    assert first.fix is not None and first.fix.applicability == "safe" and second.fix is None
    fixed = apply_edits(src, first.fix.edits)
    assert 'self.net.load_state_dict(torch.load(weights, map_location="cpu"), strict=False)' in fixed
    assert [d.code for d in analyze(fixed).diagnostics] == ["DEV303"]


RESUME_THEN_GUARDED_MOVE = """import sys
import torch
import torch.nn as nn

use_gpu = "--gpu" in sys.argv
net = nn.Linear(4, 2)
groups = [{"params": [p], "lr": 0.1} for p in net.parameters()]
opt = torch.optim.SGD(list(net.parameters()), lr=0.1, momentum=0.9)
state = torch.load("ckpt.pt", map_location="cpu")
opt.load_state_dict(state["opt"])
if use_gpu:
    net.cuda()
"""


def test_resume_fix_keeps_the_condition_of_the_move():
    """The move was conditional: the fix moves the model earlier under the same condition, so a
    cpu run (no --gpu) still works."""
    (d,) = analyze(RESUME_THEN_GUARDED_MOVE).diagnostics
    assert d.code == "DEV302" and d.span.line == 10
    fixed = apply_edits(RESUME_THEN_GUARDED_MOVE, d.fix.edits)
    assert "net = nn.Linear(4, 2)\nif use_gpu:\n    net.cuda()\n" in fixed
    assert analyze(fixed).diagnostics == []
    inverted = RESUME_THEN_GUARDED_MOVE.replace("if use_gpu:\n    net.cuda()", "if not use_gpu:\n    pass\nelse:\n    net.cuda()")
    (d,) = analyze(inverted).diagnostics
    assert d.fix is None  # an else branch: no condition to copy
