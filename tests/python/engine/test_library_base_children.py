"""A project class deriving from a model library's module (`class CNN(ResNet)`) has, once
`super().__init__(...)` ran, the submodules the library's `__init__` builds on self (`self.fc`, `self.layer1`,
...: generated knowledge, frameworks.json `library_module_children`, from the released wheels), built where
the default device is; the project's code reads and moves them as its own."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

TWO_GPUS = """
    import torch
    import torch.nn as nn
    from torchvision.models.resnet import ResNet, Bottleneck


    class Net(ResNet):
        def __init__(self):
            super().__init__(Bottleneck, [3, 4, 6, 3], num_classes=2)
            self.stage1 = nn.Sequential(self.conv1, self.relu, self.maxpool, self.layer1, self.layer2).to("cuda:0")
            self.stage2 = nn.Sequential(self.layer3, self.layer4, self.avgpool).to("cuda:1")
            self.fc.to(FC_DEVICE)

        def forward(self, x):
            x = self.stage2(self.stage1(x).to("cuda:1"))
            return self.fc(torch.flatten(x, 1))
"""


def test_model_parallel_subclass_logits_on_the_second_gpu_meet_labels_on_the_first(tmp_path):
    _project(tmp_path, {"nets.py": TWO_GPUS.replace("FC_DEVICE", '"cuda:1"'), "train.py": """
        import torch
        import torch.nn.functional as F
        from nets import Net


        def step(model, images, labels):
            images, labels = images.to("cuda:0"), labels.to("cuda:0")
            return F.cross_entropy(model(images), labels)


        step(Net(), torch.rand(2, 3, 224, 224), torch.zeros(2, dtype=torch.long))
    """})
    assert [c for _, c in _codes(tmp_path, "train.py")] == ["DEV202"]


def test_head_left_behind_on_the_cpu_meets_the_last_stage(tmp_path):
    # the library-built head is not moved with the stages: it is still where ResNet.__init__ built it
    _project(tmp_path, {"nets.py": TWO_GPUS.replace("            self.fc.to(FC_DEVICE)\n", ""), "run.py": """
        import torch
        from nets import Net

        print(Net()(torch.rand(2, 3, 224, 224).to("cuda:0")))
    """})
    assert "DEV" in " ".join(c for _, c in _codes(tmp_path, "run.py"))


def test_labels_on_the_output_device_or_a_moved_model_stay_silent(tmp_path):
    _project(tmp_path, {"nets.py": TWO_GPUS.replace("FC_DEVICE", '"cuda:1"'), "ok.py": """
        import torch
        import torch.nn.functional as F
        from torchvision.models import ResNet
        from torchvision.models.resnet import BasicBlock
        from nets import Net


        class Small(ResNet):
            def __init__(self):
                super().__init__(BasicBlock, [2, 2, 2, 2])
                self.fc = torch.nn.Linear(512, 3)


        out = Net()(torch.rand(2, 3, 224, 224).to("cuda:0"))
        print(F.cross_entropy(out, torch.zeros(2, dtype=torch.long).to("cuda:1")))
        small = Small().cuda()
        print(small(torch.rand(2, 3, 224, 224).cuda()))
    """})
    assert _codes(tmp_path, "ok.py") == []
