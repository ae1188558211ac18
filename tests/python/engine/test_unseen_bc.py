"""Semantics found missing on unseen real cases, batch BC (tests/fixtures/engine/unseen/bc_*): graph nets,
forecasting, reinforcement and meta-learning, knowledge-graph embeddings, self-supervised queues.

- `setattr(module, "name", nn.Parameter(...))` registers a parameter exactly as `module.name =
  nn.Parameter(...)` does (nn.Module.__setattr__ runs either way): the parameter moves with its module,
  so reading it back (`getattr(self, "W")` or `self.W`) after `model.cuda()` is on the module's device
  (GNN-for-text-classification's SimpleConv: no false DEV201). A plain tensor stored the same way stays
  where it was made.
- `field(default_factory=F)` in a dataclass (also from a helper returning the field, as d3rlpy's
  `make_encoder_field()`) gives each instance `F()`: the encoder factory a config holds by default builds a
  fresh cpu module, which a probe made on the algorithm's cuda device then meets (DEV106, d3rlpy#329).
- `register_buffer` / `register_parameter` bind their arguments by keyword too (`register_buffer(name=
  "mersenne", tensor=t)`, PyKEEN's BloomFilterer): the tensor is a buffer of the module, moved with it, and
  left on the cpu with it when the module is never moved. `torch.tensor` / `torch.as_tensor` take their
  data by keyword too (`torch.as_tensor(data=[...])`): a list makes a cpu tensor, not a 0-dim scalar."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_SETATTR_PARAM = """
import torch
import torch.nn as nn


class SimpleConv(nn.Module):
    def __init__(self, in_feats, out_feats):
        super().__init__()
        setattr(self, 'W', nn.Parameter(torch.randn(in_feats, out_feats)))

    def forward(self, feat):
        return feat.mm(getattr(self, 'W'))


model = SimpleConv(3, 4)
x = torch.randn(2, 3)
if torch.cuda.is_available():
    x = x.cuda()
    model = model.cuda()
model(x)
"""


def test_setattr_parameter_moves_with_its_module():
    assert _codes(_SETATTR_PARAM) == []


def test_setattr_parameter_read_as_attribute():
    assert _codes(_SETATTR_PARAM.replace("getattr(self, 'W')", "self.W")) == []


def test_setattr_parameter_with_dtype_conversion_and_renamed():
    src = _SETATTR_PARAM.replace("nn.Parameter(torch.randn(in_feats, out_feats))",
                                 "nn.Parameter(torch.randn(in_feats, out_feats)).float()").replace("'W'", "'weight_0'")
    assert _codes(src) == []


def test_setattr_parameter_inside_a_classifier_in_another_file(tmp_path):
    (tmp_path / "layers.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn


        class SimpleConv(nn.Module):
            def __init__(self, in_feats, out_feats):
                super().__init__()
                setattr(self, 'W', nn.Parameter(torch.randn(in_feats, out_feats)))

            def forward(self, feat):
                return feat.mm(getattr(self, 'W'))
        """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from layers import SimpleConv


        class Classifer(nn.Module):
            def __init__(self, conv):
                super().__init__()
                self.gcn1 = conv(3, 8)
                self.gcn2 = conv(8, 2)

            def forward(self, features):
                return self.gcn2(F.relu(self.gcn1(features)))


        model = Classifer(conv=SimpleConv)
        t_features = torch.randn(5, 3)
        if torch.cuda.is_available():
            t_features = t_features.cuda()
            model = model.cuda()
        logits = model(t_features)
        """))
    for name in ("main.py", "layers.py"):
        assert [d.code for d in check_path(str(tmp_path / name)).diagnostics] == [], name


def test_setattr_plain_tensor_in_another_file_is_reported(tmp_path):
    (tmp_path / "layers.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn


        class SimpleConv(nn.Module):
            def __init__(self, in_feats, out_feats):
                super().__init__()
                setattr(self, 'W', torch.randn(in_feats, out_feats))

            def forward(self, feat):
                return feat.mm(getattr(self, 'W'))
        """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import torch
        from layers import SimpleConv

        model = SimpleConv(3, 8)
        t = torch.randn(5, 3)
        if torch.cuda.is_available():
            t = t.cuda()
            model = model.cuda()
        model(t)
        """))
    found = [d.code for f in ("main.py", "layers.py") for d in check_path(str(tmp_path / f)).diagnostics]
    assert found and set(found) == {"DEV201"}


def test_setattr_plain_tensor_is_still_left_on_the_cpu():
    src = _SETATTR_PARAM.replace("nn.Parameter(torch.randn(in_feats, out_feats))", "torch.randn(in_feats, out_feats)")
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_setattr_parameter_module_never_moved_still_reported():
    src = _SETATTR_PARAM.replace("    model = model.cuda()\n", "")
    assert [c for _, c in _codes(src)] != []


# -- dataclass fields with a default_factory -----------------------------------------------------

_CONFIG = """
import dataclasses
from dataclasses import field

