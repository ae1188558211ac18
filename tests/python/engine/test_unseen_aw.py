"""Semantics found missing on unseen real cases, batch AW (tests/fixtures/engine/unseen/aw_*): generative
models (VAE sampling, diffusion samplers, GAN label conditioning, FID evaluation, vector quantizers).

- A matrix product takes no 0-dim operand: `a @ b` (Tensor.__matmul__, torch.matmul) raises "both arguments
  to matmul need to be at least 1D" for a 0-dim tensor. So an operand of `@` that runs has a dimension and is
  never the 0-dim cpu tensor that mixes with any device. A VaDE's per-component sampler builds the one-hot
  component matrix from host data, `torch.tensor(np.eye(k))` (which the engine otherwise takes for a possible
  0-dim scalar), and multiplies it with the prior means kept on the model's device (DEV201,
  algostability#2). An elementwise op with the same tensor stays silent (it may be 0-dim there); the product
  of two maybe-0-dim operands may itself be 0-dim.
- `argparse.Namespace(**kw)` is a plain attribute record like `types.SimpleNamespace`: its attributes are its
  keywords and what the code stores on it, so `config = argparse.Namespace(); config.device = cuda` hands
  the device to whatever reads `config.device` (a model's `__init__` placing its prior there).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- a matmul operand has a dimension ------------------------------------------------------------------

_SAMPLER = """
    import numpy as np
    import torch
    from torch import nn


    class GMMPrior(nn.Module):
        def __init__(self, device, k=4, d=8):
            super().__init__()
            self.num_components = k
            self.mu_p_z = nn.Parameter(torch.zeros(d, k)).to(device)

        def sample(self):
            y_samples = {ONEHOT}
            return {USE}


    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    prior = GMMPrior(device).to(device)
    z = prior.sample()
"""


def _sampler(onehot="torch.tensor(np.eye(self.num_components, dtype=np.float32))",
             use="y_samples @ self.mu_p_z.permute(1, 0)") -> str:
    return _SAMPLER.replace("{ONEHOT}", onehot).replace("{USE}", use)


def test_matmul_with_host_onehot_on_cpu_is_a_mix():
    assert _codes(_sampler()) == [(14, "DEV201")]


def test_torch_matmul_spelled_as_operator_renamed_and_from_a_name():
    src = _sampler(onehot="np.eye(self.num_components)", use="torch.tensor(y_samples).float() @ self.mu_p_z.T")
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_matmul_in_a_helper_one_call_deeper():
    src = """
        import numpy as np
        import torch
        from torch import nn


        def component_means(onehot, means):
            return onehot @ means.t()


        class VaDE(nn.Module):
            def __init__(self):
                super().__init__()
                self.mu = nn.Parameter(torch.zeros(6, 3))

            def sample_per_component(self):
                eye = torch.tensor(np.eye(3, dtype=np.float32))
                return component_means(eye, self.mu)


        model = VaDE().cuda()
        model.sample_per_component()
    """
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_matmul_fixed_by_moving_the_onehot_is_silent():
    assert _codes(_sampler(onehot="torch.tensor(np.eye(self.num_components, dtype=np.float32)).to(self.mu_p_z.device)")) == []


def test_elementwise_op_with_a_maybe_0_dim_host_tensor_stays_silent():
    # `torch.tensor(x)` of host data may be 0-dim: a cpu 0-dim tensor goes with any device
    assert _codes(_sampler(onehot="torch.tensor(np.float32(2.0))", use="y_samples * self.mu_p_z")) == []


def test_matmul_with_an_operand_of_unknown_device_stays_silent():
    src = """
        import torch
        from torch import nn


        class Prior(nn.Module):
            def __init__(self):
                super().__init__()
                self.mu = nn.Parameter(torch.zeros(6, 3))

            def mix(self, weights):
                w = torch.tensor(weights)  # a tensor given keeps its device: unknown here
                return w @ self.mu.t()


        prior = Prior().cuda()
        prior.mix(load_weights())
    """
    assert _codes(src) == []


def test_matmul_of_two_cpu_tensors_is_clean():
    src = """
        import numpy as np
        import torch

        a = torch.tensor(np.eye(3, dtype=np.float32))
        b = torch.zeros(3, 3)
        c = a @ b
    """
    assert _codes(src) == []


# --- argparse.Namespace is an attribute record -----------------------------------------------------------

_CONFIG = """
    import argparse
    import numpy as np
    import torch
    from torch import nn


    class Prior(nn.Module):
        def __init__(self, config):
            super().__init__()
            device = config.device
            self.mu = nn.Parameter(torch.zeros(5, 3)).to(device)

        def sample(self):
            onehot = torch.tensor(np.eye(3, dtype=np.float32))
            return onehot @ self.mu.permute(1, 0)


    config = {BUILD}
    {STORE}
    model = Prior(config).to(config.device)
    model.sample()
"""


def _config(build="argparse.Namespace()",
            store="config.device = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')") -> str:
    return _CONFIG.replace("{BUILD}", build).replace("{STORE}", store)


def test_namespace_attribute_stored_then_read_in_a_model():
    assert [c for _, c in _codes(_config())] == ["DEV201"]


def test_namespace_built_with_keywords():
    src = _config(build="argparse.Namespace(device=torch.device('cuda'), seed=0)", store="pass")
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_namespace_built_by_a_helper_then_given_a_device(tmp_path: Path):
    (tmp_path / "config.py").write_text(textwrap.dedent("""
        import argparse


        def dict2namespace(config):
            namespace = argparse.Namespace()
            for key, value in config.items():
                setattr(namespace, key, value)
            return namespace
    """))
    (tmp_path / "main.py").write_text(textwrap.dedent(_config(build="dict2namespace({'seed': 0})"))
                                      .replace("import argparse\n", "import argparse\nfrom config import dict2namespace\n", 1))
    found = [d.code for d in check_path(str(tmp_path / "main.py")).diagnostics]
    assert found == ["DEV201"]


def test_namespace_without_that_attribute_stays_silent():
    assert _codes(_config(store="config.seed = 0").replace("Prior(config).to(config.device)", "Prior(config).cuda()")) == []


def test_namespace_device_unknown_stays_silent():
    assert _codes(_config(build="argparse.Namespace(**settings)", store="pass")) == []


def test_matmul_as_torch_function_and_as_method():
    assert [c for _, c in _codes(_sampler(use="torch.matmul(y_samples, self.mu_p_z.t())"))] == ["DEV201"]
    assert [c for _, c in _codes(_sampler(use="y_samples.matmul(self.mu_p_z.t())"))] == ["DEV201"]


def test_elementwise_method_with_a_maybe_0_dim_host_tensor_stays_silent():
    assert _codes(_sampler(onehot="torch.tensor(np.float32(2.0))", use="y_samples.mul(self.mu_p_z)")) == []
