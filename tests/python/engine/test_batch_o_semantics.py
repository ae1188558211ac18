"""Semantics found missing by the unseen batch O (tests/fixtures/engine/unseen/o_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- a legacy constructor builds on the cpu whatever `set_default_device` says, and a typed one
  (`torch.FloatTensor(data)`) whatever `set_default_tensor_type` says; `torch.Tensor(...)` follows the
  latter (checked on torch 2.13 with the meta device and the double dtype);
- `self.blocks += [Block(...)]` on an `nn.ModuleList` / `nn.Sequential` is `extend` (ModuleList.__iadd__):
  the blocks are its children, so what a loop over it runs, and where their buffers are, is known;
  `ml.extend([...])` the same; extending with something not known element by element leaves it unknown."""

from __future__ import annotations

from pathlib import Path

from project_fixtures import codes as _codes, write_project as _project


# --- ModuleList += / extend -----------------------------------------------------------------------

STFT_LOSS = """
import torch


class STFTLoss(torch.nn.Module):
    def __init__(self, win_length=600, window="hann_window"):
        super().__init__()
        self.register_buffer("window", getattr(torch, window)(win_length))

    def forward(self, x):
        return torch.stft(x, 1024, 120, self.window.shape[0], self.window, return_complex=True).abs().mean()


class MultiLoss(torch.nn.Module):
    def __init__(self, win_lengths=(600, 1200, 240)):
        super().__init__()
        self.losses = torch.nn.ModuleList()
        for wl in win_lengths:
            self.losses {ADD}

    def forward(self, x):
        total = 0.0
        for f in self.losses:
            total = total + f(x)
        return total / len(self.losses)
"""

ADDS = {
    "iadd": "+= [STFTLoss(wl)]",
    "iadd_tuple": "+= (STFTLoss(wl),)",
    "extend": ".extend([STFTLoss(wl)])",
    "iadd_modulelist": "+= torch.nn.ModuleList([STFTLoss(wl)])",
}

SCRIPT = """
import torch
from losses import MultiLoss

device = torch.device("cuda")
criterion = MultiLoss()
wave = torch.randn(2, 16000).to(device)
print(criterion(wave))
"""


def test_modulelist_iadd_and_extend_register_children(tmp_path):
    for key, add in ADDS.items():
        root = tmp_path / key
        _project(root, {"losses.py": STFT_LOSS.replace("{ADD}", add), "train.py": SCRIPT})
        assert _codes(root, "train.py") == [(7, "DEV106")], key


def test_modulelist_iadd_in_a_trainer_one_helper_deeper(tmp_path):
    _project(tmp_path, {"losses.py": STFT_LOSS.replace("{ADD}", "+= [STFTLoss(wl)]"), "trainer.py": """
        import torch
        from losses import MultiLoss


        def build_criterion(cfg):
            return MultiLoss(cfg["win_lengths"])


        class Trainer:
            def __init__(self, model, cfg):
                self.device = torch.device("cuda")
                self.model = model.to(self.device)
                self.criterion = build_criterion(cfg)

            def step(self, batch):
                wave = batch.to(self.device)
                out = self.model(wave)
                return self.criterion(out)


        trainer = Trainer(torch.nn.Identity(), {"win_lengths": (600, 1200)})
        trainer.step(torch.randn(2, 16000))
        """})
    assert _codes(tmp_path, "trainer.py") == [(18, "DEV106")]


def test_modulelist_iadd_moved_or_unknown_stays_silent(tmp_path):
    # moved with the model: clean
    _project(tmp_path / "moved", {"losses.py": STFT_LOSS.replace("{ADD}", "+= [STFTLoss(wl)]"),
                                  "train.py": SCRIPT.replace("MultiLoss()", "MultiLoss().to(device)")})
    assert _codes(tmp_path / "moved", "train.py") == []
    # extended with a generator or a list of unknown modules: what the loop runs is unknown
    for key, add in {"gen": "+= (STFTLoss(w) for w in [wl])", "unknown": "+= [make_loss(wl)]"}.items():
        src = STFT_LOSS.replace("{ADD}", add).replace("import torch\n", "import torch\nfrom registry import make_loss\n", 1)
        _project(tmp_path / key, {"losses.py": src, "train.py": SCRIPT})
        assert _codes(tmp_path / key, "train.py") == [], key


# --- typed legacy constructors under set_default_tensor_type ---------------------------------------

RAYS = """
import torch


def get_ray_directions(H, W, focal):
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H), indexing="xy")
    return torch.stack([(i - W * .5) / focal, -(j - H * .5) / focal, -torch.ones_like(i)], -1)


def get_rays(directions, c2w):
    rays_d = directions @ c2w[:3, :3].T
    return c2w[:3, -1].expand(rays_d.shape), rays_d
"""

BBOX = """
import torch
from rays import get_ray_directions, get_rays


def bounding_box(frames, H, W, focal):
    directions = get_ray_directions(H, W, focal)
    out = []
    for frame in frames:
        c2w = {POSE}
        out.append(get_rays(directions, c2w))
    return out
"""

MAIN = """
import torch
from bbox import bounding_box


def train():
    frames = [{{"transform_matrix": [[1.0, 0.0, 0.0, 0.0]] * 4}}]
    return bounding_box(frames, 8, 8, 10.0)


if __name__ == "__main__":
    {DEFAULT}
    train()
"""


def _nerf(root: Path, pose: str, default: str = "torch.set_default_tensor_type('torch.cuda.FloatTensor')"):
    _project(root, {"rays.py": RAYS, "bbox.py": BBOX.replace("{POSE}", pose),
                    "run_nerf.py": MAIN.replace("{DEFAULT}", default).replace("{{", "{").replace("}}", "}")})
    return _codes(root, "run_nerf.py")


def test_typed_legacy_constructor_stays_on_cpu_under_a_cuda_default_tensor_type(tmp_path):
    # the default reaches the directions two files away; `torch.FloatTensor(...)` ignores it
    assert _nerf(tmp_path / "float", 'torch.FloatTensor(frame["transform_matrix"])') == [(7, "DEV201")]
    assert _nerf(tmp_path / "double", 'torch.DoubleTensor(frame["transform_matrix"]).float()') == [(7, "DEV201")]


def test_default_following_or_moved_poses_stay_silent(tmp_path):
    # `torch.Tensor(...)` and `torch.tensor(...)` follow the default tensor type
    assert _nerf(tmp_path / "tensor", 'torch.Tensor(frame["transform_matrix"])') == []
    assert _nerf(tmp_path / "factory", 'torch.tensor(frame["transform_matrix"])') == []
    # moved where the directions are
    assert _nerf(tmp_path / "moved", 'torch.FloatTensor(frame["transform_matrix"]).to(directions.device)') == []
    # no cuda default: everything on the cpu
    assert _nerf(tmp_path / "cpu", 'torch.FloatTensor(frame["transform_matrix"])', "pass") == []


def test_legacy_constructors_ignore_set_default_device(tmp_path):
    # `set_default_device` (and `with torch.device(...)`) change the factories, not the legacy
    # constructors: `torch.FloatTensor(...)` and `torch.Tensor(...)` are still built on the cpu
    for key, pose in {"float": 'torch.FloatTensor(frame["transform_matrix"])',
                      "tensor": 'torch.Tensor(frame["transform_matrix"])'}.items():
        assert _nerf(tmp_path / key, pose, "torch.set_default_device('cuda')") == [(7, "DEV201")], key
    assert _nerf(tmp_path / "factory", 'torch.tensor(frame["transform_matrix"])', "torch.set_default_device('cuda')") == []
