"""Tensors a module owns: parameters move with it (and meet inputs as the module's device), a tensor
cached as a plain attribute by another method (a `train()` override run by `eval()`) stays behind
when the module moves. Single-file variations; the multi-file ones are program fixtures
(parameters_of_unmoved_model*, tensor_cache_set_by_eval*)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devflow.edits import apply_edits
from devflow.engine import analyze

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "engine" / "module_state"


@pytest.mark.parametrize("name, expected", [
    ("cache_in_trainer.py", [("DEV105", 13)]),
    ("nested_layer_not_moved.py", [("DEV106", 11)]),
    ("zero_dim_parameter_clean.py", []),
    ("ema_state_dict_cpu.py", [("DEV202", 20)]),
    ("experts_in_comprehension_not_moved.py", [("DEV106", 11)]),
    ("experts_in_comprehension_clean.py", []),
    ("experts_in_plain_list.py", [("DEV103", 17)]),  # the root cause only, not each expert's parameter
    ("batch_mask_from_generator.py", [("DEV201", 7)]),  # a mask helper of a batch class, batches from a generator
    ("batch_mask_type_as_clean.py", []),  # `type_as(t)` converts to t's type string, its device included
    ("mask_vs_input_moved_on_one_branch.py", [("DEV201", 5)]),  # `if use_gpu: x = x.cuda()`
    ("moved_on_one_branch_clean.py", []),  # moved under the same condition, or back on the cpu
])
def test_module_owned_tensors(name, expected):
    r = analyze((CASES / name).read_text(), name)
    assert [(d.code, d.span.line) for d in r.diagnostics] == expected


def test_a_parameter_of_an_unmoved_model_names_the_model_built():
    r = analyze((CASES / "nested_layer_not_moved.py").read_text())
    (d,) = r.diagnostics
    assert "created at line 27 and never moved" in d.message
    assert any(rel.span.line == 27 for rel in d.related)


def test_cache_registered_as_buffer_runs_and_is_clean(tmp_path):
    src = (CASES / "cache_in_trainer.py").read_text()
    (d,) = analyze(src).diagnostics
    assert d.fix is not None
    fixed = apply_edits(src, d.fix.edits)
    assert 'self.register_buffer("frozen_scale", self.logit_scale.detach().clone(), persistent=False)' in fixed
    assert analyze(fixed).diagnostics == []
    (tmp_path / "prog.py").write_text(fixed)
    run = subprocess.run([sys.executable, str(tmp_path / "prog.py")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_cache_recomputed_after_the_move_is_clean():
    src = (CASES / "cache_in_trainer.py").read_text().replace(
        "        self.model.to(self.device)\n", "        self.model.to(self.device)\n        self.model.eval()\n")
    assert analyze(src).diagnostics == []


def test_model_moved_before_eval_is_clean():
    src = (CASES / "cache_in_trainer.py").read_text().replace(
        "    model = Classifier()\n", "    model = Classifier().to(device)\n")
    assert analyze(src).diagnostics == []


def test_inplace_update_of_a_cpu_copy_moves_the_argument_and_runs(tmp_path):
    src = (CASES / "ema_state_dict_cpu.py").read_text()
    (d,) = analyze(src).diagnostics
    assert "writes in place" in d.message and d.fix is not None
    fixed = apply_edits(src, d.fix.edits)
    assert "avg.add_(value.to(avg.device), alpha=1.0 - decay)" in fixed
    assert analyze(fixed).diagnostics == []
    (tmp_path / "prog.py").write_text(fixed)
    run = subprocess.run([sys.executable, str(tmp_path / "prog.py")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_inplace_update_on_the_same_device_is_clean():
    src = (CASES / "ema_state_dict_cpu.py").read_text().replace("shadow = make_ema(net)", "shadow = make_ema(net, device)")
    assert analyze(src).diagnostics == []


def test_inplace_into_a_factory_tensor_is_fixed_where_it_is_made():
    src = ("import torch\nx = torch.randn(3, device='cuda')\nacc = torch.zeros(3)\nacc.add_(x)\n")
    assert [(d.code, d.span.line) for d in analyze(src).diagnostics] == [("DEV201", 3)]


def test_super_inside_a_comprehension_of_a_method():
    src = ("import torch.nn as nn\nclass A(nn.Module):\n    def f(self):\n        return 1\n"
           "class B(A):\n    def g(self):\n        return [super().f() for _ in range(2)] + [v for v in {k: super().f() for k in 'ab'}]\n"
           "B().g()\n")
    r = analyze(src)
    assert r.diagnostics == [] and not r.rule_errors


def test_unmoved_model_is_fixed_where_it_is_built_and_runs(tmp_path):
    src = (CASES / "nested_layer_not_moved.py").read_text()
    (d,) = analyze(src).diagnostics
    assert d.fix is not None
    fixed = apply_edits(src, d.fix.edits)
    assert "    net = Stack(8, 3)\n    net.to(device)\n" in fixed
    assert analyze(fixed).diagnostics == []
    (tmp_path / "prog.py").write_text(fixed.replace('run(torch.device("cuda"))', 'run(torch.device("cpu"))'))
    run = subprocess.run([sys.executable, str(tmp_path / "prog.py")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_no_fix_when_the_device_name_means_something_else_where_the_model_is_built():
    src = (CASES / "nested_layer_not_moved.py").read_text().replace(
        "def run(device):\n    net = Stack(8, 3)\n",
        "def run(device):\n    other, device = device, 'cpu'\n    net = Stack(8, 3)\n    device = other\n")
    (d,) = analyze(src).diagnostics
    assert d.code == "DEV106" and d.fix is None


def test_a_choice_between_two_tensors_is_not_a_move():
    src = ("import torch\nidx = torch.arange(3, device='cuda')\nx = torch.randn(5)\n"
           "if input():\n    sel = idx\nelse:\n    sel = torch.arange(3)\nprint(x[sel])\n")
    assert analyze(src).diagnostics == []
