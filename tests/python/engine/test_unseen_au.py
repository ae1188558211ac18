"""Semantics found missing on unseen real cases, batch AU (tests/fixtures/engine/unseen/au_*): detection,
segmentation and tracking code (anchors, assigners, CAM targets, GPU augmentations).

- An index with a slice (or None) gives a tensor with at least one dimension: `x[c, :, :]`, `x[:, None]`.
  Slicing a 0-dim tensor raises, so such a result is never the 0-dim value that mixes with any device,
  whatever the base was (an element of an iterated batch, `for output in outputs`, may be 0-dim; its slice
  is not). A Grad-CAM segmentation target multiplies `model_output[self.category, :, :]` (the cpu output of
  a model kept on the cpu) by a mask it moved to the accelerator in `__init__` (DEV202, pytorch-grad-cam#545).
  An index of ints only keeps "may be 0-dim" (silent).
- `with X(...) as x:` binds x to what `X.__enter__()` returns: for a project class that defines `__enter__`
  it is run (most return self, so `x` is the object built, with its model and device). Library context
  managers, and classes without `__enter__`, stay unknown.
- `if device:` on a torch.device (or a device string) is true: `def __init__(self, device=None): if device:
  self.device = device else: self.device = cuda-if-available` takes the branch its argument decides. A
  symbolic device (an argument, a CLI option: maybe None or "") stays undecided.
- A plain tensor attribute already put on a device where it is set (`self.priors = priors.to(self.device)`
  in `__init__`, the accelerator when one exists) keeps that device when the module is later moved elsewhere
  (`net.to(torch.device("cpu"))`, the default of a predictor factory): `.to()` moves parameters and buffers
  only. Where it meets what the moved module computes, the attribute is at fault (DEV105 where it is set,
  pytorch-ssd#89). A move to the same device, a registered buffer, or a move to a device not known stay silent.
- Joining a sequence of tensors (`torch.stack([...])`, `torch.cat(parts)`, hstack, vstack ...) gives a tensor
  with dims (stack adds one; cat refuses 0-dim parts), even when each part may be 0-dim (the elements of a
  1-D tensor iterated). Per-image factors sampled on the cpu (`Uniform(low, high).sample((B,))` with cpu
  bounds), expanded and stacked, then added to a cuda batch, mix devices (kornia#622).
- A cache a module fills on its first forward (a plain list of tensors, `self.cell_anchors = [...]` made on
  the feature maps' device) is left behind, like a plain tensor attribute, when the model is then moved
  (`model.cpu()` after a GPU run): what is computed from it keeps its device, and where it meets what the
  moved model computes the cache is at fault (DEV105 where it is set, torchvision#1738). Needed on the way,
  plain Python facts: `isinstance(x, torch.Tensor)` of a list / tuple / dict (an OrderedDict of feature maps)
  is False; `torch.jit.annotate(T, v)` is `v`; `key in d` of a dict known to be empty (`{}`, or after
  `d.clear()`) is False; `t.to(other.dtype)` changes the dtype only.
- A member a plain wrapper class does not define is looked up by its `__getattr__` (`return getattr(self.delegate,
  name)`): `unet.to(dtype).to(device)` on such a wrapper moves the model it wraps (also for a choice of two
  wrappers), and `getattr(model, "to")` is `model.to`. Without it, knowing more devices (`.to(x.dtype)`) made
  a wrapped, moved UNet look never moved (a false DEV106 on the field, kohya-ss/sd-scripts).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


# --- a slice keeps a dimension ---------------------------------------------------------------------------

_TARGET = """
    import numpy as np
    import torch
    import torch.nn as nn


    class SegTarget:
        def __init__(self, category, mask):
            self.category = category
            self.mask = torch.from_numpy(mask)
            if torch.cuda.is_available():
                self.mask = self.mask.cuda()

        def __call__(self, model_output):
            return (model_output{INDEX} * self.mask).sum()


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Conv2d(3, 4, 1)

        def forward(self, x):
            return self.head(x)


    model = Net()
    x = torch.rand(1, 3, 8, 8)
    outputs = model(x)
    targets = [SegTarget(2, np.ones((8, 8), dtype=np.float32))]
    loss = sum([t(out) for t, out in zip(targets, outputs)])
