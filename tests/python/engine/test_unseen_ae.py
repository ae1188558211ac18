"""Semantics found missing on unseen real cases, batch AE (tests/fixtures/engine/unseen/ae_*).

- Host data or a cpu tensor: `if isinstance(wav, np.ndarray): wav = torch.from_numpy(wav)` leaves numpy data
  on one path and a cpu tensor on the other. Numpy data lives on the host, so wherever the value is used as a
  tensor it is on the cpu either way (ae_chattts_dvae_mel_input_cpu). A tensor on an accelerator on the other
  path is not joined so: two devices stay unknown.
- `super().__call__(x)` in a subclass of torch.nn.Module alone is nn.Module.__call__, which runs `forward`
  (a project class overriding `__call__` only to type it). Before, `super()` of a class whose bases are all
  library classes was unknown.
- `hasattr(self, "encoder")` of a project module whose `__init__` set `self.encoder` is True (not having it
  stays undecided: it may be set later or be a method), so the path guarded by it is the one taken.
- A class built inside a function (`class RSDE(self.__class__)` in `SDE.reverse`) reads the function's
  names from its methods, as a closure does: `discretize_fn = self.discretize` captured there runs the
  forward SDE's method on the arguments (ae_scoresde_vesde_adjacent_sigma_index: a cpu noise schedule
  indexed by cuda time steps three calls down a predictor-corrector sampler).
- A project class deriving from the builtin `list` (transformers' LogitsProcessorList) built from a list
  holds its items: `for processor in self` yields them, one of several unlike objects each a path the loop
  body runs (ae_bark_logits_processors_cpu: processors keeping token ids on their default "cpu" device
  meet the model's cuda scores).
- A method checked on its own (a module's forward, its inputs on the module's device) follows the
  straight-line helper methods it calls on `self` that set no attribute of `self` (a helper with a test or a
  loop may take the path its caller's unknown context picks, such as a tracing-only branch): `x_tilde = self._make_sequence(b, n)` is
  what the inlined `torch.zeros(...)` was (ae_tudrl_lstmrecdqn_x_tilde_cpu rewritten with a helper; the
  same made examples/vae's cpu `eps` in `self.reparametrize` reported). A helper that swaps a submodule
  stays unfollowed there (its own checks report it).
"""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def test_numpy_or_converted_tensor_fed_to_a_moved_module():
    assert _codes("""
        import numpy as np
        import torch
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(16, 4)

            def encode(self, wav):
                if isinstance(wav, np.ndarray):
                    wav = torch.from_numpy(wav)
                return self.proj(wav)

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        enc = Encoder().to(device)
        enc.encode(np.zeros((2, 16), dtype=np.float32))
        """) == [(13, "DEV202")]


def test_conversion_in_a_helper_one_call_deeper_in_a_trainer():
    assert _codes("""
        import numpy as np
        import torch
        import torch.nn as nn

        def as_tensor(samples):
            if isinstance(samples, np.ndarray):
                samples = torch.from_numpy(samples)
            return samples

        class Trainer:
            def __init__(self):
                self.device = "cuda" if torch.cuda.is_available() else "cpu"
                self.net = nn.Linear(8, 2).to(self.device)

            def predict(self, batch):
                feats = as_tensor(batch)
                return self.net(feats)

        Trainer().predict(np.ones((4, 8), dtype=np.float32))
        """) == [(17, "DEV202")]


def test_converted_and_moved_is_silent():
    assert _codes("""
        import numpy as np
        import torch
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(16, 4)

            def encode(self, wav):
                if isinstance(wav, np.ndarray):
                    wav = torch.from_numpy(wav)
                return self.proj(wav.to(self.proj.weight.device))

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        Encoder().to(device).encode(np.zeros((2, 16), dtype=np.float32))
        """) == []


def test_converted_on_the_device_on_one_path_is_silent():
    # a cuda tensor on one path and numpy data on the other: not a cpu value
    assert _codes("""
        import numpy as np
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = nn.Linear(16, 4).to(device)

        def run(wav):
            if isinstance(wav, np.ndarray):
                wav = torch.tensor(wav, device=device)
            return net(wav)

        run(np.zeros((2, 16), dtype=np.float32))
        """) == []


def test_typed_call_override_runs_forward():
    assert _codes("""
        import numpy as np
        import torch
        import torch.nn as nn

        class DVAE(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(1, 4, 3)

            def __call__(self, inp, mode="decode"):
                return super().__call__(inp, mode)

            def forward(self, inp, mode="decode"):
                return self.conv(inp)

            def sample_audio(self, wav):
                wav = torch.from_numpy(wav)
                return self(wav, "encode")

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        DVAE().to(device).sample_audio(np.zeros((1, 1, 100), dtype=np.float32))
        """) == [(18, "DEV202")]


