"""Semantics found missing on unseen real cases, batch BS (tests/fixtures/engine/unseen/bs_*): the training
machinery (runners and callbacks, optimizers, quantization wrappers, DataParallel).

- A parameter annotated as a numpy array (`np.ndarray`, `np.array`, `numpy.typing.NDArray[...]`, alone or
  `Optional` / `| None`) receives host data when the argument a call gives it is not known (an array from
  pandas or scikit-learn, or no caller): `torch.tensor(arr)` of it is a cpu tensor, and a DataLoader over a
  `TensorDataset` of such tensors yields cpu batches. deep_tabular_augmentation's `create_datasets(train_data:
  np.array, ...)` builds the TensorDatasets its Runner trains on; the model is moved, the batches are not. A
  known argument keeps its own value (a cuda tensor given to the parameter stays on cuda), and a union with
  another type (`np.ndarray | torch.Tensor`) says nothing (interp/numpy_params.py).
- Keyword dicts as Python builds them: `dict(d)` of a known dict is a copy with the same entries (keywords on
  top; interp/dict_copies.py); the `**kwargs` dict of a call whose keywords are all known holds exactly them;
  `update` (with a dict whose keys are all known, or keywords), `setdefault` and `get` (a missing key gives
  the default) on a dict whose keys are all known keep them known (interp/dict_methods.py). TICO's wrappers
  build each observer as `kw = dict(defaults); kw.update(qcfg.get_kwargs(name)); obs_cls =
  kw.pop("observer", qcfg.default_observer); kw.setdefault("dtype", ...); obs_cls(**kw, name=name)`: the
  observer's per-channel axis now reaches it.
- A loop over a literal tuple / list of objects of project classes runs its body once per object, in order
  (`for obs in (self.weight_obs, self.act_in_obs): obs.compute_qparams()` updates each observer's own
  state), where the join of two objects is unknown and updated none.
- `x or Default()` where `x` is an object of a project class gives `x` (an object is truthy): `self.qcfg =
  qcfg or PTQConfig()` given a config keeps that config.
- `model.modules()` / `children()` of a module whose whole tree is known (project and torch.nn modules, at
  most 8, a project module below the root) are those modules, and a loop over them runs once per module
  (interp/module_walks.py): TICO's `convert()` runs `for m in model.modules(): if isinstance(m,
  QuantModuleBase): m.freeze_qparams()`, caching each observer's scale on the cpu before the model moves.
  `isinstance(m, C)` of a module built by a torch.nn class is decided (its own class and nn.Module: True; a
  project class: False), and `abc.ABC` among a project module's bases leaves its isinstance decided
  (interp/module_isinstance.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _path_codes(root: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, src in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    out = []
    for name in files:
        out += [(name, d.span.line, d.code) for d in check_path(str(root / name)).diagnostics]
    return sorted(out)


# --- a parameter declared as a numpy array ----------------------------------------------------------------------

_NUMPY_PARAM = """
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    device = torch.device("cuda")
    model = nn.Linear(4, 2).to(device)


    def create_datasets(train_data: ANN, train_target: ANN):
        return TensorDataset(torch.tensor(train_data).float(), torch.tensor(train_target).long())


    def run(x, y):
        for xb, yb in DataLoader(create_datasets(x, y), batch_size=2):
            model(xb)
"""


def test_numpy_annotated_parameter_is_host_data():
    for ann in ("np.array", "np.ndarray", "'np.ndarray'", "np.ndarray | None", "Optional[np.ndarray]",
                "npt.NDArray[np.float32]"):
        src = _NUMPY_PARAM.replace("ANN", ann).replace(
            "import numpy as np\n", "import numpy as np\n    import numpy.typing as npt\n    from typing import Optional\n")
        assert _codes(src) == [(19, "DEV202")], ann


def test_numpy_parameter_fixed_by_moving_the_batch_is_clean():
    assert _codes(_NUMPY_PARAM.replace("ANN", "np.ndarray").replace("model(xb)", "model(xb.to(device))")) == []


def test_numpy_parameter_given_a_known_tensor_keeps_it():
    src = _NUMPY_PARAM.replace("ANN", "np.ndarray") + """
    run(torch.randn(8, 4, device=device), torch.zeros(8, device=device))