"""


def test_slice_of_an_iterated_output_meets_the_premoved_mask():
    assert _codes(_TARGET.replace("{INDEX}", "[self.category, :, :]")) == [(29, "DEV202")]


def test_none_index_keeps_a_dimension_too():
    assert _codes(_TARGET.replace("{INDEX}", "[self.category][None]")) == [(29, "DEV202")]


def test_int_only_index_may_be_zero_dim_and_stays_silent():
    assert _codes(_TARGET.replace("{INDEX}", "[self.category, 0, 0]")) == []


def test_mask_moved_to_the_output_device_is_clean():
    src = _TARGET.replace("{INDEX}", "[self.category, :, :]").replace(
        "* self.mask).sum()", "* self.mask.to(model_output.device)).sum()")
    assert _codes(src) == []


def test_model_moved_with_the_mask_is_clean():
    src = _TARGET.replace("{INDEX}", "[self.category, :, :]").replace(
        "    model = Net()\n", "    model = Net()\n    if torch.cuda.is_available():\n        model = model.cuda()\n")
    src = src.replace("x = torch.rand(1, 3, 8, 8)", "x = torch.rand(1, 3, 8, 8).to(next(model.parameters()).device)")
    assert _codes(src) == []


# --- `with X() as x` runs X.__enter__ ---------------------------------------------------------------------

_CAM = """
    import numpy as np
    import torch
    import torch.nn as nn


    class SegTarget:
        def __init__(self, category, mask):
            self.category = category
            self.mask = torch.from_numpy(mask)
            if torch.cuda.is_available():
                self.mask = self.mask.cuda()

        def __call__(self, model_output):
            return (model_output[self.category, :, :] * self.mask).sum()


    class BaseCAM:
        def __init__(self, model):
            self.model = model.eval()
            self.device = next(self.model.parameters()).device

        def forward(self, input_tensor, targets):
            input_tensor = input_tensor.to(self.device)
            outputs = self.model(input_tensor)
            return sum([t(o) for t, o in zip(targets, outputs)])

        def __call__(self, input_tensor, targets=None):
            return self.forward(input_tensor, targets)

        def __enter__(self):
            return {ENTER}

        def __exit__(self, exc_type, exc_value, exc_tb):
            return True


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Conv2d(3, 4, 1)

        def forward(self, x):
            return self.head(x)


    m = Net()
    timg = torch.rand(1, 3, 8, 8)
    targets = [SegTarget(2, np.ones((8, 8), dtype=np.float32))]
    with BaseCAM(m) as cam:
        grayscale = cam(input_tensor=timg, targets=targets)
