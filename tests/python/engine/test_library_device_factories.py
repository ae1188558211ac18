"""A library function that creates its tensor where its `device` parameter says (annotated to return a Tensor,
taking no tensor, `device=None` by default: the default device, as torch's own factories do), e.g.
`kornia.create_meshgrid(h, w)`: generated knowledge (libraries.json `device_factories`, from the wheels), not
a list of names. Not given, the grid is on the default device (the cpu, or cuda under
`set_default_tensor_type("torch.cuda.FloatTensor")`); given, on that device."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def test_grid_on_the_cpu_meets_a_cuda_image_one_helper_deeper(tmp_path):
    _project(tmp_path, {"warp.py": """
        import torch
        import torch.nn.functional as F
        from kornia import create_meshgrid


        def base_grid(h, w):
            return create_meshgrid(h, w, normalized_coordinates=True)


        class Warper:
            def __init__(self, device):
                self.device = device

            def __call__(self, img, flow):
                grid = base_grid(img.shape[-2], img.shape[-1]) + flow.permute(0, 2, 3, 1)
                return F.grid_sample(img, grid)


        warp = Warper(torch.device("cuda"))
        img = torch.rand(1, 3, 8, 8).to(warp.device)
        print(warp(img, torch.zeros(1, 2, 8, 8, device=warp.device)))
    """})
    assert "DEV" in " ".join(c for _, c in _codes(tmp_path, "warp.py"))


def test_grid_on_the_default_cuda_type_meets_a_cpu_legacy_tensor_in_another_file(tmp_path):
    _project(tmp_path, {"rays.py": """
        import torch
        from kornia import create_meshgrid


        def directions(h, w, focal):
            i, j = create_meshgrid(h, w, normalized_coordinates=False)[0].unbind(-1)
            return torch.stack([(i - w / 2) / focal, -(j - h / 2) / focal, -torch.ones_like(i)], -1)


        def rotate(dirs, pose):
            return dirs @ pose[:3, :3].T
    """, "run.py": """
        import numpy as np
        import torch
        from rays import directions, rotate

        torch.set_default_tensor_type("torch.cuda.FloatTensor")
        pose = torch.FloatTensor(np.eye(4, dtype=np.float32))
        print(rotate(directions(4, 4, 2.0), pose))
    """})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV201"]


def test_given_the_image_device_or_unknown_stays_silent(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch
        import torch.nn.functional as F
        import kornia


        def warp(img, device=None):
            grid = kornia.utils.create_meshgrid(8, 8, device=img.device)
            a = F.grid_sample(img, grid)
            other = kornia.create_meshgrid(8, 8, True, device)
            return a, other


        img = torch.rand(1, 3, 8, 8).cuda()
        print(warp(img))
        print(F.grid_sample(torch.rand(1, 3, 8, 8), kornia.create_meshgrid(8, 8)))
    """})
    assert _codes(tmp_path, "ok.py") == []
