"""Semantics found missing on unseen real cases, batch BB (tests/fixtures/engine/unseen/bb_*): vision code
(detection matchers, augmentations, samplers, renderers, evaluation helpers).

- A project module whose forward realigns every tensor it owns to an input's device before using it
  (`self.pl = self.pl.to(device=input.device)` in a method forward runs on `self`) cannot meet that input on
  another device, wherever the module was left: calling it unmoved with accelerator inputs is not a
  model-not-moved mix (DEV106); its forward is interpreted instead. Only the module's own tensors count
  (buffers and `nn.Parameter`s of the class and its project bases); a module holding a torch.nn layer never
  qualifies, and a module that leaves one of its tensors where it was is still reported. kornia's
  RandomPlanckianJitter (fixed by moving its coefficient buffer inside apply_transform) got DEV106 on its
  fixed twin.
- `.to(None)` / `.to(device=None)` keeps the receiver where it is (Tensor.to, Module.to, and a tokenizer's
  BatchEncoding.to, which ignores what is not a device); an adapter that tokenizes with
  `.to(output_device)` where output_device defaults to None feeds cpu ids to its model moved to "cuda".
- `isinstance(<a literal>, tuple / list / dict / set)` is False: a Python literal is no container.
- Sequence repetition `(x,) * n`, `[x] * n`, `n * [x]` holds the same values again: iterating it yields them
  (`cast_tuple(val, length=1)` -> `val if isinstance(val, tuple) else ((val,) * length)`, then
  `CONDITION_CONFIG.get(model_type)` gives back the registered adapter class). lucidrains'
  classifier-free-guidance TextConditioner built its BGE adapter this way and the adapter's mix was out of reach.
- `a and b` is the first falsy operand, else the last, whenever each operand but the last has a known truth
  (a non-empty list or dict, a module, a constant): `if exclude and k in exclude:` over a dict's known keys,
  with `exclude=["image"]`, keeps "image" where it was and moves the other entries.
- `isinstance(x, torch.Tensor)` is True (and `isinstance(x, np.ndarray)` False) of a cpu value only a torch
  tensor can be: made by a torch factory, or moved by `.to()` / `.cuda()` / `.cpu()` (before, only a tensor on
  an accelerator was decided; a cpu value of unknown make still leaves the test undecided).
- Structural recursion runs once per kind of its arguments: `get_dict_to_torch(stuff, device, exclude)` calls
  itself on each tensor entry of the dict it was given (nerfstudio); a call whose argument kinds are already
  on the call stack is still cut.
- State set lazily over None (`self._step_index = 0` after `self._step_index = None`) makes memoised calls
  that read it stale, like a move does: a scheduler's `step_index` property read by `if self.step_index is None`
  and again by `self.sigmas[self.step_index]` after the store is the int, not the stale None (a None index
  adds a dimension; an int one gives the 0-dim sigma that mixes with any device). Needed once `.to(device=None)`
  kept kohya's cpu sigmas on the cpu (sd-scripts' FlowMatchEulerDiscreteScheduler, a field false alarm).
- torch.utils.data.default_collate of a list of dict samples the code built is a dict with the samples' keys,
  each value stacked on the samples' device (Python numbers become a cpu tensor): a loader that collates its
  dataset items itself (nerfstudio's CacheDataloader) keeps each entry's device.
"""

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
        p.write_text(textwrap.dedent(text))


def _project_codes(root: Path, names: tuple[str, ...]) -> list[tuple[str, int, str]]:
    return sorted((n, d.span.line, d.code) for n in names for d in check_path(str(root / n)).diagnostics)


# --- a module whose forward moves its own tensors to the input's device -----------------------------------

_JITTER = """
    import torch


    class ColorJitter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.tensor([[1.1, 0.9], [0.8, 1.2]]))

        def forward(self, images):
            idx = torch.randint(0, 2, (images.shape[0],)).tolist()
            return self.apply_transform(images, idx)

        def apply_transform(self, images, idx):
            {align}
            coeffs = self.table[idx]
            return images * coeffs[:, 0][:, None, None, None]


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    aug = ColorJitter()
    images = torch.rand(4, 3, 8, 8, device=device)
    out = aug(images)
"""


def test_module_realigning_its_buffer_to_the_input_is_not_a_model_left_on_cpu():
    assert _codes(_JITTER.replace("{align}", "self.table = self.table.to(device=images.device)")) == []


