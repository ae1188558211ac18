"""Semantics found missing by the unseen batch U (tests/fixtures/engine/unseen/u_*: Hugging Face and friends),
each tested on the variations a user writes (renamed, split into files, one helper deeper, inside a class)
and on the neighbours that must stay silent:
- a `@property` read as the callee (`nli.deberta(**enc)`): Python runs the getter first and calls what it
  returns, so the model a lazy-loading wrapper keeps (`self._deberta`, moved in `setup()`) is what meets
  the inputs."""

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