"""


def test_with_binds_what_enter_returns():
    assert _codes(_CAM.replace("{ENTER}", "self")) == [(25, "DEV202")]


def test_enter_returning_something_else_is_followed():
    src = _CAM.replace("{ENTER}", "Runner(self)").replace(
        "    class Net(nn.Module):",
        "    class Runner:\n        def __init__(self, cam):\n            self.cam = cam\n\n"
        "        def __call__(self, **kw):\n            return self.cam(**kw)\n\n\n    class Net(nn.Module):")
    got = _codes(src)
    assert [c for _, c in got] == ["DEV202"]


def test_enter_returning_none_binds_none_and_stays_silent():
    assert _codes(_CAM.replace("{ENTER}", "None")) == []


def test_fixed_target_inside_with_is_clean():
    src = _CAM.replace("{ENTER}", "self").replace("* self.mask).sum()", "* self.mask.to(model_output.device)).sum()")
    assert _codes(src) == []


def test_library_context_manager_stays_unknown():
    src = """
        import torch
        import torch.nn as nn
        from contextlib import nullcontext

        m = nn.Linear(4, 4)
        mask = torch.ones(4)
        if torch.cuda.is_available():
            mask = mask.cuda()
        with nullcontext(m) as model:
            print(model(torch.rand(2, 4))[:, None] * mask)
    """
    assert _codes(src) == []


def test_with_split_into_files_inside_a_trainer_class(tmp_path: Path):
    (tmp_path / "cam.py").write_text(textwrap.dedent(_CAM.split("    class Net(nn.Module):")[0]))
    (tmp_path / "explain.py").write_text(textwrap.dedent("""
        import numpy as np
        import torch
        import torch.nn as nn

        from cam import BaseCAM, SegTarget


        class Explainer:
            def __init__(self, model):
                self.model = model

            def run(self, image):
                targets = [SegTarget(1, np.ones((8, 8), dtype=np.float32))]
                with BaseCAM(self.model) as engine:
                    return engine(input_tensor=image, targets=targets)


        if __name__ == "__main__":
            Explainer(nn.Conv2d(3, 4, 1)).run(torch.rand(1, 3, 8, 8))
    """.replace("{ENTER}", "self")))
    (tmp_path / "cam.py").write_text((tmp_path / "cam.py").read_text().replace("{ENTER}", "self"))
    got = sorted((Path(d.span.path).name if getattr(d.span, "path", None) else "", d.code)
                 for d in check_path(str(tmp_path / "explain.py")).diagnostics)
    assert got and all(code == "DEV202" for _, code in got)


# --- an attribute put on the accelerator stays there when the module moves to the cpu ---------------------

_SSD = """
    import torch
    import torch.nn as nn


    class SSD(nn.Module):
        def __init__(self, priors, device=None):
            super().__init__()
            self.head = nn.Conv2d(3, 4, 1)
            if device:
                self.device = device
            else:
                self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            self.priors = priors.to(self.device)

        def forward(self, x):
            loc = self.head(x).flatten(1)
            return loc * self.priors


    class Predictor:
        def __init__(self, net, device=None):
            self.net = net
            if device:
                self.device = device
            else:
                self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            self.net.to(self.device)

        def predict(self, image):
            images = image.unsqueeze(0).to(self.device)
            return self.net.forward(images)


    def create_predictor(net, device={PRED_DEVICE}):
        return Predictor(net, device=device)


    net = SSD(torch.rand(256))
    predictor = create_predictor(net)
    print(predictor.predict(torch.rand(3, 16, 16)))
"""


def test_priors_put_on_the_accelerator_stay_there_when_the_net_moves_to_cpu():
    assert _codes(_SSD.replace("{PRED_DEVICE}", "torch.device('cpu')")) == [(14, "DEV105")]


def test_cpu_given_as_a_string_too():
    assert _codes(_SSD.replace("{PRED_DEVICE}", "'cpu'")) == [(14, "DEV105")]


def test_predictor_choosing_the_same_accelerator_is_clean():
    assert _codes(_SSD.replace("{PRED_DEVICE}", "None")) == []


def test_predictor_device_from_an_argument_stays_silent():
    src = _SSD.replace("{PRED_DEVICE}", "None").replace(
        "predictor = create_predictor(net)", "import sys\n    predictor = create_predictor(net, sys.argv[1])")
    assert _codes(src) == []


def test_priors_registered_as_a_buffer_are_clean():
    src = _SSD.replace("{PRED_DEVICE}", "torch.device('cpu')").replace(
        "self.priors = priors.to(self.device)", "self.register_buffer('priors', priors.to(self.device))")
    assert _codes(src) == []


def test_priors_moved_where_they_are_used_are_clean():
    src = _SSD.replace("{PRED_DEVICE}", "torch.device('cpu')").replace(
        "return loc * self.priors", "return loc * self.priors.to(loc.device)")
    assert _codes(src) == []


def test_renamed_inside_a_trainer_class_with_a_helper_choosing_the_device():
    src = """
        import torch
        import torch.nn as nn


        def pick_device():
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")


        class AnchorHead(nn.Module):
            def __init__(self, anchors):
                super().__init__()
                self.reg = nn.Linear(4, 4)
                self.anchors = anchors.to(pick_device())

            def forward(self, feats):
                return self.reg(feats) + self.anchors


        class Evaluator:
            def __init__(self, head):
                self.head = head.cpu()

            def run(self, feats):
                return self.head(feats)


        Evaluator(AnchorHead(torch.zeros(4))).run(torch.rand(2, 4))
    """
    assert _codes(src) == [(14, "DEV105")]


def test_split_into_files(tmp_path: Path):
    model, rest = _SSD.replace("{PRED_DEVICE}", "torch.device('cpu')").split("    class Predictor:")
    (tmp_path / "ssd.py").write_text(textwrap.dedent(model))
    (tmp_path / "demo.py").write_text(textwrap.dedent("""
        import torch
        from ssd import SSD
    """) + textwrap.dedent("    class Predictor:" + rest))
    got = sorted((f, d.span.line, d.code) for f in ("ssd.py", "demo.py")
                 for d in check_path(str(tmp_path / f)).diagnostics)
    assert ("ssd.py", 14, "DEV105") in got and {c for _, _, c in got} == {"DEV105"}


# --- joining a sequence of tensors gives one with dims -----------------------------------------------------

_SOLARIZE = """
    import torch
    from torch.distributions import Uniform


    def adapted_uniform(shape, low, high):
        return Uniform(low, high).sample(shape)


    def solarize(images, additions):
        additions = {JOIN}
        return (images + additions).clamp(0., 1.)


    class RandomSolarize(torch.nn.Module):
        def forward(self, images):
            bound = torch.tensor([-0.1, 0.1])
            factors = adapted_uniform((images.shape[0],), bound[0], bound[1])
            return solarize(images, factors{MOVE})


    x = torch.rand(8, 3, 16, 16).to("cuda:0")
    print(RandomSolarize()(x))
