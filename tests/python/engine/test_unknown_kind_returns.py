"""A value of unknown kind moved with `.to()` may be a module (moved in place): returning it from a
helper, alone or in a tuple, in the same file or another, never turns it into a tensor whose later
`x.to(device)` statement is reported as thrown away (field mechanism M14)."""

from __future__ import annotations

from devflow import api

LOADER = '''import torch
import transformers


def load_encoder(path, device="cpu"):
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path).model
    model = model.requires_grad_(False).to(device)
    return {ret}
'''


def _check(tmp_path, ret: str, use: str, split: bool) -> list[str]:
    main = f"import torch\nfrom loaders import load_encoder\n\n{use}\nencoder.to('cuda')\n"
    if split:
        (tmp_path / "loaders.py").write_text(LOADER.format(ret=ret))
        (tmp_path / "run.py").write_text(main)
    else:
        body = LOADER.format(ret=ret) + "\n\n" + main.replace("from loaders import load_encoder\n", "")
        (tmp_path / "run.py").write_text(body)
    return [d.code for d in api.check_path(str(tmp_path / "run.py")).diagnostics]


def test_tuple_return_across_files_stays_silent(tmp_path):
    assert _check(tmp_path, "model, tok", "encoder, tok = load_encoder('x', device=torch.device('cpu'))", True) == []


def test_tuple_return_same_file_stays_silent(tmp_path):
    assert _check(tmp_path, "model, tok", "encoder, tok = load_encoder('x', device='cpu')", False) == []


def test_single_return_stays_silent(tmp_path):
    assert _check(tmp_path, "model", "encoder = load_encoder('x')", True) == []


def test_a_real_tensor_returned_in_a_tuple_is_still_reported(tmp_path):
    src = '''import torch


def make():
    x = torch.zeros(3)
    return x, 1


t, n = make()
t.to("cuda")
'''
    (tmp_path / "t.py").write_text(src)
    assert [d.code for d in api.check_path(str(tmp_path / "t.py")).diagnostics] == ["DEV107"]


def test_a_chain_of_module_methods_on_an_unknown_value_stays_maybe_a_module(tmp_path):
    """`instantiate(cfg).to(device).eval()` returned from a loader, then `model.cuda()` in a helper
    (field held-out: a gradio demo's load/unload helpers)."""
    (tmp_path / "helpers.py").write_text('''import torch
from cfg import instantiate


def load_model(config, device):
    model = instantiate(config).to(device).eval()
    return model, None


def load_module_gpu(model):
    model.cuda()


def unload_module_gpu(model):
    model.cpu()
''')
    (tmp_path / "app.py").write_text('''import torch
from helpers import load_model, load_module_gpu, unload_module_gpu

model, flt = load_model("c.yaml", "cpu")
load_module_gpu(model)
unload_module_gpu(model)
''')
    assert [d.code for d in api.check_path(str(tmp_path / "app.py")).diagnostics] == []
    assert [d.code for d in api.check_path(str(tmp_path / "helpers.py")).diagnostics] == []


def test_branches_that_move_an_unknown_value_to_different_devices_stay_maybe_a_module(tmp_path):
    src = '''import sys
import torch
from cfg import instantiate

if sys.argv[1:] == ["gpu"]:
    model = instantiate("c").to("cuda").eval()
else:
    model = instantiate("c").to("cpu").eval()
model.cuda()
'''
    (tmp_path / "t.py").write_text(src)
    assert [d.code for d in api.check_path(str(tmp_path / "t.py")).diagnostics] == []
