"""Semantics found missing on unseen real cases, batch BU (tests/fixtures/engine/unseen/bu_*): research code, its
models, losses and evaluation / inference scripts.

- An embedding lookup (`nn.Embedding` / `nn.EmbeddingBag`, whose forward is `F.embedding` -> `index_select`)
  takes its indices on the table's device whatever their dims: the 0-dim cpu tensor that mixes with any device
  in an element-wise op is no exception there (`emb(torch.tensor(pad_id))` on a cuda table raises "... when
  checking argument for argument index in method wrapper__index_select"). Element-wise ops keep the exception.
- `get_input_embeddings()` exists only on transformers' `PreTrainedModel`: called on an attribute of a library
  model (`model.model.get_input_embeddings()`, the base model a causal-LM head wraps) it is the same table as
  the model's own, placed with the model; under `device_map` the table is placed by accelerate like the model,
  so a cpu index given to it is DEV502 (interp/input_embeddings.py). peft's `prepare_model_for_int8_training`
  (its earlier name of `prepare_model_for_kbit_training`) returns the model it is given.
- A registry called with a key known only at run time (`load_model[args.model_name](...)` over a dict of
  project model classes) builds one of the models: they stay a choice, each one run by a call of it (as
  `join_alternatives` does for a factory's result), so the chosen model's own forward is checked with its
  own state. graphprompter's `GraphLLM` embeds its pad / bos token ids (cpu `torch.tensor(id)`) with the input
  embeddings of a `device_map="auto"` LLaMA.
- `module.apply(fn)` calls `fn` on every submodule and then on the module itself: with a project function and a
  module tree the engine knows whole (interp/module_walks.py), it runs once per module. IMS-Toucan's
  `store_inverse_all()` applies a function that calls each flow's `store_inverse()` (a `hasattr` dispatch),
  caching the inverse weight as a plain attribute before the model is moved (DEV105); the real case's flow has
  48 modules, more than the walk unrolls, so it is still not found there."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _path_codes(root: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, src in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    out = []
    for name in files:
        out += [(name, d.span.line, d.code) for d in check_path(str(root / name)).diagnostics]
    return sorted(out)


# --- an embedding lookup takes no 0-dim cpu index --------------------------------------------------------------

_LOOKUP = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda")
    emb = nn.Embedding(10, 4).to(device)
    pad = emb(IDX)
"""


def test_zero_dim_cpu_index_into_cuda_embedding():
    for idx in ("torch.tensor(3)", "torch.tensor(0, dtype=torch.long)"):
        assert _codes(_LOOKUP.replace("IDX", idx)) == [(7, "DEV201")]
    for idx in ("torch.tensor(3, device=device)", "torch.tensor(3).to(device)", "torch.tensor(3).to(emb.weight.device)"):
        assert _codes(_LOOKUP.replace("IDX", idx)) == []


def test_zero_dim_cpu_tensor_still_mixes_in_elementwise_ops():
    src = """
        import torch
        import torch.nn as nn

        device = torch.device("cuda")
        emb = nn.Embedding(10, 4).to(device)
        out = emb(torch.tensor([3], device=device)) * torch.tensor(2.0)
    """
    assert _codes(src) == []


def test_zero_dim_index_inside_a_project_module():
    src = """
        import torch
        import torch.nn as nn


        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.words = nn.Embedding(100, 8)
                self.pad_id = 0

            def forward(self, x):
                pad = self.words(torch.tensor(self.pad_id))
                return x + pad


        device = torch.device("cuda")
        tagger = Tagger().to(device)
        tagger(torch.randn(2, 8, device=device))
    """
    assert (13, "DEV201") in _codes(src)
    assert _codes(src.replace("torch.tensor(self.pad_id)", "torch.tensor(self.pad_id, device=x.device)")) == []


# --- the input embeddings of a library model ---------------------------------------------------------------------

_BASE_TABLE = """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained("llama")
    model = AutoModelForCausalLM.from_pretrained("llama").to("cuda")
    emb = model.model.get_input_embeddings()
    pad = emb(IDS)
"""


def test_input_embeddings_of_the_base_model():
    assert _codes(_BASE_TABLE.replace("IDS", "torch.tensor([tok.pad_token_id])")) == [(8, "DEV201")]
    assert _codes(_BASE_TABLE.replace("IDS", "torch.tensor(tok.pad_token_id)")) == [(8, "DEV201")]
    assert _codes(_BASE_TABLE.replace("IDS", "torch.tensor([tok.pad_token_id]).to(model.device)")) == []


def test_input_embeddings_of_an_unknown_model_say_nothing():
    src = _BASE_TABLE.replace('AutoModelForCausalLM.from_pretrained("llama").to("cuda")', "load_somehow()")
    assert _codes(src.replace("IDS", "torch.tensor([tok.pad_token_id])")) == []


_WRAPPER = """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from peft import LoraConfig, get_peft_model, prepare_model_for_int8_training


    class GraphLLM(torch.nn.Module):
        def __init__(self, path, frozen):
            super().__init__()
            kwargs = {"max_memory": {0: "20GiB", 1: "20GiB"}, "device_map": "auto"}
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            self.tokenizer.pad_token_id = 0
            model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float16, **kwargs)
            if frozen:
                for p in model.parameters():
                    p.requires_grad = False
            else:
                model = prepare_model_for_int8_training(model)
                model = get_peft_model(model, LoraConfig(r=8, task_type="CAUSAL_LM"))
            self.model = model
            self.word_embedding = self.model.model.get_input_embeddings()

        def forward(self, samples):
            pad_embeds = self.word_embedding(PAD).unsqueeze(0)
            return pad_embeds


    def main(frozen):
        model = GraphLLM("llama", frozen)
        for batch in [{"x": 1}]:
            model(batch)
"""


