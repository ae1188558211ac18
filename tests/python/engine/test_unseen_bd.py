"""Semantics found missing on unseen real cases, batch BD (tests/fixtures/engine/unseen/bd_*): inference and
generation code.

- `Tensor.to()` given only a dtype (`t.to(q.dtype)`, `t.to(torch.float16)`, `t.to(dtype=d)`) is a cast that
  moves nothing: the tensor keeps its device. Discarding its result (`attn_bias.to(query.dtype)` as a
  statement, a no-op in LLAISYS's reference attention) loses no device move, so it is no DEV107; the same
  statement with a device (`x.to(device)`, `x.to(q.device)`, `x.to(device=d, dtype=t)`) still is.
- A script that puts a folder found from its own location on the import path
  (`sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))`, or with pathlib:
  `Path(__file__).resolve().parents[1]`, directly, through a name, or in a setup function) imports its top-level
  modules from there, whatever folder it runs from: LLAISYS's test/ops/self_attention.py takes
  `random_tensor` from test/test_utils.py, whose tensors are made on the CLI-chosen device (cuda:0 for
  "nvidia"), and its cpu causal mask meets them (DEV201). A folder computed from anything else (an
  environment variable) adds nothing: the import stays unresolved and silent.
- A dict display or call that spreads a mapping passes its entries on: `model.generate(**kwargs)` with
  `kwargs = {"input_ids": ids, "max_new_tokens": n}` gives the library model `ids` as `input_ids=ids` would,
  and `{**enc, "max_new_tokens": n}` carries the tokenizer's BatchEncoding tensors with it (KServe's
  huggingfaceserver builds its generate kwargs this way). Moved first (`{**enc.to(device), ...}`), silent.
- A TypedDict class is a plain dict at run time: `_GenerateRequest(kwargs=kwargs, ...)` builds
  `{"kwargs": kwargs, ...}`, so `req["kwargs"]` read by the request handler is the dict given."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_REFERENCE_ATTENTION = """
    import torch


    def reference_attention(query, key, value, scale):
        L, S = query.size(-2), key.size(-2)
        attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
        temp_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=S - L)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
        {cast}
        attn_weight = query @ key.transpose(-2, -1) * scale + attn_bias
        return torch.softmax(attn_weight, dim=-1) @ value


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    q = torch.rand(4, 8, device=device)
    k = torch.rand(6, 8, device=device)
    v = torch.rand(6, 8, device=device)
    print(reference_attention(q, k, v, 8 ** -0.5))
"""


def test_discarded_dtype_cast_is_not_a_lost_move():
    for cast in ("attn_bias.to(query.dtype)", "attn_bias.to(torch.float16)", "attn_bias.to(dtype=torch.bfloat16)",
                 "attn_bias.to(value.dtype, non_blocking=True)"):
        assert _codes(_REFERENCE_ATTENTION.replace("{cast}", cast)) == [], cast


def test_discarded_device_move_is_still_reported():
    for cast in ("attn_bias.to(device)", "attn_bias.to(query.device)", "attn_bias.to(device=device, dtype=query.dtype)",
                 "attn_bias.cuda()"):
        assert [c for _, c in _codes(_REFERENCE_ATTENTION.replace("{cast}", cast))] == ["DEV107"], cast


def test_dtype_cast_of_a_cpu_tensor_keeps_it_on_the_cpu():
    # the kept result of a dtype cast is where the tensor was: a cpu mask cast to the query's dtype still
    # meets the GPU query (LLAISYS's bug, with the mask kept in a variable)
    src = """
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        q = torch.rand(4, 4, device=device)
        mask = torch.ones(4, 4).tril()
        mask = mask.to(q.dtype)
        print(q + mask)
    """
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_dtype_cast_in_a_helper_in_another_file(tmp_path):
    (tmp_path / "ops.py").write_text(textwrap.dedent("""
        import torch


        def causal_bias(query, L, S):
            bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
            bias.to(query.dtype)
            return bias
    """))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        import torch
        from ops import causal_bias


        class Runner:
            def __init__(self):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

            def run(self):
                q = torch.rand(4, 8, device=self.device)
                return q @ q.T + causal_bias(q, 4, 4)


        if __name__ == "__main__":
            print(Runner().run())
    """))
    assert [d.code for d in check_path(tmp_path).diagnostics] == []