"""
    # a known argument is what it is: cuda tensors stay on cuda, whatever the annotation says
    assert _codes(src) == []


def test_union_or_unannotated_parameter_stays_unknown():
    for ann in ("np.ndarray | torch.Tensor", "Union[np.ndarray, torch.Tensor]", "object"):
        src = _NUMPY_PARAM.replace("ANN", ann).replace("import numpy as np\n", "import numpy as np\n    from typing import Union\n")
        assert _codes(src) == [], ann
    src = _NUMPY_PARAM.replace("train_data: ANN, train_target: ANN", "train_data, train_target")
    assert _codes(src) == []


def test_numpy_parameter_as_a_0dim_tensor_directly_is_not_reported():
    # `torch.tensor(arr)` of an array of unknown shape may be a 0-dim cpu scalar, which mixes with any device:
    # only the DataLoader's stacked batches are known to have a batch dimension
    src = """
        import numpy as np
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 2).to("cuda")


        def score(arr: np.ndarray):
            return model.weight * torch.tensor(arr)
    """
    assert _codes(src) == []


def test_numpy_parameter_runner_split_in_files(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/data.py": """
            import numpy as np
            import torch
            from torch.utils.data import DataLoader, TensorDataset


            def create_datasets(train_data: np.array, test_data: np.array):
                return TensorDataset(torch.tensor(train_data).float()), TensorDataset(torch.tensor(test_data).float())


            def create_loaders(data, bs=128):
                trn_ds, tst_ds = data
                return DataLoader(trn_ds, batch_size=bs, shuffle=True), DataLoader(tst_ds, batch_size=bs)
        """,
        "pkg/runner.py": """
            class Learner:
                def __init__(self, model, data):
                    self.model, self.data = model, data


            class Runner:
                @property
                def model(self):
                    return self.learn.model

                def one_batch(self, xb):
                    self.xb = xb
                    self.pred = self.model(self.xb)

                def fit(self, epochs, learn):
                    self.epochs, self.learn = epochs, learn
                    for epoch in range(epochs):
                        for (xb,) in self.learn.data[0]:
                            self.one_batch(xb)
        """,
        "train.py": """
            import pandas as pd
            import torch
            import torch.nn as nn

            from pkg.data import create_datasets, create_loaders
            from pkg.runner import Learner, Runner

            df = pd.read_csv("data.csv")
            DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            loaders = create_loaders(create_datasets(df.values[:800], df.values[800:]))
            model = nn.Linear(4, 2).to(DEVICE)
            Runner().fit(3, Learner(model, loaders))
        """,
    }
    # reported where the script starts the run that feeds the cpu batch to the moved model
    assert _path_codes(tmp_path, files) == [("train.py", 13, "DEV202")]
    files["train.py"] = files["train.py"].replace("model = nn.Linear(4, 2).to(DEVICE)", "model = nn.Linear(4, 2)")
    assert _path_codes(tmp_path, files) == []


# --- keyword dicts, loops over objects, `or` of an object --------------------------------------------------------

_OBSERVERS = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from dataclasses import dataclass, field


    class Observer:
        def __init__(self, *, name, channel_axis=None, dtype=None):
            self.name = name
            self.channel_axis = channel_axis
            self.reset()

        def reset(self):
            self.min_val = torch.tensor(float("inf"))

        def collect(self, x):
            if self.channel_axis is None:
                cur = x.min()
            else:
                cur = x.amin(dim=1)
            self.min_val = torch.minimum(self.min_val, cur)

        def compute_qparams(self):
            self._scale = self.min_val.abs() + 1e-6

        def fake_quant(self, x):
            if self.channel_axis is None:
                return x / self._scale
            return torch.fake_quantize_per_channel_affine(x, self._scale, torch.zeros_like(self._scale, dtype=torch.int), 0, 0, 255)


    @dataclass
    class Config:
        default_observer: type = Observer
        overrides: dict = field(default_factory=dict)

        def get_kwargs(self, name):
            return dict(self.overrides.get(name, {}))


    class QuantLinear(nn.Module):
        def __init__(self, fp, qcfg=None):
            super().__init__()
            self.qcfg = qcfg or Config()
            self.weight_obs = self._make_obs("weight", channel_axis=0)
            self.act_obs = self._make_obs("act")
            self.module = fp

        def _make_obs(self, name, **default_kwargs):
            kw = dict(default_kwargs)
            kw.update(self.qcfg.get_kwargs(name))
            obs_cls = kw.pop("observer", self.qcfg.default_observer)
            kw.setdefault("dtype", None)
            return obs_cls(**kw, name=name)

        def calibrate(self):
            for obs in (self.weight_obs, self.act_obs):
                obs.reset()
            self.weight_obs.collect(self.module.weight)

        def freeze(self):
            for obs in (self.weight_obs, self.act_obs):
                obs.compute_qparams()

        def forward(self, x):
            w = self.weight_obs.fake_quant(self.module.weight)
            return self.act_obs.fake_quant(F.linear(x, w))


    q = QuantLinear(nn.Linear(16, 8, bias=False), CONFIG)
    q.calibrate()
    q.freeze()
    q.to("cuda")
    q(torch.randn(2, 16, device="cuda"))
"""


