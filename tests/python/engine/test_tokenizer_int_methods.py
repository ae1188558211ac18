"""transformers' tokenizer methods that give Python ints (knowledge: `tokenizer_int_methods`, read from the return
annotations of the base tokenizer modules): `tokenizer.convert_tokens_to_ids(tokens)` is a list of ints for a
list of tokens, so `torch.tensor()` of it is on the cpu and meets a model on the GPU. For one token (a string)
it is an int, whose 0-dim tensor mixes with any device: silent, as are the ids moved, and a tokenizer the
engine does not know."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def test_ids_of_a_token_list_fed_to_a_cuda_model(tmp_path):
    _project(tmp_path, {"classify.py": """
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
        model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased").to("cuda")
        tokens = ["[CLS]"] + tokenizer.tokenize("a fine film") + ["[SEP]"]
        ids = torch.tensor(tokenizer.convert_tokens_to_ids(tokens)).unsqueeze(0)
        logits = model(input_ids=ids).logits
    """})
    assert _codes(tmp_path, "classify.py") == [(7, "DEV201")]


def test_ids_in_a_predictor_class_split_into_files(tmp_path):
    _project(tmp_path, {"text_utils.py": """
        def to_ids(tok, sentence):
            pieces = tok.tokenize(sentence)
            return tok.convert_tokens_to_ids([tok.cls_token] + pieces + [tok.sep_token])
    """, "predict.py": """
        import torch
        from transformers import AutoModel, AutoTokenizer
        from text_utils import to_ids


        class Predictor:
            def __init__(self, name):
                self.tok = AutoTokenizer.from_pretrained(name)
                self.model = AutoModel.from_pretrained(name).cuda().eval()

            def embed(self, sentence):
                input_ids = torch.tensor([to_ids(self.tok, sentence)])
                return self.model(input_ids).last_hidden_state


        print(Predictor("bert-base-uncased").embed("hello"))
    """})
    assert _codes(tmp_path, "predict.py") == [(12, "DEV201")]


def test_one_token_moved_ids_and_unknown_tokenizers_are_silent(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch
        from transformers import AutoModel, AutoTokenizer
        from mytok import WordTokenizer

        tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
        model = AutoModel.from_pretrained("bert-base-uncased").to("cuda")


        def moved(tokens):
            ids = torch.tensor([tokenizer.convert_tokens_to_ids(tokens)]).to("cuda")
            return model(ids)


        def one_token(hidden):
            cls_id = torch.tensor(tokenizer.convert_tokens_to_ids("[CLS]"))
            return hidden + cls_id


        def other_tokenizer(tokens):
            tok = WordTokenizer()
            return model(torch.tensor(tok.convert_tokens_to_ids(tokens)))
    """})
    assert _codes(tmp_path, "ok.py") == []