_UTILS = """
    import torch


    def torch_device(device_name, device_id=0):
        if device_name == "cpu":
            return torch.device("cpu")
        elif device_name == "nvidia":
            return torch.device(f"cuda:{device_id}")
        raise ValueError(device_name)


    def random_tensor(shape, device_name):
        t = torch.rand(shape, device=torch_device(device_name))
        return t, None
"""

_OP_TEST = """
    import os
    import sys

    {path_setup}
    import torch
    from test_utils import random_tensor


    def reference(query):
        L = query.size(-2)
        bias = torch.zeros(L, L, device=query.device)
        mask = torch.ones(L, L, dtype=torch.bool{mask_device}).tril()
        bias.masked_fill_(mask.logical_not(), float("-inf"))
        return bias


    def test_op(device_name="cpu"):
        q, q_ = random_tensor((4, 4), device_name)
        reference(q)


    if __name__ == "__main__":
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cpu", choices=["cpu", "nvidia"], type=str)
        args = parser.parse_args()
        test_op(args.device)
"""

_SETUPS = [
    'parent_dir = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))\n    sys.path.insert(0, parent_dir)',
    'sys.path.append(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))',
    'from pathlib import Path\n    ROOT = Path(__file__).resolve().parents[1]\n    if str(ROOT) not in sys.path:\n        sys.path.insert(0, str(ROOT))',
    'from pathlib import Path\n    sys.path.insert(0, str(Path(__file__).parent / ".."))',
    'def _setup_path():\n        here = os.path.dirname(os.path.abspath(__file__))\n'
    '        sys.path.insert(0, os.path.join(here, ".."))\n\n\n    _setup_path()',
]


def _op_tree(tmp_path, setup: str, mask_device: str = ""):
    (tmp_path / "test" / "ops").mkdir(parents=True)
    (tmp_path / "test" / "test_utils.py").write_text(textwrap.dedent(_UTILS))
    src = textwrap.dedent(_OP_TEST.replace("{path_setup}", setup).replace("{mask_device}", mask_device))
    (tmp_path / "test" / "ops" / "attention.py").write_text(src)
    return tmp_path / "test" / "ops" / "attention.py"


def test_sys_path_from_file_location_resolves_the_helper(tmp_path):
    for i, setup in enumerate(_SETUPS):
        script = _op_tree(tmp_path / str(i), setup)
        assert [d.code for d in check_path(script).diagnostics] == ["DEV201"], setup


def test_sys_path_from_file_location_fixed_mask_is_clean(tmp_path):
    script = _op_tree(tmp_path, _SETUPS[0], mask_device=", device=query.device")
    assert [d.code for d in check_path(script).diagnostics] == []


def test_sys_path_from_elsewhere_adds_nothing(tmp_path):
    # the folder comes from the environment: the helper is not found, the tensors' device stays unknown
    script = _op_tree(tmp_path, 'sys.path.insert(0, os.environ.get("LLAISYS_TEST_DIR", "."))')
    assert [d.code for d in check_path(script).diagnostics] == []


_SERVER = """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer


    class GenerativeModel:
        def __init__(self, name):
            self._device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self._tokenizer = AutoTokenizer.from_pretrained(name)
            self._model = AutoModelForCausalLM.from_pretrained(name)
            self._model.to(self._device)

        def _generate(self, kwargs):
            return self._model.generate(**kwargs)

        def create_completion(self, prompts, max_tokens):
            {inputs}
            return self._generate({kwargs})


    if __name__ == "__main__":
        print(GenerativeModel("gpt2").create_completion(["hi"], 8))
"""


def _server(inputs: str, kwargs: str) -> list[tuple[int, str]]:
    return _codes(_SERVER.replace("{inputs}", inputs).replace("{kwargs}", kwargs))