import torch
from torch import nn


class VectorEncoder(nn.Module):
    def __init__(self, n):
        super().__init__()
        self._layers = nn.Sequential(nn.Linear(n, 16), nn.ReLU())

    def forward(self, x):
        return self._layers(x)


@dataclasses.dataclass()
class VectorEncoderFactory:
    hidden: int = 16

    def create(self, n):
        return VectorEncoder(n)


def compute_output_size(shape, encoder, device):
    with torch.no_grad():
        y = encoder(torch.rand(1, *shape, device=device))
    return int(y.shape[1])


@dataclasses.dataclass()
class Config:
    gamma: float = 0.99
    encoder_factory: VectorEncoderFactory = FIELD


class Algo:
    def __init__(self, config, device):
        self._config = config
        self._device = device

    def build(self, shape):
        encoder = self._config.encoder_factory.create(shape[0])
        hidden = compute_output_size(shape, encoder, self._device)
        q = nn.Linear(hidden, 4)
        q.to(self._device)
        return q


Algo(Config(gamma=0.9), "cuda:0").build((8,))
"""


def _config(field_decl: str) -> list[tuple[int, str]]:
    return _codes(_CONFIG.replace("FIELD", field_decl))


def test_default_factory_builds_a_fresh_cpu_module_met_by_a_cuda_probe():
    assert [c for _, c in _config("field(default_factory=VectorEncoderFactory)")] != []
    assert {c for _, c in _config("field(default_factory=VectorEncoderFactory)")} == {"DEV106"}


def test_default_factory_from_a_helper_returning_the_field():
    src = _CONFIG.replace("FIELD", "make_encoder_field()").replace(
        "@dataclasses.dataclass()\nclass Config:",
        "def make_encoder_field():\n    return field(default_factory=VectorEncoderFactory)\n\n\n"
        "@dataclasses.dataclass()\nclass Config:")
    assert {c for _, c in _codes(src)} == {"DEV106"}


def test_default_value_and_explicit_argument_still_work():
    assert {c for _, c in _config("field(default=VectorEncoderFactory())")} == {"DEV106"}
    src = _CONFIG.replace("FIELD", "None").replace("Config(gamma=0.9)", "Config(encoder_factory=VectorEncoderFactory())")
    assert {c for _, c in _codes(src)} == {"DEV106"}


def test_probe_on_the_encoder_device_is_silent():
    src = _CONFIG.replace("FIELD", "field(default_factory=VectorEncoderFactory)").replace(
        "def compute_output_size(shape, encoder, device):\n    with torch.no_grad():",
        "def compute_output_size(shape, encoder, device):\n    device = next(encoder.parameters()).device\n"
        "    with torch.no_grad():")
    assert _codes(src) == []


def test_unknown_factory_stays_silent():
    src = _CONFIG.replace("FIELD", "field(default_factory=make_factory)").replace(
        "@dataclasses.dataclass()\nclass Config:", "from registry import make_factory\n\n\n@dataclasses.dataclass()\nclass Config:")
    assert _codes(src) == []


def test_factory_in_a_package_split_into_files(tmp_path):
    pkg = tmp_path / "rl"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "encoders.py").write_text(textwrap.dedent(_CONFIG.split("def compute_output_size")[0]))
    (pkg / "algo.py").write_text(textwrap.dedent("""
        import dataclasses
        from dataclasses import field

        import torch
        from torch import nn

        from .encoders import VectorEncoderFactory


        def make_encoder_field():
            return field(default_factory=VectorEncoderFactory)


        def compute_output_size(shape, encoder, device):
            with torch.no_grad():
                y = encoder(torch.rand(1, *shape, device=device))
            return int(y.shape[1])


        @dataclasses.dataclass()
        class Config:
            encoder_factory: VectorEncoderFactory = make_encoder_field()

            def create(self, device):
                return Algo(self, device)


        class Algo:
            def __init__(self, config, device):
                self._config = config
                self._device = device

            def build(self, shape):
                encoder = self._config.encoder_factory.create(shape[0])
                return compute_output_size(shape, encoder, self._device)
        """))
    (tmp_path / "run.py").write_text("from rl.algo import Config\n\nConfig().create(device='cuda:0').build((8,))\n")
    found = {d.code for f in ("run.py", "rl/algo.py", "rl/encoders.py") for d in check_path(str(tmp_path / f)).diagnostics}
    assert found == {"DEV106"}


# -- register_buffer by keyword ------------------------------------------------------------------

_FILTER = """
import torch
from torch import nn


