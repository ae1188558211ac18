"""Semantics found missing on unseen real cases, batch BN (tests/fixtures/engine/unseen/bn_*): applications
(language / speech generation, RL, time series).

- `os.environ.get("LOCAL_RANK") or 0` is the process's local rank, or 0 in a single process (which is rank 0):
  used as a GPU index (`device_map={"": int(...)}`, `.to(int(...))`) it names the rank's GPU, as
  `int(os.environ.get("LOCAL_RANK", 0))` does.
- `MyLM.from_pretrained(path, device_map=<one device>)` of a project subclass of a library model class (a
  transformers `PreTrainedModel` subclass with its own forward) is loaded by the inherited loader the way the
  library's own classes are: the whole model on that one device, no hooks, so cpu inputs (a tokenizer's output)
  fail there. A quantized load (bitsandbytes: accelerate hooks move the inputs), a strategy ("auto"), a real map
  or keywords spread from a dict stay unknown.
- A tokenizer's output spread into a project submodule called from its parent module's code
  (`self.model(**prompts)` in a method of an `nn.Module` wrapper) binds forward parameters not known here by
  name: the mix is judged at that call, as for a model called from the top level (before, the submodule's
  forward ran with those parameters unknown and nothing was said).
- `try: import torch ... except ImportError: ...` only guards torch's import: the program analyzed is a PyTorch
  program, so the import succeeds and the handler (`return None, None`, `torch = None`) never runs. RLlib binds
  torch in every file with `torch, nn = try_import_torch()` (bn_rllib_dqn_exploration_rand_cpu); before, the
  handler's fallback was joined with the modules and every torch call in those files was unknown. A handler that
  catches more than the import's failure, or a guard around another package's import, is still followed. (A class
  whose base is such a name, `class Policy(nn.Module)`, is still not known as a module: class bases are resolved
  from the imports.)

Found while rebuilding tianyi-lab/MoE-Embedding (dropped from the batch: its model is 4-bit, which accelerate
hooks), kept because both are how real projects load their own model classes."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- `os.environ.get("LOCAL_RANK") or 0` as a GPU index --------------------------------------------------------

_AUTO_RANK_OR = """
    import os
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained("m")
    model = AutoModelForCausalLM.from_pretrained("m", device_map={"": int(os.environ.get("LOCAL_RANK") or 0)})
    prompts = tok(["a prompt"], padding=True, return_tensors="pt")
    out = model(**prompts)
"""


def test_local_rank_or_zero_names_the_rank_gpu_in_a_device_map():
    assert _codes(_AUTO_RANK_OR) == [(8, "DEV202")]


def test_local_rank_or_zero_inputs_moved_to_the_model_is_clean():
    src = _AUTO_RANK_OR.replace('return_tensors="pt")', 'return_tensors="pt").to(model.device)')
    assert _codes(src) == []


def test_local_rank_or_zero_in_a_helper_and_a_move():
    src = """
        import os
        import torch
        from torch import nn


        def local_gpu():
            return int(os.getenv("LOCAL_RANK") or 0)


        model = nn.Linear(4, 2).to(local_gpu())
        x = torch.randn(3, 4)
        y = model(x)
    """
    assert _codes(src) == [(12, "DEV201")]


def test_an_unrelated_variable_or_zero_stays_unknown():
    src = _AUTO_RANK_OR.replace('"LOCAL_RANK"', '"MY_SETTING"')
    assert _codes(src) == []


# --- from_pretrained of a project subclass of a library model, on one device --------------------------------

_MODELING = """
    import torch
    from torch import nn
    from transformers import PreTrainedModel, PretrainedConfig


    class MyConfig(PretrainedConfig):
        model_type = "mine"


    class MyPreTrainedModel(PreTrainedModel):
        config_class = MyConfig


    class MyForCausalLM(MyPreTrainedModel):
        def __init__(self, config):
            super().__init__(config)
            self.embed_tokens = nn.Embedding(100, 8)
            self.lm_head = nn.Linear(8, 100)

        def forward(self, input_ids=None, attention_mask=None, **kwargs):
            return self.lm_head(self.embed_tokens(input_ids))
"""

_ENCODE = """
    import os
    import torch
    from transformers import AutoTokenizer

    from modeling import MyForCausalLM


    class Embedder:
        def __init__(self, name):
            self.tokenizer = AutoTokenizer.from_pretrained(name)
            self.model = MyForCausalLM.from_pretrained(name, DEVICE_MAP)

        @torch.no_grad()
        def encode(self, sentences):
            prompts = self.tokenizer(sentences, padding=True, return_tensors="pt")
            out = self.model(**prompts)
            return out[:, -1].cpu().numpy()


    if __name__ == "__main__":
        Embedder("m").encode(["a", "b"])
