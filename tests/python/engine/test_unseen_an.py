"""Semantics found missing on unseen real cases, batch AN (tests/fixtures/engine/unseen/an_*): audio,
speech and multimodal code.

- A tensor method's tensor operands are its tensors however they are passed: by position or by keyword
  (`t.index_select(dim=-1, index=i)`, `t.gather(1, index=i)`, `t.masked_fill(mask=m, value=v)`). Keyword
  operands meet the receiver's device exactly as positional ones do; only `generator=` (checked on its own)
  and `out=` are not operands. Whisper's `pad_or_trim` trims a tensor with
  `array.index_select(dim=axis, index=torch.arange(length))`: a cuda waveform meets a cpu index
  (openai/whisper#305).
- `y.to(x)` puts `y` on `x`'s device: the result's device is decided by `x`, so its cause is `x`'s. A helper that
  makes its noise with `torch.randn(...).to(x)` is right; when `x` arrives on the cpu the finding names where `x`
  was made (mozilla/TTS synthesize.py's `torch.FloatTensor(mel)` fed to the cuda WaveGrad vocoder, TTS#602), not
  the `randn` line.
- The src layout: a repository whose packaging file (setup.py / pyproject.toml / setup.cfg) sits beside `src/`
  (not itself a package) installs the packages under `src/`, so `import transformers` in a script of that
  repository is `src/transformers` (transformers#26055: VitsModel.forward's `torch.full(..., fill_value=speaker_id)`
  without device meets the speaker embedding of the model the script moved to cuda).
- A name a function declares `global` and assigns in the branches of an `if` is branched like a local one:
  each branch starts from the value before the `if`, and after it the name holds either branch's value (not
  the one the branch run last wrote). TTS's synthesize.py wrapped in `main()` with `global model,
  vocoder_model` builds and moves the vocoder on one branch and sets it to None on the other."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))


# --- keyword operands of tensor methods -------------------------------------------------------------

_PAD = """
    import torch


    def pad_or_trim(array, length: int = 480000, *, axis: int = -1):
        if torch.is_tensor(array):
            if array.shape[axis] > length:
                array = array.index_select(dim=axis, index={index})
        return array
"""


def test_keyword_index_on_cpu_meets_cuda_receiver():
    assert (5, "DEV201") in _codes("""
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        audio = torch.randn(20).to(device)
        a = audio.index_select(dim=-1, index=torch.arange(10))
    """)


def test_keyword_operands_of_other_methods():
    got = _codes("""
        import torch
        device = torch.device("cuda")
        feats = torch.randn(4, 8, device=device)
        picked = feats.gather(1, index=torch.zeros(4, 1, dtype=torch.long))
        masked = feats.masked_fill(mask=torch.zeros(4, 8, dtype=torch.bool), value=0.0)
    """)
    assert [c for _, c in got] == ["DEV201", "DEV201"] and [l for l, _ in got] == [5, 6]


def test_keyword_source_of_an_in_place_index_op():
    assert _codes("""
        import torch
        device = torch.device("cuda")
        x = torch.randn(8, device=device)
        d = x.index_add(0, index=torch.arange(4, device=device), source=torch.ones(4))
    """) == [(5, "DEV201")]


def test_keyword_index_through_a_helper_split_into_files(tmp_path):
    _write(tmp_path, {
        "whisper/__init__.py": "from .audio import pad_or_trim\n",
        "whisper/audio.py": _PAD.format(index="torch.arange(length)"),
        "run.py": """
            import torch
            import whisper

            device = "cuda" if torch.cuda.is_available() else "cpu"


            def features(wave):
                audio = torch.from_numpy(wave).to(device)
                return whisper.pad_or_trim(audio)


            if __name__ == "__main__":
                print(features(torch.randn(500000).numpy()).shape)
        """,
    })
    assert [d.code for d in check_path(str(tmp_path / "run.py")).diagnostics] == ["DEV201"]
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "whisper/audio.py")).diagnostics] == \
        [(7, "DEV201")]


def test_keyword_index_inside_a_feature_extractor_class():
    assert (10, "DEV201") in _codes("""
        import torch
        import torch.nn as nn

        class Trimmer:
            def __init__(self, n):
                self.n = n

            def __call__(self, wave):
                return wave.index_select(dim=-1, index=torch.arange(self.n))

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        trim = Trimmer(16000)
        out = trim(torch.randn(32000).to(device))
    """)


def test_keyword_index_on_the_receivers_device_is_silent():
    assert _codes(_PAD.format(index="torch.arange(length, device=array.device)") + """
    device = "cuda" if torch.cuda.is_available() else "cpu"
    audio = pad_or_trim(torch.randn(500000).to(device))
    """) == []


def test_keyword_index_with_unknown_receiver_is_silent():
    assert _codes(_PAD.format(index="torch.arange(length)") + """
    def run(audio):
        return pad_or_trim(audio)
    """) == []


def test_non_tensor_keywords_are_not_operands():
    assert _codes("""
        import torch
        device = torch.device("cuda")
        x = torch.randn(4, device=device)
        buf = torch.empty(4)
        y = x.add(1.0, alpha=2)
        z = x.exponential_(lambd=1.0)
    """) == []


# --- `y.to(x)` follows x -------------------------------------------------------------------------------

_VOCODER = """
    import torch
    from torch import nn


    class Vocoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(1, 4, 3)

        @torch.no_grad()
        def inference(self, x):
            y_n = torch.randn(x.shape[0], 1, 300).to(x)
            return self.conv(y_n) + self.conv(x)
