"""torch's functions that run a module on the example inputs they are given (knowledge: `module_runners.functions`,
an ast scan of the installed torch finding what hands a module and its inputs to a tracer:
`torch.onnx.export(model, args, f)`, `torch.export.export(mod, args)`): exporting a model on the GPU with an
example left on the cpu fails at the export, as calling the model would. Silent: the example on the model's
device, the export before the move, a model of unknown placement."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


def test_onnx_export_of_a_cuda_model_with_a_cpu_example(tmp_path):
    _project(tmp_path, {"export.py": """
        import torch
        import torch.nn as nn

        device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        model = nn.Linear(4, 2).to(device)
        example = torch.rand(1, 4)
        torch.onnx.export(model, example, "model.onnx", input_names=["x"])
    """})
    assert _codes(tmp_path, "export.py") == [(6, "DEV201")]


def test_export_helper_split_into_files_with_keyword_arguments(tmp_path):
    _project(tmp_path, {"tools/exporting.py": """
        import torch


        def to_onnx(net, path, size=224):
            dummy = torch.randn(1, 3, size, size)
            torch.onnx.export(model=net, args=(dummy,), f=path, opset_version=17)
    """, "tools/__init__.py": "", "nets.py": """
        import torch.nn as nn


        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)

            def forward(self, x):
                return self.conv(x)
    """, "main.py": """
        import torch
        from nets import Classifier
        from tools.exporting import to_onnx


        class Exporter:
            def __init__(self):
                self.net = Classifier().cuda().eval()

            def run(self, path):
                to_onnx(self.net, path)


        Exporter().run("classifier.onnx")
    """})
    assert _codes(tmp_path, "tools/exporting.py") == [(5, "DEV201")]


def test_torch_export_of_a_cuda_model_with_a_cpu_example(tmp_path):
    _project(tmp_path, {"aot.py": """
        import torch
        import torch.nn as nn


        def export(model):
            example = (torch.zeros(2, 8),)
            return torch.export.export(model, example)


        program = export(nn.Linear(8, 8).cuda())
    """})
    assert _codes(tmp_path, "aot.py") == [(6, "DEV201")]


def test_exports_on_one_device_or_unknown_are_silent(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch
        import torch.nn as nn

        device = torch.device("cuda")


        def moved_example(path):
            model = nn.Linear(4, 2).to(device)
            torch.onnx.export(model, torch.rand(1, 4, device=device), path)


        def before_the_move(path):
            model = nn.Linear(4, 2)
            torch.onnx.export(model, torch.rand(1, 4), path)
            return model.to(device)


        def unknown_model(model, path):
            torch.onnx.export(model, torch.rand(1, 4), path)
    """})
    assert _codes(tmp_path, "ok.py") == []
