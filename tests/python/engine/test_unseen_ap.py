"""Semantics found missing on unseen real cases, batch AP (tests/fixtures/engine/unseen/ap_*): medical imaging
and 3D vision (NeRF / NeuS ray sampling, point-cloud memory banks, box corners, splatting backgrounds).

- A 0-dim integer tensor used as an index is applied as a Python int: torch takes `.item()` of it (a
  select), so its device never has to match the indexed tensor's. `images[perm[i]]` with `perm` on cuda and
  `images` on the cpu runs (a sync, no error); only an index with dims (`images[0][(ys, xs)]` with cuda
  `ys, xs`) must be on the cpu or the indexed tensor's device. An index that may be 0-dim (an int item of a
  1-D tensor) is therefore no DEV204; the pixel indices drawn by `torch.randint` after
  `torch.set_default_tensor_type('torch.cuda.FloatTensor')` still are (NeuS#92, NeuRIS#34).
- A tensor compared with string constants is a Python bool that is never true: `t == "random"` (Tensor.__eq__
  gives NotImplemented for a str; Python falls back to identity) and `t in {"last_sample", "random"}` (a set
  hashes the tensor by identity; a list or tuple compares with ==). An option typed "a colour name or a
  tensor" that holds a tensor takes the tensor's branches, so a cpu preset colour (`colors.WHITE`, a
  module-level `torch.tensor`) given to a renderer still meets the cuda image it is blended into
  (nerfstudio#2381).
- A plain tensor attribute that a module's move leaves on the cpu is the cause wherever it is read: returned
  by a getter method (`_get_background_color()` returning `self.background_color` in eval mode) it is still
  DEV105 at the attribute, not a cpu value "returned by" the getter (nerfstudio#3219, splatfacto).
- A device chosen by a conditional between a bare "cuda" and another kind (`'cuda' if
  torch.cuda.is_available() else 'mps' if ... else 'cpu'`) is the current GPU (cuda:0 while the program never
  sets it) or not a GPU at all: never a fixed other GPU. A helper that moves the input there meets a model
  moved to `cuda:1` (Depth-Anything-V2#258); with `torch.cuda.set_device(1)` it does not."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


_DATASET = """
    import torch
    import numpy as np


    class Dataset:
        def __init__(self, n, h, w):
            self.images = torch.from_numpy(np.zeros((n, h, w, 3), dtype=np.float32)).cpu()
            self.n_images, self.H, self.W = n, h, w

        def rays_at(self, img_idx, batch_size):
            pixels_x = torch.randint(low=0, high=self.W, size=[batch_size])
            pixels_y = torch.randint(low=0, high=self.H, size=[batch_size])
            color = self.images[img_idx][{INDEX}]
            return color
"""

_RUNNER = """

    class Runner:
        def __init__(self):
            self.dataset = Dataset(4, 8, 8)

        def get_image_perm(self):
            return torch.randperm(self.dataset.n_images)

        def train(self):
            image_perm = self.get_image_perm()
            for it in range(10):
                self.dataset.rays_at(image_perm[it % len(image_perm)], 512)


    if __name__ == '__main__':
        torch.set_default_tensor_type('torch.cuda.FloatTensor')
        Runner().train()
