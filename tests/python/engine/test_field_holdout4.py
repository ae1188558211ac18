"""False alarms of the fourth held-out field (bench/field_holdout4.txt, bench/field_review.md M26-M28),
each removed by modelling what Python / torch really do, with a silent case and a variation still reported."""

from __future__ import annotations

from devflow.engine import analyze


def codes(src):
    return [(d.code, d.span.line) for d in analyze(src).diagnostics]


# -- M26: a tensor moved under a test of another tensor's device follows that tensor ----------------

TRANSFORM = """import numpy as np
import torch
import torch.nn as nn


class Transform(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 9)

    def forward(self, x):
        x = self.fc(x)
        iden = torch.from_numpy(np.eye(3, dtype=np.float32).ravel()).view(1, 9).repeat(x.size(0), 1)
        if {test}:
            iden = iden.cuda()
        return {ret}


def run(points):
    net = Transform(){move}
    return net(points)
"""


def test_moved_when_the_other_tensor_is_on_cuda_follows_it():
    for test in ("x.is_cuda", 'x.device.type == "cuda"', '"cpu" != x.device.type'):
        for move in ("", ".cuda()"):
            assert codes(TRANSFORM.format(test=test, ret="x + iden", move=move)) == [], (test, move)


def test_moved_when_the_other_tensor_is_on_cuda_in_a_helper_one_level_deeper():
    src = TRANSFORM.replace("        if {test}:\n            iden = iden.cuda()\n        return {ret}",
                            "        return add_identity(x, iden)").format(move="") + """

def add_identity(feat, ident):
    if feat.is_cuda:
        ident = ident.cuda()
    return feat + ident
"""
    assert codes(src) == []


def test_a_condition_that_tests_no_tensor_still_moves_to_the_accelerator():
    # `x` is what a layer of `net`, never moved, computes: said where it meets (the model's line named)
    assert codes(TRANSFORM.format(test="torch.cuda.is_available()", ret="x + iden", move="")) == [("DEV106", 16)]


def test_the_guarded_tensor_still_meets_a_cuda_tensor():
    # `iden` is where `x` is (cpu here): adding a cuda tensor to their sum is still a mix
    assert codes(TRANSFORM.format(test="x.is_cuda", ret="x + iden + torch.ones(9).cuda()", move="")) == [("DEV106", 16)]


# -- M27: DataParallel / DDP scatter the inputs spread with `**batch` too ----------------------------

SPREAD = """import torch
import torch.nn as nn
from transformers import AutoModelForSequenceClassification, AutoTokenizer


def predict(path, texts, no_cuda=False):
    model = AutoModelForSequenceClassification.from_pretrained(path)
    if not no_cuda and torch.cuda.is_available():
        {wrap}
    tok = AutoTokenizer.from_pretrained(path)
    enc = tok(texts, return_tensors="pt")
    return model(**enc)
"""


def test_spread_inputs_of_a_data_parallel_call_are_scattered():
    assert codes(SPREAD.format(wrap="model = nn.DataParallel(model.cuda())")) == []


def test_spread_cpu_inputs_of_a_plain_cuda_model_are_still_reported():
    assert codes(SPREAD.format(wrap="model = model.cuda()")) == [("DEV202", 11)]


# -- M28: an input that a project forward only hands back in its result meets nothing inside ---------

POST = """import torch
import torch.nn as nn


class Postprocessor(nn.Module):
    def __init__(self, head, class_map=None):
        super().__init__()
        self.head = head
        self.weight = nn.Parameter(torch.ones(1))
        self.register_buffer("class_map", None if class_map is None else torch.LongTensor(class_map))

    def forward(self, samples, targets):
        preds = self.head(samples)
        return {{"preds": preds[:, self.class_map] if self.class_map is not None else preds, "target": {target}}}


def evaluate(features, labels, heads, device: torch.device, class_map=None):
    posts = {{k: Postprocessor(v, class_map) for k, v in heads.items()}}
    labels = labels.to(device)
    out = {{}}
    for k in posts:
        out[k] = posts[k](features, labels)
    return out
"""


def test_an_input_returned_as_it_is_is_no_meeting():
    for target in ("targets", "(targets, preds)", "[targets]"):
        assert codes(POST.format(target=target)) == [], target


def test_an_input_combined_with_a_parameter_is_still_reported():
    assert codes(POST.format(target="targets * self.weight")) == [("DEV106", 22)]


# -- M29: a torch.nn module built with `device=` inside forward is not made on cpu --------------------

EXTEND = """import torch
import torch.nn as nn


class Clip(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.proj = nn.Linear(16, 16)

    def extend(self, extra):
        cur = self.embed
        new = nn.Embedding(cur.weight.shape[0] + 1, cur.weight.shape[1]{device}, dtype=cur.weight.dtype)
        new.weight[:-1] = cur.weight
        self.embed = new

    def forward(self, tokens, extra=None):
        if extra is not None:
            self.extend(extra)
        return self.proj(self.embed(tokens))
"""


def test_a_module_built_on_the_weights_device_in_forward_is_not_cpu():
    assert codes(EXTEND.format(device=", device=cur.weight.device")) == []


def test_a_module_built_in_forward_without_device_is_still_reported():
    assert codes(EXTEND.format(device="")) == [("DEV104", 13)]
    assert codes(EXTEND.format(device=", device=None")) == [("DEV104", 13)]


# -- M30: entries of a tokenizer's BatchEncoding moved through its `.data` dict ------------------------

