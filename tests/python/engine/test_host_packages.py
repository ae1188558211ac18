"""Packages that never import torch (knowledge: `host_packages`, generated from their releases: PIL,
scikit-image, OpenCV, imageio, soundfile, librosa) return host data: an image read by `skimage.io.imread` or
`cv2.imread` and turned into a tensor by a torchvision transform, or `torch.tensor()` of audio read by librosa,
is on the cpu. Fed to a model on the GPU unmoved, it fails.

Silent neighbours: the tensor moved before use; a host package's call given a tensor (its result unknown)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def test_skimage_image_through_a_transform_in_a_dataset_split_into_files(tmp_path):
    _project(tmp_path, {"data.py": """
        from skimage import io
        from torch.utils.data import Dataset
        import torchvision.transforms as T


        class Faces(Dataset):
            def __init__(self, paths):
                self.paths = paths
                self.tf = T.Compose([T.ToPILImage(), T.Resize(64), T.ToTensor()])

            def __len__(self):
                return len(self.paths)

            def load(self, i):
                return self.tf(io.imread(self.paths[i]))
    """, "generate.py": """
        import torch
        import torch.nn as nn
        from data import Faces


        class G(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 3, 3, padding=1)

            def forward(self, x):
                return self.conv(x)


        if __name__ == "__main__":
            device = torch.device("cuda")
            gen = G().to(device)
            faces = Faces(["a.png"])
            out = gen(faces.load(0).unsqueeze(0))
    """})
    assert _codes(tmp_path, "generate.py") == [(19, "DEV202")]


def test_opencv_image_moved_is_silent(tmp_path):
    _project(tmp_path, {"infer.py": """
        import cv2
        import torch
        import torchvision.transforms as T

        device = torch.device("cuda")
        conv = torch.nn.Conv2d(3, 8, 3).to(device)
        img = T.ToTensor()(cv2.imread("a.png")).unsqueeze(0).to(device)
        out = conv(img)
    """})
    assert _codes(tmp_path, "infer.py") == []


def test_opencv_image_not_moved_through_a_helper(tmp_path):
    _project(tmp_path, {"infer.py": """
        import cv2
        import torch
        import torchvision.transforms as T


        def read(path):
            return T.ToTensor()(cv2.cvtColor(cv2.imread(path), cv2.COLOR_BGR2RGB))


        class Runner:
            def __init__(self):
                self.conv = torch.nn.Conv2d(3, 8, 3).cuda()

            def run(self, path):
                return self.conv(read(path).unsqueeze(0))


        if __name__ == "__main__":
            print(Runner().run("a.png").shape)
    """})
    assert _codes(tmp_path, "infer.py") == [(7, "DEV202")]


def test_host_call_given_a_tensor_stays_unknown(tmp_path):
    _project(tmp_path, {"audio.py": """
        import librosa
        import torch

        wav = torch.randn(16000, device="cuda")
        spec = torch.as_tensor(librosa.feature.melspectrogram(y=wav, sr=16000))
        out = spec * torch.ones(1, device="cuda")
    """})
    assert _codes(tmp_path, "audio.py") == []