class Filterer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer(name="mersenne", tensor=torch.as_tensor(data=[131071, 524287], dtype=torch.long))

    def forward(self, batch):
        return (self.mersenne * batch).sum(dim=-1)


class Sampler:
    def __init__(self):
        self.filterer = Filterer()

    def sample(self, positive_batch):
        return self.filterer(positive_batch)


class Loop:
    def __init__(self, model):
        self.model = model
        self.sampler = Sampler()

    @property
    def device(self):
        return next(self.model.parameters()).device

    def step(self, batch):
        return self.sampler.sample(batch.to(self.device))


model = nn.Linear(2, 2).to("cuda:0")
Loop(model).step(torch.randint(0, 10, (4, 2)))
"""


def test_keyword_buffer_of_a_module_held_by_a_plain_object_is_left_on_the_cpu():
    assert [c for _, c in _codes(_FILTER)] == ["DEV106"]


def test_buffer_name_positional_tensor_by_keyword():
    src = _FILTER.replace('register_buffer(name="mersenne", tensor=', 'register_buffer("mersenne", tensor=')
    assert [c for _, c in _codes(src)] == ["DEV106"]


def test_register_parameter_by_keyword_moves_with_a_moved_module():
    src = _FILTER.replace('self.register_buffer(name="mersenne", tensor=torch.as_tensor(data=[131071, 524287], dtype=torch.long))',
                          'self.register_parameter(name="mersenne", param=nn.Parameter(torch.ones(2)))').replace(
        "        self.filterer = Filterer()", "        self.filterer = Filterer().to('cuda:0')")
    assert _codes(src) == []


def test_keyword_buffer_moved_with_its_module_is_silent():
    src = _FILTER.replace("        self.filterer = Filterer()", "        self.filterer = Filterer().to('cuda:0')")
    assert _codes(src) == []


def test_sampler_made_a_module_and_moved_with_the_loop_is_silent():
    src = _FILTER.replace("class Sampler:\n    def __init__(self):\n",
                          "class Sampler(nn.Module):\n    def __init__(self):\n        super().__init__()\n").replace(
        "        self.sampler = Sampler()", "        self.sampler = Sampler().to(self.device)")
    assert _codes(src) == []


def test_keyword_buffer_with_unknown_batch_device_is_silent():
    src = _FILTER.replace("model = nn.Linear(2, 2).to(\"cuda:0\")", "model = load_model()").replace(
        "import torch\n", "import torch\nfrom zoo import load_model\n", 1)
    assert _codes(src) == []


def test_setattr_parameters_under_computed_names_are_silent():
    src = """
    import torch
    import torch.nn as nn


    class GraphConvolution(nn.Module):
        def __init__(self, input_dim, output_dim, support):
            super().__init__()
            self.support = support
            for i in range(len(self.support)):
                setattr(self, 'W{}'.format(i), nn.Parameter(torch.randn(input_dim, output_dim)))

        def forward(self, x):
            for i in range(len(self.support)):
                pre_sup = x.mm(getattr(self, 'W{}'.format(i)))
                if i == 0:
                    out = self.support[i].mm(pre_sup)
                else:
                    out += self.support[i].mm(pre_sup)
            return out


    support = [torch.eye(5).cuda()]
    model = GraphConvolution(3, 4, support).cuda()
    model(torch.randn(5, 3).cuda())
    """
    assert _codes(src) == []