"""


def _project(tmp_path: Path, device_map: str, extra: str = "") -> list[tuple[int, str]]:
    (tmp_path / "modeling.py").write_text(textwrap.dedent(_MODELING))
    src = textwrap.dedent(_ENCODE).replace("DEVICE_MAP", device_map + extra)
    (tmp_path / "embed.py").write_text(src)
    return [(d.span.line, d.code) for d in check_path(str(tmp_path / "embed.py")).diagnostics]


def test_project_subclass_loaded_onto_one_gpu_meets_cpu_tokens(tmp_path):
    assert _project(tmp_path, 'device_map={"": 0}') == [(16, "DEV202")]


def test_project_subclass_device_map_from_the_local_rank(tmp_path):
    assert _project(tmp_path, 'device_map={"": int(os.environ.get("LOCAL_RANK") or 0)}') == [(16, "DEV202")]


def test_project_subclass_device_map_string(tmp_path):
    assert _project(tmp_path, 'device_map="cuda:0"') == [(16, "DEV202")]


def test_project_subclass_tokens_moved_is_clean(tmp_path):
    (tmp_path / "modeling.py").write_text(textwrap.dedent(_MODELING))
    src = textwrap.dedent(_ENCODE).replace("DEVICE_MAP", 'device_map={"": 0}').replace(
        'return_tensors="pt")', 'return_tensors="pt").to(self.model.device)')
    (tmp_path / "embed.py").write_text(src)
    assert check_path(str(tmp_path / "embed.py")).diagnostics == []


def test_project_subclass_quantized_load_is_hooked_and_silent(tmp_path):
    # bitsandbytes: accelerate always hooks a quantized model, whose hook moves the inputs to its device
    assert _project(tmp_path, 'device_map={"": 0}', ", quantization_config=object()") == []
    assert _project(tmp_path, 'device_map={"": 0}', ", load_in_4bit=True") == []


def test_project_subclass_auto_map_or_spread_keywords_stay_unknown(tmp_path):
    assert _project(tmp_path, 'device_map="auto"') == []
    assert _project(tmp_path, '**{"device_map": {"": 0}}') == []


# --- `**batch` into a project submodule called from its parent's code ----------------------------------------

_WRAPPER = """
    import torch
    from transformers import AutoTokenizer

    from modeling import MyForCausalLM


    class Embedder(torch.nn.Module):
        def __init__(self, name):
            super().__init__()
            self.tokenizer = AutoTokenizer.from_pretrained(name)
            self.model = LOAD

        @torch.no_grad()
        def encode(self, sentences):
            prompts = self.tokenizer(sentences, padding=True, return_tensors="pt")
            return self.model(**prompts)


    if __name__ == "__main__":
        Embedder("m").encode(["a", "b"])
"""


def _wrapper(tmp_path: Path, load: str, moved: bool = False) -> list[tuple[int, str]]:
    (tmp_path / "modeling.py").write_text(textwrap.dedent(_MODELING))
    src = textwrap.dedent(_WRAPPER).replace("LOAD", load)
    if moved:
        src = src.replace('return_tensors="pt")', 'return_tensors="pt").to("cuda:0")')
    (tmp_path / "embed.py").write_text(src)
    return [(d.span.line, d.code) for d in check_path(str(tmp_path / "embed.py")).diagnostics]


def test_spread_tokens_into_a_moved_project_submodule(tmp_path):
    assert _wrapper(tmp_path, 'MyForCausalLM.from_pretrained(name).to("cuda:0")') == [(16, "DEV202")]


def test_spread_tokens_into_a_project_submodule_loaded_on_one_gpu(tmp_path):
    assert _wrapper(tmp_path, 'MyForCausalLM.from_pretrained(name, device_map={"": 0})') == [(16, "DEV202")]


def test_spread_tokens_moved_to_the_submodule_is_clean(tmp_path):
    assert _wrapper(tmp_path, 'MyForCausalLM.from_pretrained(name).to("cuda:0")', moved=True) == []


def test_spread_tokens_into_a_cpu_or_unknown_submodule_stays_silent(tmp_path):
    assert _wrapper(tmp_path, "MyForCausalLM.from_pretrained(name)") == []
    assert _wrapper(tmp_path, "MyForCausalLM.from_pretrained(name).to(torch.device(name))") == []


# --- a try/except ImportError that only guards torch's import ------------------------------------------------

_FRAMEWORK = """
    def try_import_torch(error: bool = False):
        try:
            import torch
            import torch.nn as nn

            return torch, nn
        except ImportError:
            if error:
                raise ImportError("Could not import PyTorch!")
            return None, None
"""

_USER = """
    from framework import try_import_torch

    torch, nn = try_import_torch()


    def explore(policy, obs, epsilon):
        q = policy(obs)
        coin = torch.rand((q.shape[0],)) < epsilon
        return q[:, 0] * coin


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    policy = nn.Linear(4, 2).to(device)
    explore(policy, torch.randn(8, 4, device=device), 0.1)
"""


def _guarded(tmp_path: Path, framework: str, user: str) -> list[tuple[int, str]]:
    (tmp_path / "framework.py").write_text(textwrap.dedent(framework))
    (tmp_path / "user.py").write_text(textwrap.dedent(user))
    return [(d.span.line, d.code) for d in check_path(str(tmp_path / "user.py")).diagnostics]


def test_torch_bound_by_a_guarded_import_helper(tmp_path):
    assert _guarded(tmp_path, _FRAMEWORK, _USER) == [(9, "DEV201")]


def test_torch_bound_by_a_guarded_import_helper_fixed(tmp_path):
    user = _USER.replace("torch.rand((q.shape[0],))", "torch.rand((q.shape[0],), device=q.device)")
    assert _guarded(tmp_path, _FRAMEWORK, user) == []


def test_module_level_guarded_torch_import():
    src = """
        try:
            import torch
            from torch import nn
        except ModuleNotFoundError:
            torch = None
            nn = None

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)
        model(torch.randn(3, 4))
    """
    assert _codes(src) == [(11, "DEV201")]


def test_a_handler_catching_more_than_the_import_is_still_followed(tmp_path):
    assert _guarded(tmp_path, _FRAMEWORK.replace("except ImportError:", "except Exception:"), _USER) == []


def test_a_guard_around_another_package_is_still_followed(tmp_path):
    framework = _FRAMEWORK.replace("            import torch.nn as nn\n", "            import torch.nn as nn\n            import apex\n")
    assert _guarded(tmp_path, framework, _USER) == []
