"""Semantics found missing by the unseen batch H (tests/fixtures/engine/unseen/h_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- torch's default generators: `torch.manual_seed(s)` returns the cpu default generator, and
  `torch.default_generator` (also as a parameter's default) is it; drawing a cuda tensor with either
  fails ("Expected a 'cuda' device type for generator but found 'cpu'");
- `TASKS.CLASSIFICATION` reads a literal class attribute through the class itself (an enum-like namespace),
  so `if task == TASKS.X:` picks its branch (a head built by a helper after the move is then known);
- `kwargs.pop("task", default)` on a dict whose keys are all known gives the entry (and removes it), else
  the default;
- `setattr(parent, name, module)` registers a submodule like `parent.name = module`, and
  `model.get_submodule(path)` is a module of the model's tree (a known child, else the tree itself): an
  adapter built on the cpu and attached after the move is DEV102 at the call that attaches it;
- `x.shape[i]`, `x.size(i)`, `x.dim()`, `x.numel()` and arithmetic on them are Python numbers: a
  torch.distributions object built from them has cpu parameters, so its shaped samples are cpu tensors;
- a trace saved to a literal path (`traced.save(p)`, `torch.jit.save(traced, p)`) and loaded back from it
  (`torch.jit.load(p)`) keeps the devices baked into its graph: moved and run on other inputs, DEV207."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


# ---- torch's default generators
def test_manual_seed_generator_drawing_on_cuda(tmp_path):
    _project(tmp_path, {"sample.py": """
        import torch

        dev = "cuda"
        g = torch.manual_seed(1234)
        noise = torch.randn(2, 4, generator=g, device=dev)
        other = torch.rand((3,), generator=torch.random.manual_seed(0), device=dev)
    """})
    assert _codes(tmp_path, "sample.py") == [(5, "DEV205"), (6, "DEV205")]


def test_manual_seed_generator_in_a_trainer_class_one_helper_deeper(tmp_path):
    _project(tmp_path, {"sampler.py": """
        import torch


        def draw(shape, generator, device):
            return torch.randn(shape, generator=generator, device=device)
    """, "trainer.py": """
        import torch
        from sampler import draw


        class Sampler:
            def __init__(self, unet, seed):
                self.device = torch.device("cuda")
                self.unet = unet.to(self.device)
                self.rng = torch.manual_seed(seed)

            def latents(self, n):
                return draw((n, 4, 64, 64), self.rng, self.device)


        s = Sampler(torch.nn.Conv2d(4, 4, 3), 0)
        z = s.latents(2)
    """})
    assert _codes(tmp_path, "trainer.py") == [(12, "DEV205")]


def test_default_generator_as_a_parameter_default_filling_a_cuda_tensor(tmp_path):
    _project(tmp_path, {"perturb/init.py": """
        import torch
        from torch import default_generator as _g


        def noise_like_(x, generator=_g):
            x.copy_(x.new(x.shape).uniform_(generator=generator))
    """, "attack.py": """
        import torch
        from perturb.init import noise_like_


        def start(x):
            delta = torch.zeros_like(x)
            noise_like_(delta)
            return delta


        x = torch.rand(2, 3, device="cuda")
        d = start(x)
    """})
    assert _codes(tmp_path, "attack.py") == [(7, "DEV205")]


def test_default_generators_stay_silent_on_the_cpu_or_with_a_device_generator(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch


        def noise_like_(x, generator=torch.default_generator):
            x.copy_(x.new(x.shape).normal_(generator=generator))


        def latents(shape, device, seed):
            g = torch.Generator(device=device).manual_seed(seed)
            return torch.randn(shape, generator=g, device=device)


        def on_cpu_then_moved(shape, device, seed):
            return torch.randn(shape, generator=torch.manual_seed(seed)).to(device)


        def passed_in(x, generator):
            return torch.randn(x.shape, generator=generator, device=x.device)


        cpu = torch.zeros(3)
        noise_like_(cpu)
        a = latents((2,), "cuda", 0)
        b = on_cpu_then_moved((2,), "cuda", 0)
        c = passed_in(torch.zeros(2, device="cuda"), None)
        torch.cuda.manual_seed(0)
        e = torch.randn(2, device="cuda", generator=torch.cuda.default_generators[0])
    """})
    assert _codes(tmp_path, "ok.py") == []


# ---- enum-like class constants and dict.pop pick the branch that builds the new head
HEADS = """
from torch import nn


class Tasks:
    EMBED = "embed"
    CLASSIFY = "classify"


class LinearHead(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.fc = nn.Linear(d, n)

    def forward(self, x):
        return self.fc(x)
"""