EXPANDER = """import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


class Expander:
    def __init__(self, path, device):
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForCausalLM.from_pretrained(path).to(device)

    def __call__(self, prompt):
        enc = self.tokenizer(prompt, return_tensors="pt")
        enc.data["input_ids"] = enc.data["input_ids"].{conv}
        enc.data["attention_mask"] = enc.data["attention_mask"].{conv}
        return self.model.generate(**enc, max_new_tokens=8)


e = Expander("gpt2", torch.device("cuda"))
print(e("a cat"))
"""


def test_encoding_entries_moved_through_data_are_not_cpu_any_more():
    assert codes(EXPANDER.format(conv="to(self.device)")) == []


def test_encoding_entries_converted_through_data_stay_on_cpu():
    assert codes(EXPANDER.format(conv="long()")) == [("DEV202", 12)]


# -- M31: DEV301 on the checkpoint of an lr scheduler (its state holds numbers, no tensors) ------------

RESUME = """import os
import torch
from transformers import AutoModel, get_linear_schedule_with_warmup


def train(args):
    args.device = torch.device("cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu")
    model = AutoModel.from_pretrained(args.model_name_or_path).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scheduler = {make}
    if os.path.isfile(os.path.join(args.model_name_or_path, "optimizer.pt")):
        optimizer.load_state_dict(torch.load(os.path.join(args.model_name_or_path, "optimizer.pt")))
        scheduler.load_state_dict(torch.load(os.path.join(args.model_name_or_path, "scheduler.pt")))
    return model, optimizer, scheduler
"""


def _lines(src):
    from devflow.api import check_source
    return [(d.code, d.span.line) for d in check_source(src, "train.py").diagnostics if d.code == "DEV301"]


def test_a_scheduler_checkpoint_holds_no_tensors():
    for make in ("get_linear_schedule_with_warmup(optimizer, num_warmup_steps=0, num_training_steps=100)",
                 "torch.optim.lr_scheduler.StepLR(optimizer, 10)"):
        # the optimizer's state (cuda tensors) is still reported; the scheduler's is not
        assert _lines(RESUME.format(make=make)) == [("DEV301", 12)], make


def test_a_state_loaded_into_an_object_of_unknown_kind_is_still_reported():
    assert _lines(RESUME.format(make="make_scheduler(optimizer)")) == [("DEV301", 12), ("DEV301", 13)]


# -- M5 (extended): a checkpoint saved above the load through a helper, or under the same joined path ---

SAVED = """import os
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
root_dir = "./runs"
model = nn.Linear(4, 2).to(device)


def save_checkpoint(model, epoch, filename="model.pt", best_acc=0, dir_add=root_dir):
    save_dict = {"epoch": epoch, "best_acc": best_acc, "state_dict": model.state_dict()}
    filename = os.path.join(dir_add, filename)
    torch.save(save_dict, filename)


def save_ckp(state, checkpoint_dir):
    torch.save(state, checkpoint_dir)


def train():
    for epoch in range(3):
        save_checkpoint(model, epoch, best_acc=0.5)
        save_ckp({"state_dict": model.state_dict()}, root_dir + "/last.pt")

"""
LOADS = """model.load_state_dict(torch.load(os.path.join(root_dir, "model.pt"), weights_only=True)["state_dict"])
model.load_state_dict(torch.load(os.path.join(root_dir, "last.pt"), weights_only=True)["state_dict"])
model.load_state_dict(torch.load(f"{root_dir}/last.pt", weights_only=True)["state_dict"])
"""


def test_a_checkpoint_saved_above_through_a_helper_is_this_runs_own():
    assert _lines(SAVED + "train()\n" + LOADS) == []


def test_another_file_name_is_still_reported():
    src = SAVED + "train()\n" + LOADS.replace('"last.pt"', '"best.pt"').replace("/last.pt", "/best.pt")
    assert [c for c, _ in _lines(src)] == ["DEV301", "DEV301"]


def test_loaded_before_the_saves_is_a_resume_from_an_earlier_run():
    src = SAVED.replace("def train():", LOADS + "\n\ndef train():") + "train()\n"
    assert [c for c, _ in _lines(src)] == ["DEV301"] * 3


def test_saved_on_the_other_branch_of_an_if_is_an_earlier_runs_file():
    # `if not exists(f): train and save f  else: load f`: the load reads what an earlier run saved
    src = SAVED + """if not os.path.exists(os.path.join(root_dir, "last.pt")):
    train()
else:
    model.load_state_dict(torch.load(os.path.join(root_dir, "last.pt"), weights_only=True)["state_dict"])
"""
    assert [c for c, _ in _lines(src)] == ["DEV301"]


def test_moved_when_an_unrelated_cpu_tensor_is_on_cuda_stays_cpu_and_meets_the_input():
    # `feat` is always on cpu, so `iden` is never moved and meets `x` on a moved module's device
    src = TRANSFORM.format(test="feat.is_cuda", ret="x + iden", move="").replace(
        "x = self.fc(x)", "x = self.fc(x)\n        feat = torch.zeros(3)")
    assert codes(src) == [("DEV202", 15)]


def test_moved_in_the_else_branch_of_a_negated_test_follows_the_tensor():
    src = TRANSFORM.replace("        if {test}:\n            iden = iden.cuda()\n",
                            "        if not x.is_cuda:\n            pass\n        else:\n            iden = iden.cuda()\n")
    assert codes(src.format(ret="x + iden", move="")) == []