def test_observer_built_from_keyword_dicts_keeps_its_cpu_scale():
    for cfg in ("Config()", "None"):
        # the per-channel scale computed on the cpu meets the moved weight in fake_quant (reported at the run)
        assert _codes(_OBSERVERS.replace("CONFIG", cfg)) == [(71, "DEV202")], cfg


def test_observer_scale_on_the_module_device_is_clean():
    # the fix: the cached scale follows the weight's device (`self._scale.to(x.device)`)
    src = _OBSERVERS.replace("CONFIG", "Config()").replace(
        "torch.fake_quantize_per_channel_affine(x, self._scale, torch.zeros_like(self._scale, dtype=torch.int), 0, 0, 255)",
        "torch.fake_quantize_per_channel_affine(x, self._scale.to(x.device), torch.zeros(8, dtype=torch.int, device=x.device), 0, 0, 255)")
    assert _codes(src) == []


def test_observer_keywords_from_an_unknown_config_stay_unknown():
    # overrides of an unknown config may set any keyword (the axis among them): nothing is known of the observer
    src = _OBSERVERS.replace("CONFIG", "load_config()").replace("import torch\n", "import torch\nfrom cfgs import load_config\n", 1)
    assert _codes(src) == []


def test_dict_copy_update_setdefault_get():
    src = """
        import torch

        def build(**defaults):
            kw = dict(defaults)
            kw.update({"b": torch.zeros(3)}, c=torch.zeros(3))
            kw.setdefault("a", torch.ones(3, device="cuda"))
            return kw["a"] + kw["b"], kw["c"]

        x, c = build(a=torch.zeros(3))
        torch.zeros(3, device="cuda") + c
    """
    # `kw["a"]` is the caller's cpu tensor (setdefault keeps it, so it adds to the cpu `b`); the cpu `c` meets cuda
    assert _codes(src) == [(10, "DEV202")]
    got = _codes(src.replace("build(a=torch.zeros(3))", "build(a=torch.zeros(3, device='cuda'))"))
    assert (6, "DEV201") in got  # now `kw["a"]` (cuda) meets the cpu `kw["b"]` made at line 6
    get_src = """
        import torch

        opts = {"lr": 0.1}
        w = opts.get("weight", torch.ones(3))
        torch.zeros(3, device="cuda") * w
    """
    assert _codes(get_src) == [(5, "DEV201")]
    assert _codes(get_src.replace("torch.ones(3))", "torch.ones(3, device='cuda'))")) == []


