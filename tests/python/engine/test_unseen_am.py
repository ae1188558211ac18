"""Semantics found missing on unseen real cases, batch AM (tests/fixtures/engine/unseen/am_*: research training
frameworks, NAS, contrastive / replay / distillation losses).

- A function of a model library's namespace that is given a model does not build one: torchvision's
  `create_feature_extractor(model, ...)` traces the model (its GraphModule shares the model's parameters) and
  `get_graph_node_names(model)` lists its nodes. Only a builder called without a model (`resnet18()`) makes
  fresh weights on the default device (avalanche RARPlugin: no DEV106 on the feature extractor).
- `.to()` as a statement loses a move only for a tensor the program can name again (a name, an attribute, an
  item): a temporary moved and dropped (`torch.zeros(1).to(device)`, a probe that the device works) is read
  by nothing afterwards (sbi's process_device: no DEV107).
- A `try` whose body only tries a known device out (`torch.zeros(1).to(device)`, `torch.tensor(0,
  device=d)`, with warnings and plain assignments) reaches its handler only when the device is unavailable:
  on the analysed machine (CUDA available) the handler's fallback (`device = "cpu"`) does not run, as the
  else side of `"cuda" if torch.cuda.is_available() else "cpu"` does not. So the device the helper returns
  is the one asked for (sbi SNRE_A: the labels made inside the loss on the cpu meet the classifier's cuda
  output, DEV201). A probe of a device string the analysis does not know may fail: the handler joins.
- `torch.autograd.grad(outputs, inputs)` returns one gradient per input, each on its input's device: a cpu
  tensor combined with the gradients of a moved module's parameters is a mix (Katib's DARTS architect:
  `torch.FloatTensor(xi) * (m + g + wd * w)`, DEV201).
- A parameter is one object wherever it is kept: `Module.to()` swaps its data in place, so a plain list
  on the module holding it (`self.arch = [self.alpha]`, DARTS' architecture parameters) sees the move. A
  buffer is replaced by a new tensor: a list holding the old one keeps it on the cpu (still a mix). The
  parameters a module's `__init__` iterates (`for name, p in self.named_parameters(): self.alphas.append(...)`)
  are where its parts made so far are (the cpu), and move with it.
- In a script folder (`examples/`, `scripts/`: not a package, under a project root) a file of top-level
  assignments that call the project's code runs it, even when it also defines a helper: it is an importer
  that reports the findings inside the library files it reaches (sbi's snre_a.py:62 from
  examples/snre_a_gpu.py)."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _project(tmp_path, files: dict) -> None:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


# 1. a model library's function given a model traces / inspects it

_EXTRACT = """
    import copy
    import torch
    from torch import nn
    from torchvision.models.feature_extraction import create_feature_extractor, get_graph_node_names


    class Replay:
        def __init__(self, layer=None):
            self.layer = layer

        def step(self, model, x):
            if self.layer is None:
                self.layer = get_graph_node_names(model)[0][-2]
            copy_model = copy.deepcopy(model)
            extractor = create_feature_extractor(copy_model, return_nodes=[self.layer])
            return extractor(x)[self.layer]


    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    Replay().step(model, torch.randn(2, 3).to(device))
    """


def test_feature_extractor_of_a_moved_model_is_on_its_device():
    assert _codes(_EXTRACT) == []


def test_feature_extractor_renamed_at_top_level():
    src = """
    import torch
    import torchvision.models.feature_extraction as fx
    from torch import nn

    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU()).cuda()
    feats = fx.create_feature_extractor(net, {"0": "hidden"})
    out = feats(torch.randn(2, 3).cuda())["hidden"]
    """
    assert _codes(src) == []


def test_model_builder_without_a_model_still_builds_on_cpu():
    src = """
    import torch
    from torchvision.models import resnet18

    model = resnet18()
    out = model(torch.randn(1, 3, 224, 224).cuda())
    """
    assert _codes(src) == [(6, "DEV106")]


# 2. a temporary moved and dropped is no lost move

def test_probe_of_a_temporary_is_no_discarded_move():
    src = """
    import torch

    def usable(device):
        torch.zeros(1).to(device)
        torch.ones(2).cuda()
        return device
    """
    assert _codes(src) == []


def test_named_tensor_moved_and_dropped_is_still_reported():
    src = """
    import torch

    def place(device):
        torch.zeros(1).to(device)
        x = torch.zeros(2)
        x.to(device)
        return x
    """
    assert _codes(src) == [(7, "DEV107")]


# 3. a device probe's fallback does not run on the analysed machine

_PROCESS_DEVICE = """
    import warnings
    import torch


    def process_device(device: str) -> str:
        if not device == "cpu":
            if device == "gpu":
                device = "cuda"
            try:
                torch.zeros(1).to(device)
                warnings.warn("GPU was selected as a device for training the neural network.")
            except (RuntimeError, AssertionError):
                warnings.warn(f"Device {device} not available, falling back to CPU.")
                device = "cpu"
        return device
    """

_RATIO = """
    import torch
    from torch import nn


    class Ratio:
        def __init__(self, device="cpu"):
            self._device = process_device(device)
            self.net = nn.Linear(4, 1).to(self._device)

        def loss(self, theta):
            likelihood = torch.sigmoid(self.net(theta.to(self._device))).squeeze()
            labels = torch.ones(theta.shape[0])
            return nn.BCELoss()(likelihood, labels)
    """


def test_probed_device_is_the_device_asked_for():
    src = _PROCESS_DEVICE + _RATIO + """
    Ratio(device="gpu").loss(torch.randn(8, 4))
    """
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_probed_device_fixed_labels_are_silent():
    src = _PROCESS_DEVICE + _RATIO.replace("torch.ones(theta.shape[0])", "torch.ones(theta.shape[0], device=self._device)") + """
    Ratio(device="gpu").loss(torch.randn(8, 4))
    """
    assert _codes(src) == []


def test_probe_in_a_class_assigning_the_device():
    src = """
    import torch
    from torch import nn


    class BaseClass:
        def __init__(self, student, device="cpu"):
            try:
                torch.tensor(0).to(device)
                self.device = device
            except:
                print("Either an invalid device or CUDA is not available. Defaulting to CPU.")
                self.device = "cpu"
            self.student = student.to(self.device)

        def step(self, x):
            out = self.student(x.to(self.device))
            target = torch.zeros(x.shape[0], dtype=torch.long)
            return nn.functional.cross_entropy(out, target)


    BaseClass(nn.Linear(4, 3), device="cuda").step(torch.randn(2, 4))
    """
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_probe_of_an_unknown_device_string_joins_the_fallback():
    src = _PROCESS_DEVICE + _RATIO + """
    Ratio(device=input()).loss(torch.randn(8, 4))
    """
    assert _codes(src) == []


def test_try_that_may_raise_otherwise_joins_the_fallback():
    src = """
    import torch
    from torch import nn

    def pick(device, path):
        try:
            torch.zeros(1).to(device)
            state = torch.load(path, map_location=device)
        except Exception:
            device = "cpu"
        return device

    device = pick("cuda", "w.pt")
    net = nn.Linear(4, 1).to(device)
    y = net(torch.randn(2, 4).to(device)) + torch.ones(2, 1)
    """
    assert _codes(src) == []


def test_try_making_a_tensor_from_data_joins_the_fallback():
    src = """
    import json
    import torch

    def to_device(values, device):
        try:
            t = torch.tensor(values, device=device)
        except (TypeError, ValueError):
            device = "cpu"
            t = torch.tensor(values)
        return t, device

    t, device = to_device(json.loads(input()), "cuda")
    y = t + torch.ones(2)
    """
    assert _codes(src) == []


def test_probed_device_split_into_files(tmp_path):
    _project(tmp_path, {
        "setup.py": "from setuptools import setup, find_packages\nsetup(name='lib', packages=find_packages())\n",
        "lib/__init__.py": "",
        "lib/torchutils.py": _PROCESS_DEVICE,
        "lib/ratio.py": "from lib.torchutils import process_device\n" + textwrap.dedent(_RATIO),
        "examples/run.py": """
            import torch
            from lib.ratio import Ratio


            def simulate(n):
                return torch.randn(n, 4)


            theta = simulate(16)
            loss = Ratio(device="gpu").loss(theta)
            """,
    })
    assert [d.code for d in check_path(str(tmp_path / "lib/ratio.py")).diagnostics] == ["DEV201"]
    assert [d.code for d in check_path(str(tmp_path / "examples/run.py")).diagnostics] == ["DEV201"]


# 4. gradients are on their inputs' devices

_ARCHITECT = """
    import copy
    import torch
    from torch import nn


    class Architect:
        def __init__(self, model, w_momentum):
            self.model = model
            self.v_model = copy.deepcopy(model)
            self.w_momentum = w_momentum

        def virtual_step(self, x, y, xi, w_optim):
            loss = nn.functional.cross_entropy(self.model(x), y)
            gradients = torch.autograd.grad(loss, self.model.parameters())
            with torch.no_grad():
                for w, vw, g in zip(self.model.parameters(), self.v_model.parameters(), gradients):
                    m = w_optim.state[w].get("momentum_buffer", 0.) * self.w_momentum
                    vw.copy_(w - STEP * (m + g))


    device = torch.device("cuda")
    model = nn.Linear(4, 3).to(device)
    w_optim = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
    lr = [0.1]
    Architect(model, 0.9).virtual_step(torch.randn(2, 4).to(device), torch.tensor([0, 1]).to(device), lr, w_optim)
    """


def test_gradients_meet_a_cpu_step():
    assert [c for _, c in _codes(_ARCHITECT.replace("STEP", "torch.FloatTensor(xi)"))] == ["DEV201"]


def test_gradients_with_a_step_on_their_device_are_silent():
    assert _codes(_ARCHITECT.replace("STEP", "torch.cuda.FloatTensor(xi)")) == []
    assert _codes(_ARCHITECT.replace("STEP", "xi[0]")) == []


def test_gradient_of_one_tensor():
    src = """
    import torch

    x = torch.randn(3, requires_grad=True, device="cuda")
    (g,) = torch.autograd.grad((x ** 2).sum(), x)
    penalty = (g.norm(2) - torch.ones(1)) ** 2
    """
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_gradients_of_an_unknown_module_are_silent():
    src = """
    import torch

    def step(model, loss, xi):
        for w, g in zip(model.parameters(), torch.autograd.grad(loss, model.parameters())):
            w.data.sub_(torch.FloatTensor(xi) * g)
    """
    assert _codes(src) == []


def test_gradients_split_into_files(tmp_path):
    _project(tmp_path, {
        "architect.py": _ARCHITECT.split("    device = ")[0].replace("STEP", "torch.FloatTensor(xi)"),
        "run_trial.py": """
            import torch
            from torch import nn
            from architect import Architect


            def main():
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                model = nn.Linear(4, 3).to(device)
                w_optim = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
                architect = Architect(model, 0.9)
                x, y = torch.randn(2, 4).to(device), torch.tensor([0, 1]).to(device)
                architect.virtual_step(x, y, [0.1], w_optim)


            if __name__ == "__main__":
                main()
            """,
    })
    assert [d.code for d in check_path(str(tmp_path / "architect.py")).diagnostics] == ["DEV201"]


# 5. a parameter kept in a plain list moves with its module; a buffer does not

_ARCH = """
    import torch
    from torch import nn


    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.alphas_normal = nn.Parameter(1e-3 * torch.randn(3))
            self.alphas_reduce = nn.Parameter(1e-3 * torch.randn(3))
            self._arch_parameters = [self.alphas_normal, self.alphas_reduce]

        def arch_parameters(self):
            return self._arch_parameters

        def forward(self, x):
            w = torch.softmax(self._arch_parameters[0], dim=-1)
            return self.fc(x) * w


    model = Network().cuda()
    y = model(torch.randn(2, 3).cuda())
    """


def test_parameters_in_a_plain_list_move_with_the_module():
    assert _codes(_ARCH) == []


def test_parameters_in_a_plain_list_read_by_a_trainer():
    src = _ARCH + """

    class Architect:
        def __init__(self, model):
            self.model = model

        def penalty(self):
            return sum((a ** 2).sum() for a in self.model.arch_parameters()) + torch.ones(1).cuda()


    Architect(model).penalty()
    """
    assert _codes(src) == []


def test_buffer_in_a_plain_list_stays_behind():
    src = _ARCH.replace("self.alphas_reduce = nn.Parameter(1e-3 * torch.randn(3))",
                        "self.register_buffer('alphas_reduce', torch.randn(3))").replace(
        "self._arch_parameters[0]", "self._arch_parameters[1]")
    assert [c for _, c in _codes(src)] == ["DEV201"]


_ALPHAS = """
    import torch
    from torch import nn


    class NetworkCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = nn.Linear(4, 3)
            self.alpha_normal = nn.ParameterList([nn.Parameter(1e-3 * torch.randn(3))])
            self.alphas = []
            for name, parameter in self.named_parameters():
                if "alpha" in name:
                    self.alphas.append((name, parameter))

        def forward(self, x):
            return self.classifier(x) * torch.softmax(self.alpha_normal[0], dim=-1)

        def getAlphas(self):
            for _, parameter in self.alphas:
                yield parameter


    def unrolled(model, x, y, xi):
        loss = nn.functional.cross_entropy(model(x), y)
        hessian = torch.autograd.grad(loss, model.getAlphas())
        with torch.no_grad():
            for alpha, h in zip(model.getAlphas(), hessian):
                alpha.grad = STEP * h


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = NetworkCNN().to(device)
    unrolled(model, torch.randn(2, 4).to(device), torch.tensor([0, 1]).to(device), [0.1])
    """


def test_parameters_listed_in_init_move_with_the_module():
    assert [c for _, c in _codes(_ALPHAS.replace("STEP", "torch.FloatTensor(xi)"))] == ["DEV201"]


def test_parameters_listed_in_init_with_a_step_on_their_device_are_silent():
    assert _codes(_ALPHAS.replace("STEP", "torch.tensor(xi, device=h.device)")) == []
    assert _codes(_ALPHAS.replace("STEP", "xi[0]")) == []


def test_parameters_listed_in_init_of_an_unmoved_model_are_silent():
    src = _ALPHAS.replace("STEP", "torch.FloatTensor(xi)").replace("NetworkCNN().to(device)", "NetworkCNN()").replace(
        "torch.randn(2, 4).to(device), torch.tensor([0, 1]).to(device)", "torch.randn(2, 4), torch.tensor([0, 1])")
    assert _codes(src) == []