def test_spread_tokenizer_output_reaches_generate():
    tok = 'inputs = self._tokenizer(prompts, padding=True, return_tensors="pt")'
    for kwargs in ('{**inputs, "max_new_tokens": max_tokens}', "{**inputs}",
                   '{"input_ids": inputs["input_ids"], "max_new_tokens": max_tokens}'):
        assert [c for _, c in _server(tok, kwargs)] == ["DEV202"], kwargs


def test_spread_token_ids_built_by_hand_reach_generate():
    ids = 'inputs = {"input_ids": torch.tensor(prompts, dtype=torch.int64)}'
    assert [c for _, c in _server(ids, '{**inputs, "max_new_tokens": max_tokens}')] == ["DEV201"]


def test_spread_of_moved_inputs_is_silent():
    for inputs, kwargs in (
            ('inputs = self._tokenizer(prompts, return_tensors="pt").to(self._device)', '{**inputs, "max_new_tokens": 8}'),
            ('inputs = {"input_ids": torch.tensor(prompts).to(self._device)}', '{**inputs, "max_new_tokens": 8}'),
            ('inputs = {"input_ids": torch.tensor(prompts)}', '{**{k: v.to(self._device) for k, v in inputs.items()}}')):
        assert _server(inputs, kwargs) == [], (inputs, kwargs)


def test_spread_of_inputs_with_unknown_device_is_silent():
    # the prompts arrive as tensors from the caller: their device is unknown
    src = _SERVER.replace("{inputs}", "inputs = {'input_ids': prompts}").replace(
        "{kwargs}", '{**inputs, "max_new_tokens": max_tokens}').replace(
        'create_completion(["hi"], 8)', "create_completion(load_ids(), 8)").replace(
        "import torch\n", "import torch\nfrom serving import load_ids\n", 1)
    assert _codes(src) == []


_REQUEST = """
    from typing import Any, Dict, TypedDict

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer


    class _GenerateRequest(TypedDict):
        kwargs: Dict[str, Any]
        stream: bool


    class Server:
        def __init__(self):
            self._device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self._tokenizer = AutoTokenizer.from_pretrained("gpt2")
            self._model = AutoModelForCausalLM.from_pretrained("gpt2")
            self._model.to(self._device)

        def _handle_request(self, req: _GenerateRequest):
            kwargs = req["kwargs"]
            return self._model.generate(**kwargs)

        def create(self, prompts):
            inputs = self._tokenizer(prompts, return_tensors="pt"){move}
            req = _GenerateRequest(kwargs={**inputs, "max_new_tokens": 5}, stream=False)
            return self._handle_request(req)


    if __name__ == "__main__":
        Server().create(["hi"])
"""


def test_typed_dict_request_carries_its_kwargs():
    assert [c for _, c in _codes(_REQUEST.replace("{move}", ""))] == ["DEV202"]


def test_typed_dict_request_with_moved_inputs_is_silent():
    assert _codes(_REQUEST.replace("{move}", ".to(self._device)")) == []


def test_typed_dict_in_its_own_module(tmp_path):
    src = textwrap.dedent(_REQUEST.replace("{move}", ""))
    head, rest = src.split("class Server:", 1)
    (tmp_path / "requests_types.py").write_text(head)
    (tmp_path / "server.py").write_text("import torch\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n"
                                        "from requests_types import _GenerateRequest\n\n\nclass Server:" + rest)
    assert [d.code for d in check_path(tmp_path / "server.py").diagnostics] == ["DEV202"]


def test_spread_entry_a_forward_never_combines_is_silent():
    # as for the same entry passed by keyword: `ids` is handed back untouched by forward
    src = """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x, ids=None):
                return self.fc(x), ids


        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = Net().to(device)
        batch = {"x": torch.randn(3, 4).to(device), "ids": torch.arange(3)}
        out = net(**batch)
    """
    assert _codes(src) == []
    # the entry that meets the weights still counts
    cpu_x = src.replace('"x": torch.randn(3, 4).to(device)', '"x": torch.randn(3, 4)')
    assert [c for _, c in _codes(cpu_x)] == ["DEV201"]