def test_typed_call_override_with_a_moved_input_is_silent():
    assert _codes("""
        import numpy as np
        import torch
        import torch.nn as nn

        class DVAE(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(1, 4, 3)

            def __call__(self, inp, mode="decode"):
                return super().__call__(inp, mode)

            def forward(self, inp, mode="decode"):
                return self.conv(inp)

            def sample_audio(self, wav):
                wav = torch.from_numpy(wav).to(self.conv.weight.device)
                return self(wav, "encode")

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        DVAE().to(device).sample_audio(np.zeros((1, 1, 100), dtype=np.float32))
        """) == []


def test_hasattr_guard_takes_the_encoder_path():
    # `hasattr(self, "encoder")` is True: the decode path (a cpu table lookup) is not the one this call takes
    assert _codes("""
        import torch
        import torch.nn as nn

        class Codec(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Linear(8, 8)

            def forward(self, inp, mode="decode"):
                if mode == "encode" and hasattr(self, "encoder"):
                    return self.encoder(inp)
                return inp + torch.zeros(8)

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        codec = Codec().to(device)
        codec(torch.randn(2, 8, device=device), "encode")
        """) == []


def test_waveform_from_a_loader_in_another_file(tmp_path):
    (tmp_path / "audio_io.py").write_text(textwrap.dedent("""
        import numpy as np

        def load_audio(path: str, sr: int) -> np.ndarray:
            return np.fromfile(path, dtype=np.float32)
        """))
    (tmp_path / "model.py").write_text(textwrap.dedent("""
        import numpy as np
        import torch
        import torch.nn as nn
        import torchaudio

        class Features(nn.Module):
            def __init__(self):
                super().__init__()
                self.mel = torchaudio.transforms.MelSpectrogram(sample_rate=24000, n_fft=1024, n_mels=100)

            def forward(self, audio):
                return torch.log(torch.clip(self.mel(audio), min=1e-5))

        class Speaker(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = Features()

            def embed(self, wav):
                if isinstance(wav, np.ndarray):
                    wav = torch.from_numpy(wav)
                return self.features(wav)
        """))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        import torch
        from audio_io import load_audio
        from model import Speaker

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        spk = Speaker().to(device)
        spk.embed(load_audio("sample.wav", 24000))
        """))
    result = check_path(str(tmp_path / "model.py"))
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(22, "DEV202")]


_SDE = """
    import torch

    class VESDE:
        def __init__(self, N=1000):
            self.N = N
            self.sigmas = torch.exp(torch.linspace(-4.0, 4.0, N))

        def discretize(self, x, t):
            step = (t * (self.N - 1)).long()
            prev = self.sigmas{index}
            return torch.zeros_like(x), prev

        def reverse(self, score_fn):
            discretize_fn = self.discretize

            class RSDE(self.__class__):
                def __init__(self):
                    pass

                def discretize(self, x, t):
                    f, G = discretize_fn(x, t)
                    return f - G * score_fn(x, t), G

            return RSDE()
    """


def test_local_class_method_runs_the_captured_bound_method():
    assert _codes(_SDE.format(index="[step - 1].to(t.device)") + """
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rsde = VESDE().reverse(lambda x, t: x)
    rsde.discretize(torch.randn(4, 3, device=device), torch.rand(4, device=device))
    """) == [(11, "DEV204")]


def test_local_class_index_moved_first_is_silent():
    assert _codes(_SDE.format(index=".to(t.device)[step - 1]") + """
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rsde = VESDE().reverse(lambda x, t: x)
    rsde.discretize(torch.randn(4, 3, device=device), torch.rand(4, device=device))
    """) == []


def test_local_class_through_partial_and_a_predictor_class(tmp_path):
    (tmp_path / "sde_lib.py").write_text(textwrap.dedent(_SDE.format(index="[step - 1].to(t.device)")))
    (tmp_path / "sampling.py").write_text(textwrap.dedent("""
        import functools
        import torch

        class ReverseDiffusionPredictor:
            def __init__(self, sde, score_fn):
                self.rsde = sde.reverse(score_fn)

            def update_fn(self, x, t):
                f, G = self.rsde.discretize(x, t)
                return x - f + G[:, None] * torch.randn_like(x)

        def shared_predictor_update_fn(x, t, sde, model, predictor):
            return predictor(sde, model).update_fn(x, t)

        def get_pc_sampler(sde, shape, predictor, device="cuda"):
            update = functools.partial(shared_predictor_update_fn, sde=sde, predictor=predictor)

            def pc_sampler(model):
                x = torch.randn(*shape).to(device)
                for t in torch.linspace(1.0, 1e-3, sde.N, device=device):
                    x = update(x, torch.ones(shape[0], device=t.device) * t, model=model)
                return x

            return pc_sampler
        """))
    (tmp_path / "demo.py").write_text(textwrap.dedent("""
        import torch
        import sampling
        import sde_lib

        device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
        sampler = sampling.get_pc_sampler(sde_lib.VESDE(), (8, 3), sampling.ReverseDiffusionPredictor, device=device)
        sampler(lambda x, t: x)
        """))
    result = check_path(str(tmp_path / "sde_lib.py"))
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(11, "DEV204")]


_PROCESSORS = """
    import torch
    import torch.nn as nn

    class LogitsProcessor:
        def __call__(self, input_ids, scores):
            raise NotImplementedError

    class LogitsProcessorList(list):
        def __call__(self, input_ids, scores, **kwargs):
            for processor in self:
                scores = processor(input_ids, scores)
            return scores

    class SuppressTokens(LogitsProcessor):
        def __init__(self, tokens, device: str = "cpu"):
            self.tokens = torch.tensor(list(tokens), device=device)

        def __call__(self, input_ids, scores):
            vocab = torch.arange(scores.shape[-1], device=scores.device)
            return torch.where(torch.isin(vocab, self.tokens), -float("inf"), scores)

    class Temperature(LogitsProcessor):
        def __init__(self, t):
            self.t = t

        def __call__(self, input_ids, scores):
            return scores / self.t

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.lm_head = nn.Linear(16, 100)

        def forward(self, h):
            return self.lm_head(h)

        def sample(self, h, logits_processor=None):
            processors = LogitsProcessorList(logits_processor if logits_processor is not None else [])
            return processors(None, self(h)[:, -1, :])
    """


def test_list_subclass_of_processors_runs_each():
    assert _codes(_PROCESSORS + """
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dec = Decoder().to(device)
    dec.sample(torch.randn(2, 5, 16, device=device), [Temperature(0.7), SuppressTokens([1, 2])])
    """) == [(17, "DEV202")]


def test_list_subclass_of_processors_on_the_scores_device_is_silent():
    assert _codes(_PROCESSORS + """
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dec = Decoder().to(device)
    dec.sample(torch.randn(2, 5, 16, device=device), [Temperature(0.7), SuppressTokens([1, 2], device=device)])
    """) == []


def test_list_subclass_of_processors_on_an_unknown_device_is_silent():
    assert _codes(_PROCESSORS + """
    def run(dec, h):
        return dec.sample(h, [Temperature(0.7), SuppressTokens([1, 2])])
    """) == []


_RECURRENT = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class LSTMRecDQN(nn.Module):
        def __init__(self, num_actions):
            super().__init__()
            self.inner = nn.Linear(7, 128)
            self.LSTM_outer = nn.LSTM(input_size=128, hidden_size=64, batch_first=True)
            self.head = nn.Linear(64, num_actions)

        def _make_sequence(self, batch_size, history_length):
            return torch.zeros((batch_size, history_length + 1, 128)){move}

        def forward(self, s, s_hist):
            batch_size, history_length, _ = s_hist.shape
            x_tilde = self._make_sequence(batch_size, history_length)
            x_tilde[:, -1, :] = F.relu(self.inner(s))
            mem, _ = self.LSTM_outer(x_tilde)
            return self.head(mem[:, -1])
    """