def test_module_realigning_its_buffer_with_to_x_or_a_positional_device():
    assert _codes(_JITTER.replace("{align}", "self.table = self.table.to(images)")) == []
    assert _codes(_JITTER.replace("{align}", "self.table = self.table.to(images.device, images.dtype)")) == []


def test_module_leaving_its_buffer_on_cpu_is_still_reported():
    assert _codes(_JITTER.replace("{align}", "pass")) == [(23, "DEV106")]


def test_realigning_to_its_own_device_or_a_constant_does_not_count():
    assert _codes(_JITTER.replace("{align}", "self.table = self.table.to('cpu')")) == [(23, "DEV106")]
    assert _codes(_JITTER.replace("{align}", "self.table = self.table.to(self.table.device)")) == [(23, "DEV106")]


def test_realigning_only_one_of_two_buffers_is_still_reported():
    src = _JITTER.replace("{align}", "self.table = self.table.to(images.device)").replace(
        'self.register_buffer("table", torch.tensor([[1.1, 0.9], [0.8, 1.2]]))',
        'self.register_buffer("table", torch.tensor([[1.1, 0.9], [0.8, 1.2]]))\n'
        '            self.register_buffer("bias", torch.zeros(2))')
    assert _codes(src) == [(24, "DEV106")]


def test_module_with_a_layer_is_not_device_following():
    src = _JITTER.replace("{align}", "self.table = self.table.to(images.device)").replace(
        'self.register_buffer("table", torch.tensor([[1.1, 0.9], [0.8, 1.2]]))',
        'self.register_buffer("table", torch.tensor([[1.1, 0.9], [0.8, 1.2]]))\n'
        '            self.proj = torch.nn.Conv2d(3, 3, 1)')
    assert _codes(src) == [(24, "DEV106")]


def test_realignment_in_an_unreached_method_does_not_count():
    src = _JITTER.replace("{align}", "pass").replace(
        "        def apply_transform(self, images, idx):",
        "        def to_input(self, images):\n"
        "            self.table = self.table.to(images.device)\n\n"
        "        def apply_transform(self, images, idx):")
    assert _codes(src) == [(26, "DEV106")]


_BASE = """
    import torch


    class AugmentationBase(torch.nn.Module):
        def __init__(self, p=0.5):
            super().__init__()
            self.p = p

        def forward(self, input):
            params = {"idx": torch.randint(0, 2, (input.shape[0],))}
            return self.apply_transform(input, params)

        def apply_transform(self, input, params):
            raise NotImplementedError
"""

_AUG = """
    import torch

    from augs.base import AugmentationBase


    class RandomTint(AugmentationBase):
        def __init__(self):
            super().__init__(p=1.0)
            self.register_buffer("pl", torch.tensor([[1.1, 0.9], [0.8, 1.2]]))

        def apply_transform(self, input, params):
            {align}
            coeffs = self.pl[params["idx"].tolist()]
            return input * coeffs[:, 0][:, None, None, None]
"""

_TRAIN = """
    import torch

    from augs.tint import RandomTint


    class Trainer:
        def __init__(self, device):
            self.device = device
            self.aug = RandomTint()

        def step(self, batch):
            batch = batch.to(self.device)
            return self.aug(batch)


    def main():
        trainer = Trainer(torch.device("cuda"))
        trainer.step(torch.rand(4, 3, 8, 8))


    if __name__ == "__main__":
        main()
"""


def _project(tmp_path: Path, align: str) -> list:
    _write(tmp_path, {"augs/__init__.py": "", "augs/base.py": _BASE,
                      "augs/tint.py": _AUG.replace("{align}", align), "train.py": _TRAIN})
    return _project_codes(tmp_path, ("train.py", "augs/tint.py", "augs/base.py"))


def test_split_into_files_with_a_project_base_and_a_trainer(tmp_path):
    assert _project(tmp_path, "self.pl = self.pl.to(device=input.device)") == []


def test_split_into_files_left_on_cpu_is_reported_in_the_trainer(tmp_path):
    assert _project(tmp_path, "pass") == [("train.py", 14, "DEV106")]


# --- .to(None), isinstance of a literal, repeated tuples --------------------------------------------------

