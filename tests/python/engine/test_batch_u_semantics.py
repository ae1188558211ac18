"""Semantics found missing by the unseen batch U (tests/fixtures/engine/unseen/u_*: Hugging Face and friends),
each tested on the variations a user writes (renamed, split into files, one helper deeper, inside a class)
and on the neighbours that must stay silent:
- a `@property` read as the callee (`nli.deberta(**enc)`): Python runs the getter first and calls what it
  returns, so the model a lazy-loading wrapper keeps (`self._deberta`, moved in `setup()`) is what meets
  the inputs;
- a model of one class built and moved on each branch of the `if` that chooses the device (cpu in a test
  mode, the accelerator otherwise) is one model on the chosen device after the `if`, as one built before
  it and moved after it would be: a head assigned afterwards stays on the cpu."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

_WRAPPER = """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer


    class NLI:
        def __init__(self, path="microsoft/deberta-large-mnli", device=None):
            self.path = path
            self._model = None
            self._tok = None
            self.device = device or ("cuda:0" if torch.cuda.is_available() else "cpu")

        @property
        def model(self):
            if self._model is None:
                self.setup()
            return self._model

        @property
        def tokenizer(self):
            if self._tok is None:
                self.setup()
            return self._tok

        def setup(self):
            if self._model is not None:
                return
            self._model = AutoModelForSequenceClassification.from_pretrained(self.path)
            self._tok = AutoTokenizer.from_pretrained(self.path)
            self._model.to(self.device)
"""


# ---- a property read as the callee
def test_property_getter_is_what_is_called(tmp_path):
    _project(tmp_path, {"nli.py": _WRAPPER + """

    nli = NLI()
    enc = nli.tokenizer("a", "b", return_tensors="pt")
    logits = nli.model(**enc).logits
    """})
    assert _codes(tmp_path, "nli.py") == [(33, "DEV202")]


def test_property_callee_split_into_files_inside_a_scorer_class_one_helper_deeper(tmp_path):
    _project(tmp_path, {"nli.py": _WRAPPER, "scorer.py": """
        import torch


        class PairScorer:
            def __init__(self, nli_model):
                self.nli_model = nli_model

            def _encode(self, first, second):
                return self.nli_model.tokenizer(first, second, padding=True, return_tensors="pt")

            def score(self, first, second):
                judge = self.nli_model
                with torch.no_grad():
                    logits = judge.model(**self._encode(first, second)).logits
                return logits.softmax(-1)
    """, "run.py": """
        from nli import NLI
        from scorer import PairScorer

        scorer = PairScorer(NLI())
        print(scorer.score(["x"], ["y"]))
    """})
    assert _codes(tmp_path, "scorer.py") == [(9, "DEV202")]


def test_property_callee_silent_when_inputs_follow_the_wrapper(tmp_path):
    _project(tmp_path, {"nli.py": _WRAPPER + """

    def score(nli, a, b):
        enc = nli.tokenizer(a, b, return_tensors="pt").to(nli.device)
        return nli.model(**enc).logits


    def score_on_model_device(nli, a, b):
        enc = nli.tokenizer(a, b, return_tensors="pt").to(nli.model.device)
        return nli.model(**enc).logits


    score(NLI(), "a", "b")
    score_on_model_device(NLI(), "a", "b")
    """})
    assert _codes(tmp_path, "nli.py") == []


# ---- a model built and moved on each branch of the `if` that chooses the device
_GPT = """
    import torch
    from torch import nn


    class GPTModel(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
            self.final_norm = nn.LayerNorm(cfg["emb_dim"])
            self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

        def forward(self, idx):
            return self.out_head(self.final_norm(self.tok_emb(idx)))
"""


def test_model_built_and_moved_on_each_branch_is_on_the_chosen_device(tmp_path):
    _project(tmp_path, {"finetune.py": _GPT + """

    def calc_loss_batch(input_batch, target_batch, model, device):
        input_batch, target_batch = input_batch.to(device), target_batch.to(device)
        logits = model(input_batch)[:, -1, :]
        return nn.functional.cross_entropy(logits, target_batch)


    if __name__ == "__main__":
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--test_mode", action="store_true")
        args = parser.parse_args()
        if args.test_mode:
            cfg = {"vocab_size": 50257, "emb_dim": 12}
            model = GPTModel(cfg)
            device = "cpu"
            model.to(device)
        else:
            cfg = {"vocab_size": 50257, "emb_dim": 768}
            model = GPTModel(cfg)
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model.to(device)
        model.out_head = nn.Linear(cfg["emb_dim"], 2)
        x, y = torch.randint(0, 50257, (8, 16)), torch.randint(0, 2, (8,))
        print(calc_loss_batch(x, y, model, device))
    """})
    assert _codes(tmp_path, "finetune.py") == [(37, "DEV101")]


def test_model_loaded_by_a_helper_per_branch_split_into_files_inside_a_function(tmp_path):
    _project(tmp_path, {"gpt.py": _GPT, "loading.py": """
        import torch
        from gpt import GPTModel


        def small_model(cfg, device):
            model = GPTModel(cfg)
            model.eval()
            return model.to(device)


        def pretrained_model(cfg, path, device):
            model = GPTModel(cfg)
            model.load_state_dict(torch.load(path, map_location="cpu"))
            model.to(device)
            return model
    """, "train.py": """
        import torch
        from torch import nn
        from loading import pretrained_model, small_model


        def build(config):
            if config["smoke_test"]:
                device = "cpu"
                model = small_model(config["model"], device)
            else:
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                model = pretrained_model(config["model"], config["ckpt"], device)
            model.out_head = nn.Linear(config["model"]["emb_dim"], config["num_classes"])
            return model, device
    """})
    assert _codes(tmp_path, "train.py") == [(13, "DEV101")]


def test_model_per_branch_silent_when_the_head_comes_before_the_move_or_the_classes_differ(tmp_path):
    _project(tmp_path, {"gpt.py": _GPT, "train.py": """
        import torch
        from torch import nn
        from gpt import GPTModel


        class TinyModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.out_head = nn.Linear(4, 4)

            def forward(self, x):
                return self.out_head(x)


        def head_first(cfg, test_mode):
            if test_mode:
                model = GPTModel(cfg)
                model.out_head = nn.Linear(cfg["emb_dim"], 2)
                device = "cpu"
                model.to(device)
            else:
                model = GPTModel(cfg)
                model.out_head = nn.Linear(cfg["emb_dim"], 2)
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                model.to(device)
            return model(torch.randint(0, 10, (2, 3)).to(device))


        def unlike_models(cfg, test_mode):
            if test_mode:
                model = TinyModel()
                device = "cpu"
                model.to(device)
            else:
                model = GPTModel(cfg)
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                model.to(device)
            model.out_head = nn.Linear(4, 2)
            return model
    """})
    assert _codes(tmp_path, "train.py") == []