MODEL = """
from torch import nn
from heads import LinearHead, Tasks


class Net(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.pending = kwargs.get("options", {}).pop("task", Tasks.EMBED)
        self.body = nn.Linear(8, 16)
        self.head = self.make_head(Tasks.EMBED)

    def make_head(self, task):
        if task == Tasks.EMBED:
            return nn.Identity()
        elif task == Tasks.CLASSIFY:
            return LinearHead(16, 3)
        raise ValueError(task)

    def setup_task(self):
        if self.pending != Tasks.EMBED:
            self.head = self.make_head(self.pending)

    def forward(self, x):
        return self.head(self.body(x))
"""


def test_head_built_by_a_helper_branch_after_the_move_split_into_files(tmp_path):
    _project(tmp_path, {"heads.py": HEADS, "model.py": MODEL, "run.py": """
        import torch
        from model import Net

        net = Net(options={"task": "classify"}).to("cuda")
        net.setup_task()
        y = net(torch.randn(2, 8, device="cuda"))
    """})
    assert _codes(tmp_path, "run.py") == [(5, "DEV102")]


def test_head_built_after_the_move_inside_a_trainer_class(tmp_path):
    _project(tmp_path, {"heads.py": HEADS, "model.py": MODEL, "trainer.py": """
        import torch
        from heads import Tasks
        from model import Net


        class Trainer:
            def __init__(self, device):
                self.device = device
                self.model = Net(options={"task": Tasks.CLASSIFY}).to(device)

            def prepare(self):
                self.model.setup_task()

            def step(self, x):
                return self.model(x.to(self.device))


        t = Trainer(torch.device("cuda"))
        t.prepare()
        out = t.step(torch.randn(2, 8))
    """})
    # the call that builds the head after `__init__` moved the model (batch z: seen from the common caller)
    assert _codes(tmp_path, "trainer.py") == [(19, "DEV102")]


def test_enum_constants_and_pop_stay_silent_when_the_branch_is_safe_or_unknown(tmp_path):
    _project(tmp_path, {"heads.py": HEADS, "model.py": MODEL, "ok.py": """
        import torch
        from model import Net

        embed = Net(options={"task": "embed"}).to("cuda")
        embed.setup_task()
        moved_after = Net(options={"task": "classify"}).to("cuda")
        moved_after.setup_task()
        moved_after.to("cuda")
        from_cli = Net(**vars(object())).to("cuda")
        from_cli.setup_task()
        y = embed(torch.randn(2, 8, device="cuda")) + moved_after(torch.randn(2, 8, device="cuda"))
    """, "mutated.py": """
        import torch
        from heads import Tasks
        from model import Net

        Tasks.EMBED = "classify"
        net = Net(options={"task": "classify"}).to("cuda")
        net.setup_task()
    """})
    assert _codes(tmp_path, "ok.py") == []
    assert _codes(tmp_path, "mutated.py") == []


# ---- adapters attached with setattr(model.get_submodule(...), name, Adapter(...)) after the move
ADAPTERS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Adapter(nn.Module):
    def __init__(self, base: nn.Linear, rank: int = 4):
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.randn(rank, base.in_features) * 0.01)
        self.b = nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x):
        return self.base(x) + F.linear(F.linear(x, self.a), self.b)


def attach(model, names, rank=4):
    for full, sub in list(model.named_modules()):
        owner, _, leaf = full.rpartition(".")
        if leaf in names and isinstance(sub, nn.Linear):
            holder = model.get_submodule(owner) if owner else model
            setattr(holder, leaf, Adapter(sub, rank))
"""


def test_adapter_attached_after_the_move_split_into_files_one_helper_deeper(tmp_path):
    _project(tmp_path, {"peftlite/adapters.py": ADAPTERS, "peftlite/__init__.py": "from peftlite.adapters import attach\n",
                        "tune.py": """
        import torch
        import torch.nn as nn
        from peftlite import attach


        def add_adapters(net):
            attach(net, {"q", "v"})


        class Tuner:
            def __init__(self, net, device):
                self.net = net.to(device)
                add_adapters(self.net)


        net = nn.Sequential(nn.Linear(8, 8))
        net.to("cuda")
        attach(net, {"0"})
        t = Tuner(nn.Sequential(nn.Linear(8, 8)), torch.device("cuda"))
    """})
    assert _codes(tmp_path, "tune.py") == [(13, "DEV102"), (18, "DEV102")]


def test_adapter_attached_before_the_move_or_moved_again_is_silent(tmp_path):
    _project(tmp_path, {"adapters.py": ADAPTERS, "ok.py": """
        import torch
        import torch.nn as nn
        from adapters import attach

        before = nn.Sequential(nn.Linear(8, 8))
        attach(before, {"0"})
        before.to("cuda")
        again = nn.Sequential(nn.Linear(8, 8)).to("cuda")
        attach(again, {"0"})
        again.to("cuda")
        y = before(torch.randn(2, 8, device="cuda")) + again(torch.randn(2, 8, device="cuda"))
        setattr(again, "extra", nn.Linear(8, 8).to("cuda"))
        setattr(again.get_submodule("0"), "extra", nn.Linear(8, 8, device="cuda"))
    """})
    assert _codes(tmp_path, "ok.py") == []


# ---- Python numbers from shapes as distribution parameters
SPHERE = """
import torch