def test_device_map_input_embeddings_with_a_cpu_pad_id():
    assert _codes(_WRAPPER.replace("PAD", "torch.tensor(self.tokenizer.pad_token_id)")) == [(24, "DEV502")]
    fixed = "torch.tensor(self.tokenizer.pad_token_id).to(self.model.device)"
    assert _codes(_WRAPPER.replace("PAD", fixed)) == []


# --- a registry of project models ----------------------------------------------------------------------------------

_REGISTRY_MODEL = """
    import torch
    import torch.nn as nn


    class GraphLLM(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.word_embedding = nn.Embedding(100, dim).to("cuda")

        def forward(self, x):
            return self.word_embedding(INDEX)


    class GCN(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.lin = nn.Linear(dim, dim)

        def forward(self, x):
            return self.lin(x)


    load_model = {"graph_llm": GraphLLM, "gcn": GCN}
"""

_REGISTRY_MAIN = """
    import argparse

    import torch
    from src.model import load_model


    def main(args):
        model = load_model[args.model_name](8)
        for batch in [torch.ones(2, 8)]:
            loss = model(batch)


    if __name__ == "__main__":
        main(argparse.ArgumentParser().parse_args())
"""


def test_registry_of_models_runs_the_chosen_forward(tmp_path):
    files = {"src/__init__.py": "", "src/model.py": _REGISTRY_MODEL.replace("INDEX", "torch.tensor([1, 2])"),
             "train.py": _REGISTRY_MAIN}
    found = _path_codes(tmp_path, files)
    assert ("src/model.py", 12, "DEV201") in found
    fixed = dict(files, **{"src/model.py": _REGISTRY_MODEL.replace("INDEX", "torch.tensor([1, 2], device='cuda')")})
    assert _path_codes(tmp_path / "fixed", fixed) == []


def test_registry_in_one_file():
    src = _REGISTRY_MODEL.replace("INDEX", "torch.tensor([1, 2])") + """

    def main(name):
        model = load_model[name](8)
        model(torch.ones(2, 8))
    """
    assert (12, "DEV201") in _codes(src)


def test_registry_models_placed_differently_say_nothing_about_their_inputs(tmp_path):
    # which model runs is not known, nor where it is: the caller's cuda batch meets GCN's cpu layer only if
    # "gcn" is chosen; a model's own parts still meet in its forward (the index above), not this
    main = _REGISTRY_MAIN.replace("torch.ones(2, 8)", "torch.ones(2, 8).to('cuda')")
    files = {"src/__init__.py": "", "src/model.py": _REGISTRY_MODEL.replace("INDEX", "x.long()"), "train.py": main}
    assert _path_codes(tmp_path, files) == []


# --- Module.apply runs its function on every module -----------------------------------------------------------------

_APPLY = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class InvConvNear(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.eye(n))

        def store_inverse(self):
            self.weight_inv = torch.inverse(self.weight.float()).to(next(self.parameters()).device)

        def forward(self, x, reverse=False):
            weight = self.weight_inv if reverse else self.weight
            return F.conv2d(x, WEIGHT)


    class Glow(nn.Module):
        def __init__(self):
            super().__init__()
            self.flows = nn.ModuleList([InvConvNear(4), InvConvNear(4)])

        def forward(self, x, reverse=False):
            for f in self.flows:
                x = f(x, reverse=reverse)
            return x

        def store_inverse_all(self):
            def remove_weight_norm(m):
                if hasattr(m, "store_inverse"):
                    m.store_inverse()
            self.apply(remove_weight_norm)


    device = "cuda" if torch.cuda.is_available() else "cpu"
    glow = Glow()
    BEFORE
    glow = glow.to(device)
    AFTER
    z = torch.randn(1, 4, 8, 8).to(device)
    out = glow(z, reverse=True)
"""


def _apply_case(weight="weight.view(4, 4, 1, 1)", before="glow.store_inverse_all()", after="pass"):
    return _APPLY.replace("WEIGHT", weight).replace("BEFORE", before).replace("AFTER", after)


def test_apply_runs_the_function_on_each_module():
    assert _codes(_apply_case()) == [(13, "DEV105")]


def test_apply_after_the_move_or_a_weight_moved_in_forward_is_clean():
    assert _codes(_apply_case(before="pass", after="glow.store_inverse_all()")) == []
    assert _codes(_apply_case(weight="weight.view(4, 4, 1, 1).to(x.device)")) == []


def test_apply_with_a_function_from_another_file(tmp_path):
    files = {"flows.py": _apply_case().split("device = ")[0].replace(
        "            self.apply(remove_weight_norm)", "            self.apply(store_one)").replace(
        "    class Glow(nn.Module):", "    def store_one(m):\n        if hasattr(m, 'store_inverse'):\n            m.store_inverse()\n\n\n    class Glow(nn.Module):"),
        "run.py": """
            import torch
            from flows import Glow

            device = "cuda" if torch.cuda.is_available() else "cpu"
            glow = Glow()
            glow.store_inverse_all()
            glow = glow.to(device)
            out = glow(torch.randn(1, 4, 8, 8).to(device), reverse=True)
        """}
    found = _path_codes(tmp_path, files)
    assert any(code == "DEV105" for _, _, code in found)