_ADAPTER = """
    import torch
    from transformers import AutoModel, AutoTokenizer


    def cast_tuple(val, length=1):
        return val if isinstance(val, tuple) else ((val,) * length)


    class BGEAdapter:
        def __init__(self, name, pad=0.):
            self.tokenizer = AutoTokenizer.from_pretrained(name)
            model = AutoModel.from_pretrained(name)
            if torch.cuda.is_available():
                model = model.to("cuda")
            self.model = model

        def embed_text(self, texts, output_device=None):
            encoded = self.tokenizer(texts, padding=True, return_tensors="pt").to({target})
            return self.model(**encoded)[0][:, 0]


    CONFIG = dict(bge=BGEAdapter)


    class TextConditioner(torch.nn.Module):
        def __init__(self, model_types="bge", model_names=None):
            super().__init__()
            model_types = cast_tuple(model_types)
            model_names = cast_tuple(model_names, length=len(model_types))
            self.text_models = [CONFIG.get(t)(n, pad=0.) for t, n in zip(model_types, model_names)]

        def forward(self, texts):
            return torch.cat([m.embed_text(texts) for m in self.text_models], dim=-1)


    cond = TextConditioner().cuda()
    cond(["a dog"])
"""


def test_to_none_keeps_the_tokenizer_output_on_cpu_through_a_registry_of_adapters():
    assert _codes(_ADAPTER.replace("{target}", "output_device")) == [(19, "DEV202")]


def test_to_the_model_device_is_silent():
    assert _codes(_ADAPTER.replace("{target}", "self.model.device")) == []


def test_to_an_unknown_device_stays_silent():
    src = _ADAPTER.replace("{target}", "output_device").replace("m.embed_text(texts)", "m.embed_text(texts, self.dev)")
    assert _codes(src) == []


def test_tensor_to_none_keeps_its_device():
    assert _codes("""
        import torch
        x = torch.zeros(3).to(None)
        y = x + torch.zeros(3, device="cuda")
        z = torch.zeros(3, device="cuda").to(device=None) + torch.ones(3, device="cuda")
    """) == [(3, "DEV201")]


def test_isinstance_of_a_literal_and_repeated_sequences():
    assert _codes("""
        import torch

        class A:
            def __init__(self):
                self.m = torch.nn.Linear(2, 2).to("cuda")

        names = "a" if isinstance("a", (tuple, list)) else ("a",) * 2
        for n in names:
            obj = dict(a=A).get(n)()
            obj.m(torch.zeros(2))
        for obj in [A()] * 3:
            obj.m(torch.ones(2, device="cuda"))
    """) == [(11, "DEV201")]


# --- `a and b` with a known-truthy container --------------------------------------------------------------

_EXCLUDE = """
    import torch


    def to_device(stuff, device="cpu", exclude=None):
        for k, v in stuff.items():
            if exclude and k in exclude:
                stuff[k] = v
            else:
                stuff[k] = v.to(device)
        return stuff


    batch = {"image": torch.rand(2, 4, 4, 3), "mask": torch.ones(2, 4, 4, 1)}
    batch = to_device(batch, device="cuda:0", exclude={exclude})
    idx = torch.nonzero(batch["mask"][..., 0])
    pixels = batch["image"][idx[:, 0], idx[:, 1], idx[:, 2]]
"""


def test_and_with_a_non_empty_exclusion_list_keeps_the_excluded_entry_on_cpu():
    assert _codes(_EXCLUDE.replace("{exclude}", '["image"]')) == [(17, "DEV204")]


def test_and_with_no_exclusion_moves_every_entry():
    assert _codes(_EXCLUDE.replace("{exclude}", "None")) == []
    assert _codes(_EXCLUDE.replace("{exclude}", '["image", "mask"]')) == []


def test_and_with_an_unknown_exclusion_stays_silent():
    assert _codes(_EXCLUDE.replace("{exclude}", "EXCLUDED").replace("import torch", "import torch\nfrom cfg import EXCLUDED")) == []


# --- structural recursion over a dict, isinstance of a torch-made cpu tensor --------------------------------

_RECURSIVE = """
    import torch


    def get_dict_to_torch(stuff, device="cpu", exclude=None):
        if isinstance(stuff, dict):
            for k, v in stuff.items():
                if exclude and k in exclude:
                    stuff[k] = v
                else:
                    stuff[k] = get_dict_to_torch(v, device)
            return stuff
        if isinstance(stuff, torch.Tensor):
            return stuff.to(device)
        return stuff


    batch = {"image": torch.rand(2, 4, 4, 3), "mask": torch.ones(2, 4, 4, 1)}
    batch = get_dict_to_torch(batch, device="cuda:0", exclude={exclude})
    idx = torch.nonzero(batch["mask"][..., 0])
    c, y, x = (i.flatten() for i in torch.split(idx, 1, dim=-1))
    pixels = batch["image"][c, y, x]
"""