class SphereNoise(torch.distributions.Distribution):
    def __init__(self, mean, conc):
        self.mean_dir = mean
        self.conc = conc
        self._dim = mean.shape[-1]
        super().__init__(mean.size()[:-1])

    def rsample(self, shape=torch.Size()):
        shape = shape + torch.Size(self.conc.shape)
        return self._radial(shape)

    def _radial(self, shape):
        half = (self._dim - 1) / 2
        e = torch.distributions.Beta(half, half).sample(shape)
        return self.conc * e
"""


def test_beta_from_shape_numbers_sampled_next_to_cuda_parameters_split_and_in_a_model(tmp_path):
    _project(tmp_path, {"pyproject.toml": "", "dists/sphere.py": SPHERE, "dists/__init__.py": "from dists.sphere import SphereNoise\n",
                        "scripts/vae.py": """
        import torch
        import torch.nn as nn
        from dists import SphereNoise


        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.mu = nn.Linear(16, 4)
                self.k = nn.Linear(16, 1)

            def forward(self, x):
                q = SphereNoise(self.mu(x), self.k(x).exp())
                return q.rsample()


        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        enc = Encoder().to(device)
        z = enc(torch.randn(8, 16, device=device))
        h = torch.randn(8, 4, device=device)
        n = h.size(1) * 2 - h.dim()
        extra = torch.distributions.Uniform(0, n).sample((8, 1)) + h
    """})
    assert _codes(tmp_path, "scripts/vae.py") == [(14, "DEV201"), (22, "DEV201")]


def test_numbers_from_shapes_stay_silent_for_0_dim_samples_or_moved_samples(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch

        x = torch.randn(4, 6, device="cuda")
        k = x.shape[-1]
        g = torch.distributions.Gamma(k / 2, 1.0).sample()
        a = x * g
        b = x + torch.distributions.Beta(k, k).sample((4, 6)).to(x.device)
        c = x + torch.distributions.Normal(x.mean(), k).sample()
        d = x[: x.shape[0] // 2] * x.numel()
    """})
    assert _codes(tmp_path, "ok.py") == []


# ---- a saved trace loaded back keeps its baked devices
NET = """
import torch


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        noise = torch.rand(x.shape[0], 4)
        return self.fc(x + noise.to(x.device))
"""


def test_trace_saved_and_loaded_then_moved_split_into_files_in_a_helper(tmp_path):
    _project(tmp_path, {"net.py": NET, "export.py": """
        import torch
        from net import Scorer

        PATH = "scorer.pt"


        def export(path=PATH):
            m = Scorer().eval()
            torch.jit.save(torch.jit.trace(m, torch.zeros(2, 4)), path)


        def serve(path=PATH):
            model = torch.jit.load(path).to("cuda")
            batch = torch.randn(8, 4).cuda()
            return model(batch)


        export()
        out = serve()
        m2 = torch.jit.trace(Scorer(), torch.zeros(1, 4))
        m2.save("other.pt")
        loaded = torch.jit.load("other.pt", map_location="cuda")
        y = loaded(torch.ones(3, 4, device="cuda"))
    """})
    assert _codes(tmp_path, "export.py") == [(15, "DEV207"), (23, "DEV207")]


def test_loaded_trace_stays_silent_on_its_device_or_from_another_path(tmp_path):
    _project(tmp_path, {"net.py": NET, "ok.py": """
        import sys
        import torch
        from net import Scorer

        traced = torch.jit.trace(Scorer(), torch.zeros(2, 4))
        traced.save("a.pt")
        same = torch.jit.load("a.pt")
        y = same(torch.randn(8, 4))
        other = torch.jit.load("b.pt").to("cuda")
        z = other(torch.randn(8, 4, device="cuda"))
        given = torch.jit.load(sys.argv[1]).to("cuda")
        w = given(torch.randn(8, 4, device="cuda"))
        scripted = torch.jit.script(Scorer())
        scripted.save("c.pt")
        s = torch.jit.load("c.pt").to("cuda")(torch.randn(8, 4, device="cuda"))
    """})
    assert _codes(tmp_path, "ok.py") == []