def test_loop_over_objects_updates_each():
    src = """
        import torch

        class Acc:
            def __init__(self):
                self.total = None

            def reset(self):
                self.total = torch.zeros(3)

        a, b = Acc(), Acc()
        for acc in [a, b]:
            acc.reset()
        torch.ones(3, device="cuda") + b.total
    """
    assert _codes(src) == [(9, "DEV201")]
    assert _codes(src.replace("self.total = torch.zeros(3)", "self.total = torch.zeros(3, device='cuda')")) == []


# --- a quantizer's passes over model.modules() -------------------------------------------------------------------

_QUANTIZER = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from abc import ABC


    class Observer:
        def __init__(self):
            self.lo = torch.tensor(float("inf"))

        def collect(self, w):
            self.lo = torch.minimum(self.lo, w.amin(dim=1))

        def freeze(self):
            self.scale = self.lo.abs() + 1e-6

        def fake_quant(self, w):
            return torch.fake_quantize_per_channel_affine(w, self.scale, torch.zeros(8, dtype=torch.int), 0, 0, 255)


    class QuantBase(nn.Module, ABC):
        pass


    class QuantLinear(QuantBase):
        def __init__(self, fp):
            super().__init__()
            self.module = fp
            self.obs = Observer()

        def calibrate(self):
            self.obs.collect(self.module.weight)

        def freeze(self):
            self.obs.freeze()

        def forward(self, x):
            return F.linear(x, self.obs.fake_quant(self.module.weight))


    class Wrapper(QuantBase):
        def __init__(self, fp):
            super().__init__()
            self.wrapped = QuantLinear(fp)

        def forward(self, x):
            return self.wrapped(x)


    def prepare(model):
        if isinstance(model, nn.Linear):
            model = Wrapper(model)
        for m in model.modules():
            if isinstance(m, QuantLinear):
                m.calibrate()
        return model


    def convert(model):
        for m in model.modules():
            if isinstance(m, QuantLinear):
                m.freeze()
        return model


    q = convert(prepare(nn.Linear(16, 8)))
    q.to("cuda")
    q(torch.randn(2, 16, device="cuda"))
"""


def test_quantizer_passes_over_modules_run_on_each_wrapper():
    got = _codes(_QUANTIZER)
    assert {c for _, c in got} == {"DEV202"} and (67, "DEV202") in got, got


def test_quantizer_with_scale_moved_along_is_clean():
    src = _QUANTIZER.replace("w, self.scale, torch.zeros(8, dtype=torch.int)",
                             "w, self.scale.to(w.device), torch.zeros(8, dtype=torch.int, device=w.device)")
    assert _codes(src) == []


def test_quantizer_over_an_unknown_model_stays_silent():
    # a library model: its submodules are not known, `modules()` stays "some submodule"
    src = _QUANTIZER.replace("q = convert(prepare(nn.Linear(16, 8)))", "q = convert(prepare(torchvision.models.resnet18()))") \
        .replace("import torch\n", "import torch\nimport torchvision\n", 1)
    assert _codes(src) == []


def test_isinstance_of_a_torch_module():
    src = """
        import torch
        import torch.nn as nn

        class Keep(nn.Module):
            pass

        m = nn.Linear(4, 4)
        if TEST:
            w = torch.zeros(4)
        else:
            w = torch.zeros(4, device="cuda")
        y = w + torch.ones(4, device="cuda")
    """
    # decided True: the cpu branch is the one taken
    for test in ("isinstance(m, nn.Linear)", "isinstance(m, (nn.Conv2d, nn.Linear))", "isinstance(m, nn.Module)"):
        assert _codes(src.replace("TEST", test)) == [(10, "DEV201")], test
    # decided False (a project class is no base of a torch class): the cuda branch
    assert _codes(src.replace("TEST", "isinstance(m, Keep)")) == []
    # another torch class may be a base: undecided, the join of both branches is not known
    assert _codes(src.replace("TEST", "isinstance(m, nn.Conv2d)")) == []