"""


def _solarize(join: str, move: str = "") -> str:
    return _SOLARIZE.replace("{JOIN}", join).replace("{MOVE}", move)


def test_stacked_per_image_factors_sampled_on_cpu_meet_the_cuda_batch():
    # the bounds are made in `forward(self, images)`, with the batch's device in scope: fixed there (DEV201)
    src = _solarize("torch.stack([a.expand(*images.shape[1:]) for a in additions])")
    assert _codes(src) == [(_line(src, "bound = torch.tensor"), "DEV201")]


def test_cat_of_per_image_parts_too():
    src = _solarize("torch.cat([a.view(1, 1, 1, 1).expand(1, *images.shape[1:]) for a in additions])")
    assert _codes(src) == [(_line(src, "bound = torch.tensor"), "DEV201")]


def test_factors_moved_to_the_batch_device_are_clean():
    assert _codes(_solarize("torch.stack([a.expand(*images.shape[1:]) for a in additions])", ".to(images.device)")) == []


def test_a_single_element_may_be_zero_dim_and_stays_silent():
    assert _codes(_solarize("additions[0]")) == []


def test_split_into_files_with_the_sampler_in_a_helper_module(tmp_path: Path):
    (tmp_path / "sampling.py").write_text(textwrap.dedent("""
        import torch
        from torch.distributions import Uniform


        def adapted_uniform(shape, low, high):
            return Uniform(low, high).sample(shape)


        def per_image(factors, like):
            return torch.stack([f.expand(*like.shape[1:]) for f in factors])
    """))
    (tmp_path / "aug.py").write_text(textwrap.dedent("""
        import torch
        from sampling import adapted_uniform, per_image


        class Brightness:
            def __call__(self, images):
                bound = torch.tensor([0.9, 1.1])
                f = adapted_uniform((images.shape[0],), bound[0], bound[1])
                return images * per_image(f, images)


        if __name__ == "__main__":
            Brightness()(torch.rand(4, 3, 8, 8).cuda())
    """))
    got = sorted((f, d.code) for f in ("sampling.py", "aug.py") for d in check_path(str(tmp_path / f)).diagnostics)
    assert got and {c for _, c in got} == {"DEV201"}  # at the bounds made beside the batch (see above)


# --- a cache filled on the first forward is left behind by a later move ---------------------------------------

_CACHE = '''
    from collections import OrderedDict

    import torch
    import torch.nn as nn


    class AnchorGenerator(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell_anchors = None
            self._cache = {}

        def set_cell_anchors(self, dtype, device):
            if self.cell_anchors is not None:
                {EARLY}
            self.cell_anchors = [torch.zeros(3, 4, dtype=dtype, device=device) for _ in range(2)]

        def cached(self, key):
            if key in self._cache:
                return self._cache[key]
            anchors = [a + 1 for a in self.cell_anchors]
            self._cache[key] = anchors
            return anchors

        def forward(self, feature_maps):
            dtype, device = feature_maps[0].dtype, feature_maps[0].device
            self.set_cell_anchors(dtype, device)
            out = torch.jit.annotate(list, [])
            for a in self.cached(str(len(feature_maps))):
                out.append(a)
            self._cache.clear()
            return torch.cat(out)


    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Conv2d(3, 4, 1)
            self.gen = AnchorGenerator()

        def forward(self, x):
            feats = OrderedDict([("0", self.body(x))])
            if isinstance(feats, torch.Tensor):
                feats = OrderedDict([("0", feats)])
            maps = list(feats.values())
            anchors = self.gen(maps).to(maps[0].dtype)
            return maps[0].flatten(1)[:, :4] - anchors[:1]


    model = Detector()
    model.cuda()
    model(torch.rand(1, 3, 8, 8).cuda())
    model.cpu()
    model(torch.rand(1, 3, 8, 8))
'''


def test_anchor_cache_filled_on_gpu_is_left_behind_by_model_cpu():
    assert _codes(_CACHE.replace("{EARLY}", "return")) == [(17, "DEV105")]


def test_cache_rebuilt_for_the_new_device_is_clean():
    early = "if self.cell_anchors[0].device == device:\n                    return"
    assert _codes(_CACHE.replace("{EARLY}", early)) == []


def test_model_never_moved_back_is_clean():
    src = _CACHE.replace("{EARLY}", "return").replace("    model.cpu()\n    model(torch.rand(1, 3, 8, 8))\n", "")
    assert _codes(src) == []


def test_cache_recomputed_every_forward_is_clean():
    src = _CACHE.replace("            if self.cell_anchors is not None:\n                {EARLY}\n", "")
    assert _codes(src) == []


def test_isinstance_of_a_container_against_torch_tensor_is_false():
    src = '''
        import torch

        feats = {"0": torch.rand(2, 3).cuda()}
        if isinstance(feats, torch.Tensor):
            feats = {"0": feats}
        first = list(feats.values())[0]
        print(first + torch.ones(3))
    '''
    assert _codes(src) == [(8, "DEV201")]


def test_to_another_tensors_dtype_keeps_the_device():
    src = '''
        import torch

        codes = torch.rand(4, 4).cuda()
        boxes = torch.rand(4, 4).to(codes.dtype)
        print(codes * boxes)
    '''
    assert _codes(src) == [(5, "DEV201")]


# --- a wrapper's __getattr__ hands members on to the model it wraps ------------------------------------------

_WRAP = '''
    import torch
    import torch.nn as nn


    class InferUNet:
        def __init__(self, original):
            self.delegate = original

        def __getattr__(self, name):
            return getattr(self.delegate, name)

        def __call__(self, *args, **kwargs):
            return self.delegate(*args, **kwargs)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x.to(x.dtype))


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    unet = InferUNet(Net())
    {MOVE}
    print(unet(torch.rand(2, 4).to(device)))
'''


def test_move_through_getattr_reaches_the_wrapped_model():
    assert _codes(_WRAP.replace("{MOVE}", "unet.to(torch.float16).to(device)")) == []


def test_wrapped_model_not_moved_is_still_reported():
    assert [c for _, c in _codes(_WRAP.replace("{MOVE}", "pass"))] == ["DEV106"]


def test_choice_of_two_wrappers_moves_each():
    src = _WRAP.replace("    unet = InferUNet(Net())\n", "    import sys\n    unet = InferUNet(Net()) if sys.argv[1] == 'a' else InferUNet(Net())\n")
    assert _codes(src.replace("{MOVE}", "unet.to(device)")) == []


def test_wrapper_defining_its_own_to_is_not_bypassed():
    src = _WRAP.replace("        def __call__(self, *args, **kwargs):",
                        "        def to(self, *args, **kwargs):\n            return self\n\n        def __call__(self, *args, **kwargs):")
    assert [c for _, c in _codes(src.replace("{MOVE}", "unet.to(device)"))] == ["DEV106"]


def test_a_cached_list_left_behind_gets_no_register_buffer_fix():
    src = """
        import torch
        import torch.nn as nn


        class Gen(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def build(self, device):
                self.anchors = [torch.zeros(4, device=device) for _ in range(2)]

            def forward(self, x):
                return self.fc(x) + self.anchors[0]


        g = Gen().cuda()
        g.build(torch.device("cuda"))
        g(torch.rand(2, 4).cuda())
        g.cpu()
        g(torch.rand(2, 4))
    """
    diags = check_source(textwrap.dedent(src), "t.py").diagnostics
    assert [(d.span.line, d.code) for d in diags] == [(12, "DEV105")]
    assert all(d.fix is None for d in diags)