def test_forward_follows_a_self_helper_that_builds_a_cpu_tensor():
    assert _codes(_RECURRENT.format(move="")) == [(18, "DEV202")]


def test_forward_self_helper_on_the_module_device_is_silent():
    assert _codes(_RECURRENT.format(move=".to(self.head.weight.device)")) == []


def test_forward_self_helper_in_an_agent_split_into_files(tmp_path):
    (tmp_path / "nets.py").write_text(textwrap.dedent(_RECURRENT.format(move="")))
    (tmp_path / "agent.py").write_text(textwrap.dedent("""
        import torch
        from nets import LSTMRecDQN

        class Agent:
            def __init__(self, device):
                self.device = torch.device("cuda") if device == "cuda" else torch.device("cpu")
                self.DQN = LSTMRecDQN(num_actions=4).to(self.device)

            @torch.no_grad()
            def greedy(self, s, s_hist):
                s = torch.tensor(s, dtype=torch.float32).to(self.device)
                s_hist = torch.tensor(s_hist, dtype=torch.float32).to(self.device)
                return torch.argmax(self.DQN(s, s_hist)).item()
        """))
    result = check_path(str(tmp_path / "nets.py"))
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(18, "DEV202")]


def test_forward_does_not_follow_a_branching_self_helper():
    # the helper's cpu path is taken only under a condition the caller's context fixes (here: tracing)
    assert _codes("""
        import torch
        import torch.nn as nn

        def is_tracing():
            return torch.jit.is_tracing()

        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)

            def rel_shift(self, x):
                n = x.shape[-1]
                if is_tracing():
                    idx = torch.arange(n).expand_as(x)
                    return torch.gather(x, 1, idx)
                return x

            def forward(self, x):
                return self.rel_shift(self.proj(x))
        """) == []