def test_recursive_dict_mover_with_an_excluded_key():
    assert _codes(_RECURSIVE.replace("{exclude}", '["image"]')) == [(22, "DEV204")]


def test_recursive_dict_mover_moving_everything_is_silent():
    assert _codes(_RECURSIVE.replace("{exclude}", "None")) == []


def test_recursion_with_the_same_argument_kinds_is_still_cut():
    assert _codes("""
        import torch

        def depth(d):
            if isinstance(d, dict):
                return max(depth(v) for v in d.values())
            return 0

        def nest(n):
            return {"a": nest(n - 1)} if n else torch.zeros(1)

        x = nest(3)
        depth({"a": {"b": {"c": 1}}})
    """) == []


def test_isinstance_of_a_cpu_value_of_unknown_make_stays_undecided():
    assert _codes("""
        import torch
        from somewhere import load

        def to_dev(x, device):
            if isinstance(x, torch.Tensor):
                return x.to(device)
            return x

        y = to_dev(load(), "cuda") + torch.zeros(2)
    """) == []


def test_isinstance_of_a_factory_made_cpu_tensor_is_decided():
    assert _codes("""
        import numpy as np
        import torch

        def to_dev(x, device):
            if isinstance(x, np.ndarray):
                x = torch.from_numpy(x)
            return x.to(device)

        y = to_dev(torch.rand(2), "cuda") + torch.zeros(2)
    """) == [(10, "DEV201")]


# --- a lazily set attribute read through a memoised property --------------------------------------------

_SCHED = """
    import numpy as np
    import torch


    class Sched:
        def __init__(self):
            self._step_index = None

        @property
        def step_index(self):
            return self._step_index

        def set_timesteps(self, n, device=None):
            sigmas = torch.from_numpy(np.linspace(1.0, 0.0, n)).to(dtype=torch.float32, device=device)
            self.sigmas = torch.cat([sigmas, torch.zeros(1, device=sigmas.device)])
            self._step_index = None

        def step(self, model_output, sample):
            if self.step_index is None:
                self._step_index = 0
            sigma = self.sigmas[{index}]
            eps = torch.randn(model_output.shape, device=model_output.device)
            return sample + eps * (sigma ** 2) ** 0.5


    s = Sched()
    s.set_timesteps(10)
    x = torch.zeros(2, 3, device="cuda")
    s.step(x, x)
"""


def test_property_read_after_a_lazy_store_sees_the_int_index():
    assert _codes(_SCHED.replace("{index}", "self.step_index")) == []


def test_sigmas_sliced_on_cpu_still_meet_the_cuda_sample():
    assert _codes(_SCHED.replace("{index}", "self.step_index:")) == [(15, "DEV202")]


# --- default_collate of dict samples ----------------------------------------------------------------------

_COLLATE = """
    import torch
    from torch.utils.data import default_collate


    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return {"image": torch.rand(4, 4, 3), "mask": torch.ones(4, 4, 1), "image_idx": i}


    class Loader:
        def __init__(self, dataset, device, collate_fn=default_collate):
            self.dataset = dataset
            self.device = device
            self.collate_fn = collate_fn

        def batch(self):
            items = [self.dataset.__getitem__(i) for i in range(4)]
            collated = self.collate_fn(items)
            collated["mask"] = collated["mask"].to(self.device)
            return collated


    batch = Loader(Images(), "cuda").batch()
    {use}
"""


def test_default_collate_keeps_each_entry_on_its_samples_device():
    assert _codes(_COLLATE.replace("{use}", 'out = batch["image"] * batch["mask"]')) == [(11, "DEV201")]


def test_default_collate_entries_on_one_device_are_silent():
    assert _codes(_COLLATE.replace("{use}", 'out = batch["image"] * batch["image_idx"][:, None, None, None]')) == []
    assert _codes(_COLLATE.replace("{use}", 'out = batch["mask"] * 2')) == []


def test_default_collate_of_samples_of_unknown_make_stays_silent():
    src = _COLLATE.replace('return {"image": torch.rand(4, 4, 3), "mask": torch.ones(4, 4, 1), "image_idx": i}',
                           "return load(i)").replace("import torch\n", "import torch\nfrom store import load\n", 1)
    assert _codes(src.replace("{use}", 'out = batch["image"] * batch["mask"]')) == []