"""


def _case(index: str) -> str:
    return _DATASET.replace("{INDEX}", index) + _RUNNER


def test_cuda_pixel_indices_into_cpu_images_are_reported():
    assert (14, "DEV204") in _codes(_case("(pixels_y, pixels_x)"))


def test_plain_tuple_subscript_is_reported_too():
    assert (14, "DEV204") in _codes(_case("pixels_y, pixels_x"))


def test_cpu_pixel_indices_with_a_cuda_0dim_image_index_are_silent():
    # the image index is `image_perm[i]`, a 0-dim cuda tensor: applied as an int
    assert _codes(_case("(pixels_y.cpu(), pixels_x.cpu())")) == []


def test_0dim_cuda_index_alone_is_silent():
    src = """
        import torch

        images = torch.zeros(4, 3).cpu()
        perm = torch.randperm(4, device="cuda")
        for i in range(4):
            row = images[perm[i]]
    """
    assert _codes(src) == []


def test_cuda_index_vector_into_cpu_tensor_is_reported():
    src = """
        import torch

        images = torch.zeros(4, 3).cpu()
        perm = torch.randperm(4, device="cuda")
        rows = images[perm]
    """
    assert (6, "DEV204") in _codes(src)


def test_0dim_index_inside_a_trainer_class_split_into_files(tmp_path: Path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "data.py").write_text(textwrap.dedent(_DATASET.replace("{INDEX}", "(pixels_y.cpu(), pixels_x.cpu())")))
    (tmp_path / "train.py").write_text("import torch\nfrom models.data import Dataset\n" + textwrap.dedent(_RUNNER))
    assert [d.code for d in check_path(str(tmp_path / "train.py")).diagnostics] == []
    assert [d.code for d in check_path(str(tmp_path / "models" / "data.py")).diagnostics] == []


def test_cuda_pixel_indices_split_into_files_are_reported(tmp_path: Path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "data.py").write_text(textwrap.dedent(_DATASET.replace("{INDEX}", "(pixels_y, pixels_x)")))
    (tmp_path / "train.py").write_text("import torch\nfrom models.data import Dataset\n" + textwrap.dedent(_RUNNER))
    assert (15, "DEV204") in [(d.span.line, d.code) for d in check_path(str(tmp_path / "train.py")).diagnostics]
    assert (14, "DEV204") in [(d.span.line, d.code) for d in check_path(str(tmp_path / "models" / "data.py")).diagnostics]


_RENDERER = """
    import torch
    from torch import nn

    WHITE = torch.tensor([1.0, 1.0, 1.0])
    COLORS_DICT = {"white": WHITE, "black": torch.tensor([0.0, 0.0, 0.0])}


    class Renderer(nn.Module):
        def __init__(self, background_color="random"):
            super().__init__()
            self.background_color = background_color

        def blend_background(self, image, background_color=None):
            rgb, opacity = image[..., :3], image[..., 3:]
            if background_color is None:
                background_color = self.background_color
                if background_color in {"last_sample", "random"}:
                    background_color = "black"
            if isinstance(background_color, str) and background_color in COLORS_DICT:
                background_color = COLORS_DICT[background_color]
            return rgb * opacity + {BG} * (1 - opacity)

        def for_loss(self, pred_image, gt_image):
            background_color = self.background_color
            if background_color == "last_sample":
                background_color = "black"
            elif background_color == "random":
                background_color = torch.rand_like(pred_image)
            return self.blend_background(gt_image, background_color=background_color)


    if __name__ == "__main__":
        renderer = Renderer(background_color={COLOR})
        image = torch.rand(16, 4).to("cuda")
        renderer.for_loss(image[..., :3], image)
"""


def _renderer(bg: str = "background_color", color: str = "WHITE") -> str:
    return _RENDERER.replace("{BG}", bg).replace("{COLOR}", color)


def test_cpu_preset_tensor_colour_through_string_options_is_reported():
    assert (5, "DEV201") in _codes(_renderer())


def test_preset_colour_moved_to_the_image_device_is_silent():
    assert _codes(_renderer(bg="background_color.to(rgb.device)")) == []


def test_colour_given_by_name_is_silent():
    # "white" is looked up in the table: still the cpu tensor, and it meets the cuda image
    assert (5, "DEV201") in _codes(_renderer(color='"white"'))
    assert _codes(_renderer(color='"white"', bg="background_color.to(rgb.device)")) == []


def test_random_background_is_silent():
    # "random": the loss draws the background with rand_like on the image's device
    assert _codes(_renderer(color='"random"')) == []


def test_tensor_compared_with_strings_is_a_plain_bool():
    src = """
        import torch

        mode = torch.zeros(3)
        image = torch.rand(3).cuda()
        if mode == "auto":
            mode = image
        out = image + mode
    """
    assert (8, "DEV201") in _codes(src) or (4, "DEV201") in _codes(src)


def test_preset_colour_in_another_module(tmp_path: Path):
    (tmp_path / "colors.py").write_text("import torch\n\nWHITE = torch.tensor([1.0, 1.0, 1.0])\n")
    src = textwrap.dedent(_renderer()).replace("WHITE = torch.tensor([1.0, 1.0, 1.0])", "from colors import WHITE")
    (tmp_path / "render.py").write_text(src)
    assert any(d.code == "DEV201" for d in check_path(str(tmp_path / "render.py")).diagnostics)


_SPLAT = """
    import torch
    from torch import nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.populate_modules()
            self.device_indicator_param = nn.Parameter(torch.empty(0))

        @property
        def device(self):
            return self.device_indicator_param.device

        def populate_modules(self):
            pass


    class Splat(Model):
        def populate_modules(self):
            self.means = nn.Parameter(torch.rand(100, 2))
            {STORE}

        def _get_background_color(self):
            if self.training:
                return torch.rand(3, device=self.device)
            return {READ}

        def get_outputs(self, pixels):
            background = self._get_background_color()
            alpha = torch.sigmoid(torch.cdist(pixels, self.means)).mean(-1, keepdim=True)
            return alpha + (1 - alpha) * background


    if __name__ == "__main__":
        model = Splat()
        model.to("cuda")
        model.eval()
        model.get_outputs(torch.rand(64, 2, device="cuda"))
