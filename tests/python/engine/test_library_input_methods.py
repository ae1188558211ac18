"""A model library's methods other than forward that run the model on their arguments (knowledge:
`frameworks.json` `module_input_methods`, read from the wheels of transformers, diffusers, timm and
torchvision): `model.forward_features(x)` of a timm model moved to the GPU, fed a cpu tensor, fails like
`model(x)`. Which methods qualify is read from each library's module classes (a public method that calls
one of the submodules its `__init__` builds, or `self(...)`, with one of its parameters); a method the
table does not list stays unknown."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def test_timm_forward_features_of_a_cpu_image(tmp_path):
    _project(tmp_path, {"embed.py": """
        import torch
        import timm

        model = timm.create_model("vit_base_patch16_224", pretrained=True, num_classes=0)
        model.to("cuda").eval()
        img = torch.rand(1, 3, 224, 224)
        feats = model.forward_features(img)
    """})
    assert _codes(tmp_path, "embed.py") == [(6, "DEV201")]


def test_timm_methods_renamed_split_into_files_one_helper_deeper_in_a_class(tmp_path):
    _project(tmp_path, {
        "backbone.py": """
            import timm


            def build(name):
                return timm.create_model(name, pretrained=False)
        """,
        "extractor.py": """
            import numpy as np
            import torch
            from backbone import build


            def to_batch(images):
                return torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float()


            class FeatureBank:
                def __init__(self, arch, device):
                    self.device = device
                    self.net = build(arch).to(device)

                def tokens(self, images):
                    batch = to_batch(images)
                    return self.net.forward_intermediates(batch)


            bank = FeatureBank("convnext_tiny", torch.device("cuda"))
            bank.tokens([np.zeros((224, 224, 3), np.float32)])
        """})
    assert [c for _l, c in _codes(tmp_path, "extractor.py")] == ["DEV202"]


def test_library_model_methods_silent_when_inputs_follow_or_are_unknown(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch
        import timm
        from torchvision import models


        class FeatureBank:
            def __init__(self, device):
                self.device = device
                self.net = timm.create_model("resnet50").to(device)
                self.tv = models.resnet18().to(device)

            def tokens(self, images):
                return self.net.forward_features(images.to(self.device))

            def head(self, x):
                return self.net.forward_head(x)

            def unlisted(self, x):
                return self.net.some_project_patch(torch.zeros(3))

            def cpu_model(self):
                m = timm.create_model("resnet50")
                return m.forward_features(torch.zeros(1, 3, 8, 8))
    """})
    assert _codes(tmp_path, "ok.py") == []
