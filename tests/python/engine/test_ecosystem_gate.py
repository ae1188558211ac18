"""Which files are analysed: those that import a PyTorch-ecosystem package, whatever words they contain."""

from __future__ import annotations

from devflow.engine import analyze, imports_torch_ecosystem
import ast

HF_ONLY = '''from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto", load_in_8bit=True)
model.to("cuda")
'''


def test_a_file_importing_only_transformers_is_checked():
    result = analyze(HF_ONLY, "hf.py")
    assert "DEV501" in [d.code for d in result.diagnostics]


def test_import_inside_a_function_counts():
    src = "def main():\n    import peft\n    return peft\n"
    assert imports_torch_ecosystem(src, ast.parse(src))


def test_the_word_alone_does_not():
    src = "# torch is not used here\nprint('torch')\n"
    assert not imports_torch_ecosystem(src, ast.parse(src))
    src = "import torchy_helpers\nimport mytorch\n"
    assert not imports_torch_ecosystem(src, ast.parse(src))


def test_submodule_and_from_imports():
    for src in ("import torch.nn as nn\n", "from diffusers.utils import x\n", "import timm\n",
                "try:\n    import lightning as L\nexcept ImportError:\n    L = None\n"):
        assert imports_torch_ecosystem(src, ast.parse(src)), src