"""


def test_to_other_tensor_blames_the_other_tensor():
    got = _codes(_VOCODER + """
    def tts(vocoder, mel):
        return vocoder.inference(torch.FloatTensor(mel).unsqueeze(0))


    vocoder = Vocoder().cuda()
    tts(vocoder, [[0.0] * 300])
    """)
    assert got == [(17, "DEV201")]  # the FloatTensor line, not the randn(...).to(x) line (13)


def test_to_other_tensor_split_into_files(tmp_path):
    _write(tmp_path, {
        "vocoder/__init__.py": "",
        "vocoder/model.py": _VOCODER,
        "synthesize.py": """
            import torch
            from vocoder.model import Vocoder


            def tts(vocoder, mel):
                return vocoder.inference(torch.FloatTensor(mel).unsqueeze(0))


            if __name__ == "__main__":
                vocoder = Vocoder()
                vocoder.cuda()
                tts(vocoder, [[0.0] * 300])
        """,
    })
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "synthesize.py")).diagnostics] == [(6, "DEV201")]
    assert check_path(str(tmp_path / "vocoder/model.py")).diagnostics == []


def test_to_other_tensor_on_the_device_is_silent():
    assert _codes(_VOCODER + """
    vocoder = Vocoder().cuda()
    vocoder.inference(torch.FloatTensor([[0.0] * 300]).unsqueeze(0).to("cuda"))
    """) == []


def test_to_other_tensor_of_unknown_device_is_silent():
    assert _codes(_VOCODER + """
    def run(vocoder, mel):
        return vocoder.inference(mel)
    """) == []


# --- src layout ----------------------------------------------------------------------------------------

_VITS = """
    import torch
    from torch import nn


    class VitsModel(nn.Module):
        def __init__(self, num_speakers=4):
            super().__init__()
            self.embed_speaker = nn.Embedding(num_speakers, 8)

        def forward(self, input_ids, speaker_id=None):
            emb = self.embed_speaker(torch.full(size=(1,), fill_value=speaker_id{device}))
            return input_ids.float().unsqueeze(-1) + emb
"""

_USER = """
    import torch
    from mytts import VitsModel

    model = VitsModel()
    model.to("cuda")
    ids = torch.ones(1, 5, dtype=torch.long).to("cuda")
    out = model(ids, speaker_id=3)
"""


def _src_repo(tmp_path, device="", packaging="setup.py", src_init=False):
    files = {
        packaging: "" if packaging != "setup.py" else "from setuptools import setup\nsetup(name='mytts', package_dir={'': 'src'})\n",
        "src/mytts/__init__.py": "from .modeling import VitsModel\n",
        "src/mytts/modeling.py": _VITS.format(device=device),
        "examples/speak.py": _USER,
    }
    if src_init:
        files["src/__init__.py"] = ""
    _write(tmp_path, files)


def test_src_layout_resolves_the_installed_package(tmp_path):
    _src_repo(tmp_path)
    assert [d.code for d in check_path(str(tmp_path / "examples/speak.py")).diagnostics] == ["DEV201"]
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "src/mytts/modeling.py")).diagnostics] == \
        [(11, "DEV201")]


def test_src_layout_with_pyproject(tmp_path):
    _src_repo(tmp_path, packaging="pyproject.toml")
    assert [d.code for d in check_path(str(tmp_path / "examples/speak.py")).diagnostics] == ["DEV201"]


def test_src_layout_fixed_is_silent(tmp_path):
    _src_repo(tmp_path, device=", device=self.embed_speaker.weight.device")
    assert check_path(str(tmp_path / "examples/speak.py")).diagnostics == []
    assert check_path(str(tmp_path / "src/mytts/modeling.py")).diagnostics == []


def test_src_that_is_a_package_is_not_a_layout(tmp_path):
    _src_repo(tmp_path, src_init=True)  # `src` is imported as `src`: `import mytts` names an installed library
    assert check_path(str(tmp_path / "examples/speak.py")).diagnostics == []


# --- `global` names assigned on branches -------------------------------------------------------------

_MAIN = _VOCODER + """
    def tts(vocoder, mel):
        return vocoder.inference({mel})


    def main():
        global vocoder
        parser = argparse.ArgumentParser()
        parser.add_argument("--use_cuda", type=bool, default=False)
        parser.add_argument("--vocoder_path", type=str, default="")
        args = parser.parse_args()
        if args.vocoder_path != "":
            vocoder = Vocoder()
            if args.use_cuda:
                vocoder.cuda()
        else:
            vocoder = None
        return tts(vocoder, [[0.0] * 300])


    if __name__ == "__main__":
        main()
"""


def test_global_assigned_on_one_branch_keeps_its_value():
    got = _codes("\n    import argparse" + _MAIN.format(mel="torch.FloatTensor(mel).unsqueeze(0)"))
    assert [c for _, c in got] == ["DEV201"] and got[0][0] == 18


def test_global_on_branches_with_the_fix_is_silent():
    assert _codes("\n    import argparse" + _MAIN.format(mel="torch.FloatTensor(mel).unsqueeze(0).cuda()")) == []


def test_global_set_to_an_unknown_on_the_other_branch_is_silent():
    # the other branch loads a model of unknown placement: after the `if` the vocoder's device is unknown
    got = _codes("\n    import argparse" + _MAIN.format(mel="torch.FloatTensor(mel).unsqueeze(0)").replace(
        "vocoder = None", "vocoder = torch.load(args.vocoder_path)"))
    assert got == []


def test_global_assigned_in_both_branches_of_module_level_main_in_a_class():
    got = _codes(_VOCODER + """
    class Synthesizer:
        def load(self, use_cuda):
            global vocoder
            if use_cuda:
                vocoder = Vocoder().cuda()
            else:
                vocoder = Vocoder()

        def speak(self, mel):
            return vocoder.inference(torch.FloatTensor(mel))
    """)
    assert got == []  # `vocoder` read in another method: not this run's value