"""


def _splat(store="self.background_color = torch.tensor([0.1, 0.2, 0.3])", read="self.background_color") -> str:
    return _SPLAT.replace("{STORE}", store).replace("{READ}", read)


def test_attribute_returned_by_a_getter_is_dev105_at_the_attribute():
    assert (23, "DEV105") in _codes(_splat())


def test_attribute_moved_in_the_getter_is_silent():
    assert _codes(_splat(read="self.background_color.to(self.device)")) == []


def test_registered_buffer_is_silent():
    assert _codes(_splat(store='self.register_buffer("background_color", torch.tensor([0.1, 0.2, 0.3]))')) == []


def test_getter_in_another_file(tmp_path: Path):
    src = textwrap.dedent(_splat())
    head, main = src.split('if __name__ == "__main__":')
    (tmp_path / "splat.py").write_text(head)
    (tmp_path / "eval.py").write_text("import torch\nfrom splat import Splat\n\nif __name__ == \"__main__\":" + main)
    assert (23, "DEV105") in [(d.span.line, d.code) for d in check_path(str(tmp_path / "splat.py")).diagnostics]


_DEPTH = """
    import torch
    from torch import nn


    class DepthNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Conv2d(3, 8, 3)

        def image2tensor(self, raw):
            image = torch.from_numpy(raw).unsqueeze(0)
            DEVICE = {CHOICE}
            return image.to(DEVICE)

        @torch.no_grad()
        def infer_image(self, raw):
            return self.backbone(self.image2tensor(raw))


    if __name__ == "__main__":
        import numpy as np
        {SETUP}
        model = DepthNet().to(torch.device("{TARGET}")).eval()
        model.infer_image(np.zeros((3, 32, 32), dtype=np.float32))
"""

_CHOICE = "'cuda' if torch.cuda.is_available() else 'mps' if torch.backends.mps.is_available() else 'cpu'"


def _depth(choice=_CHOICE, target="cuda:1", setup="pass") -> str:
    return _DEPTH.replace("{CHOICE}", choice).replace("{TARGET}", target).replace("{SETUP}", setup)


def test_bare_cuda_choice_meets_a_model_on_cuda_1():
    assert any(code == "DEV106" for _, code in _codes(_depth()))


def test_two_way_choice_meets_a_model_on_cuda_1():
    assert any(code == "DEV106" for _, code in _codes(_depth(choice="'cuda' if torch.cuda.is_available() else 'cpu'")))


def test_model_on_bare_cuda_or_cuda_0_is_silent():
    assert _codes(_depth(target="cuda")) == []
    assert _codes(_depth(target="cuda:0")) == []


def test_input_following_the_model_is_silent():
    assert _codes(_depth(choice="next(self.parameters()).device")) == []


def test_current_device_set_to_1_is_silent():
    assert _codes(_depth(setup="torch.cuda.set_device(1)")) == []
