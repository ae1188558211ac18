"""A model builder picked by a name known only at run time from a model library's namespace
(`models.__dict__[args.arch]()`, `getattr(torchvision.models, cfg.arch)(...)`, as pytorch/examples' ImageNet
script does): whichever builder the name picks, it builds its model where the default device is, as every
named one does, so the model is a cpu module until moved. A namespace that is not a model library's, or a
project module, stays unknown."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def test_dict_lookup_of_an_architecture_left_on_the_cpu_under_ddp(tmp_path):
    _project(tmp_path, {"main.py": """
        import argparse
        import torch
        import torchvision.models as models

        parser = argparse.ArgumentParser()
        parser.add_argument("--arch", default="resnet18")
        parser.add_argument("--gpu", type=int, default=0)
        args = parser.parse_args()
        model = models.__dict__[args.arch]()
        torch.cuda.set_device(args.gpu)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
    """})
    assert [c for _, c in _codes(tmp_path, "main.py")] == ["DEV106"]


def test_getattr_builder_in_a_helper_in_another_file_fed_cuda_images(tmp_path):
    _project(tmp_path, {"nets.py": """
        import torchvision


        def build(cfg):
            net = getattr(torchvision.models, cfg.arch)(num_classes=cfg.classes)
            return net
    """, "train.py": """
        import torch
        from nets import build


        class Trainer:
            def __init__(self, cfg):
                self.device = torch.device("cuda")
                self.net = build(cfg)

            def step(self, images):
                return self.net(images.to(self.device))
    """, "run.py": """
        import argparse
        import torch
        from train import Trainer

        p = argparse.ArgumentParser()
        p.add_argument("--arch", default="resnet50")
        p.add_argument("--classes", type=int, default=10)
        Trainer(p.parse_args()).step(torch.rand(2, 3, 224, 224))
    """})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV106"]


def test_moved_or_not_a_model_library_stays_silent(tmp_path):
    _project(tmp_path, {"ok.py": """
        import argparse
        import torch
        import torchvision.models as models
        import mylib.zoo as zoo

        parser = argparse.ArgumentParser()
        parser.add_argument("--arch", default="resnet18")
        args = parser.parse_args()
        a = models.__dict__[args.arch]().cuda()
        print(a(torch.rand(1, 3, 224, 224).cuda()))
        b = getattr(zoo, args.arch)()
        print(b(torch.rand(1, 3, 224, 224).cuda()))
    """})
    assert _codes(tmp_path, "ok.py") == []
