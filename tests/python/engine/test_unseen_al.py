"""Semantics found missing on unseen real cases, batch AL (tests/fixtures/engine/unseen/al_*): deployment and
tooling (inference wrappers, evaluation scripts, tracing and export).

- A member a plain project class cannot have: Python looks an attribute up on the instance, then on its class
  and bases; when every class on the way is the project's (or `object`), none has `__getattr__` /
  `__getattribute__`, a decorator or a metaclass, and none binds the name (a method, a class attribute, a
  `self.<name> = ...` in any method), reading it raises AttributeError. So when an attribute holds one of
  several objects (`self.model = Chatglm3Infer(...)` / `AgentLMInfer(...)` / `ModelInfer(...)` by an
  option) and a method only some of them define is called (`self.model.chat(...)`), the path through the
  others ends there and the call runs on the ones that have it: BadAgent's evaluator reaches
  `AgentLMInfer.chat`, where the tokenizer's cpu `input_ids` meet the bitsandbytes model loaded onto the
  GPU (DEV202, BadAgent#7). A class that may supply members otherwise (a library base, `__getattr__`)
  keeps the call unknown.
- torch.jit.trace records a device read from a tensor as a constant (a device is not a tensor): a cast in
  forward() to a tensor's device (`x = x.to(self.conv1.weight.device)`, detectron2's way to take cpu inputs)
  keeps casting to the trace-time device, so once the traced module is moved elsewhere its parameters meet
  its own cast input, whatever the caller passes (DEV207, detectron2#4132). The tracer runs through the
  plain project functions forward() calls, but a function compiled by a torch.jit decorator
  (`@torch.jit.script_if_tracing`) is scripted: its devices stay run-time values.
- A project helper that returns its argument moved (`def move_device_like(src, dst): return src.to(dst.device)`)
  used as forward()'s first use of the input (`x = move_device_like(x, self.conv1.weight)`) moves the caller's
  input as `x = x.to(...)` does: no mix with a cpu input (the fixed twin's false alarm).
- torch.jit.trace runs the module once on its example inputs: a model on the GPU traced with a cpu example
  fails at the trace (`model.cuda(); torch.jit.trace(model, torch.rand(...))`), as `SummaryWriter.add_graph`
  does.
"""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _file_codes(root, name: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_path(str(root / name)).diagnostics]


def _project(root, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


_WRAPPERS = """
    import sys

    import torch
    import torch.nn as nn


    class BaseInfer:
        def __init__(self, dim):
            self.dim = dim


    class GpuInfer(BaseInfer):
        def __init__(self, dim):
            super().__init__(dim)
            self.net = nn.Linear(dim, 2).cuda()

        def predict(self, x):
            return self.net(x)


    class EchoInfer(BaseInfer):
        def predict(self, x):
            return x
"""


def test_method_missing_on_one_choice_runs_on_the_others():
    # `BaseInfer` has no `predict`: on that path the call raises, on the GpuInfer path the cpu rows meet the GPU
    assert _codes(_WRAPPERS + """

    class Evaluator:
        def __init__(self, kind):
            if kind == "echo":
                self.model = EchoInfer(4)
            elif kind == "gpu":
                self.model = GpuInfer(4)
            else:
                self.model = BaseInfer(4)

        def run(self, rows):
            return self.model.predict(torch.tensor(rows))


    Evaluator(sys.argv[1]).run([[0.0] * 4])
    """) == [(37, "DEV201")]


def test_renamed_and_one_helper_deeper():
    assert _codes("""
    import sys

    import torch
    import torch.nn as nn


    class Plain:
        pass


    class Served(Plain):
        def __init__(self):
            self.head = nn.Linear(8, 1).to("cuda")

        def answer(self, t):
            return self._forward(t)

        def _forward(self, t):
            return self.head(t)


    class Service:
        def __init__(self, served):
            self.backend = Served() if served else Plain()

        def handle(self, values):
            return self.backend.answer(torch.as_tensor(values))


    Service(sys.argv[1] == "served").handle([[1.0] * 8])
    """) == [(28, "DEV201")]


def test_split_into_files(tmp_path):
    _project(tmp_path, {
        "infer/__init__.py": "",
        "infer/wrappers.py": _WRAPPERS,
        "infer/evaluator.py": """
            import torch

            from infer.wrappers import BaseInfer, GpuInfer


            class Evaluator:
                def __init__(self, kind):
                    self.model = GpuInfer(4) if kind == "gpu" else BaseInfer(4)

                def run(self, rows):
                    return self.model.predict(torch.tensor(rows))
        """,
        "main.py": """
            from infer.evaluator import Evaluator


            def main():
                Evaluator(sys.argv[1]).run([[0.0] * 4])


            if __name__ == "__main__":
                main()
        """,
    })
    assert _file_codes(tmp_path, "infer/evaluator.py") == [(12, "DEV201")]


def test_inside_a_trainer_loop():
    assert _codes(_WRAPPERS + """

    class Trainer:
        def __init__(self, kind, data):
            self.data = data
            self.infer = GpuInfer(4) if kind == "gpu" else BaseInfer(4)

        def evaluate(self):
            out = []
            for rows in self.data:
                out.append(self.infer.predict(torch.tensor(rows)))
            return out


    Trainer(sys.argv[1], [[[0.0] * 4]]).evaluate()
    """) == [(35, "DEV201")]


def test_fixed_twin_is_silent():
    assert _codes(_WRAPPERS + """

    class Evaluator:
        def __init__(self, kind):
            self.model = GpuInfer(4) if kind == "gpu" else BaseInfer(4)

        def run(self, rows):
            return self.model.predict(torch.tensor(rows).cuda())


    Evaluator(sys.argv[1]).run([[0.0] * 4])
    """) == []


def test_getattr_on_the_other_class_keeps_the_call_unknown():
    # BaseInfer forwards unknown members somewhere: its `predict` may exist, so nothing is said through the choice
    assert _codes(_WRAPPERS.replace("""            self.dim = dim
""", """            self.dim = dim

        def __getattr__(self, name):
            return getattr(self.backend, name)
""") + """

    class Evaluator:
        def __init__(self, kind):
            self.model = GpuInfer(4) if kind == "gpu" else BaseInfer(4)

        def run(self, rows):
            return self.model.predict(torch.tensor(rows))


    Evaluator(sys.argv[1]).run([[0.0] * 4])
    """) == []


def test_library_base_keeps_the_call_unknown():
    assert _codes(_WRAPPERS.replace("class BaseInfer:", "class BaseInfer(SomeService):")
                  .replace("import torch.nn as nn", "import torch.nn as nn\n    from service_lib import SomeService") + """

    class Evaluator:
        def __init__(self, kind):
            self.model = GpuInfer(4) if kind == "gpu" else BaseInfer(4)

        def run(self, rows):
            return self.model.predict(torch.tensor(rows))


    Evaluator(sys.argv[1]).run([[0.0] * 4])
    """) == []


def test_unknown_device_stays_silent():
    assert _codes("""
    import sys

    import torch
    import torch.nn as nn


    class Plain:
        pass


    class Served(Plain):
        def __init__(self, device):
            self.head = nn.Linear(8, 1).to(device)

        def answer(self, t):
            return self.head(t)


    class Service:
        def __init__(self, served, device):
            self.backend = Served(device) if served else Plain()

        def handle(self, values):
            return self.backend.answer(torch.as_tensor(values))


    def serve(device, values):
        return Service(True, device).handle(values)
    """) == []


# -- tracing bakes a cast to a tensor's device -----------------------------------------------------------

_CASTING = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 20, 5)
            self.conv2 = nn.Conv2d(20, 20, 5)

        def forward(self, x):
            x = x.to(self.conv1.weight.device)
            x = F.relu(self.conv1(x))
            return F.relu(self.conv2(x))
"""


def test_traced_cast_then_module_moved():
    assert _codes(_CASTING + """

    model = MyModel()
    x = torch.zeros([1, 3, 32, 32])
    ts = torch.jit.trace(model, x)
    ts.to("cuda")
    y = ts(x)
    """) == [(23, "DEV207")]


def test_traced_cast_in_a_method_forward_calls_and_cuda_input():
    assert _codes("""
    import torch
    import torch.nn as nn


    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Conv2d(3, 8, 3)

        def preprocess(self, images):
            return images.to(device=self.backbone.weight.device)

        def forward(self, images):
            return self.backbone(self.preprocess(images))


    detector = Detector().eval()
    exported = torch.jit.trace(detector, torch.rand(1, 3, 64, 64))
    exported = exported.cuda()
    exported(torch.rand(1, 3, 64, 64).cuda())
    """) == [(21, "DEV207")]


def test_traced_cast_through_a_plain_helper_split_into_files(tmp_path):
    _project(tmp_path, {
        "wrappers.py": """
            import torch


            def move_device_like(src, dst):
                return src.to(dst.device)
        """,
        "model.py": _CASTING.replace("x = x.to(self.conv1.weight.device)", "x = move_device_like(x, self.conv1.weight)")
                            .replace("import torch.nn.functional as F", "import torch.nn.functional as F\n\n    from wrappers import move_device_like"),
        "export.py": """
            import torch

            from model import MyModel


            class Exporter:
                def __init__(self, model):
                    self.model = model

                def export(self, example):
                    return torch.jit.trace(self.model, example)


            ts = Exporter(MyModel()).export(torch.zeros([1, 3, 32, 32]))
            ts.to("cuda")
            ts(torch.zeros([1, 3, 32, 32]).cuda())
        """,
    })
    assert _file_codes(tmp_path, "export.py") == [(17, "DEV207")]


def test_scripted_cast_is_read_at_run_time():
    assert _codes(_CASTING.replace("x = x.to(self.conv1.weight.device)", "x = move_device_like(x, self.conv1.weight)") + """

    @torch.jit.script_if_tracing
    def move_device_like(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        return src.to(dst.device)


    model = MyModel()
    x = torch.zeros([1, 3, 32, 32])
    ts = torch.jit.trace(model, x)
    ts.to("cuda")
    y = ts(x)
    """) == []


def test_traced_on_the_device_it_runs_on():
    assert _codes(_CASTING + """

    model = MyModel().to("cuda")
    x = torch.zeros([1, 3, 32, 32])
    ts = torch.jit.trace(model, x.to("cuda"))
    y = ts(x)
    """) == []


def test_traced_cast_moved_to_an_unknown_device_stays_silent():
    assert _codes(_CASTING + """

    def deploy(device):
        ts = torch.jit.trace(MyModel(), torch.zeros([1, 3, 32, 32]))
        ts.to(device)
        return ts(torch.zeros([1, 3, 32, 32]))
    """) == []


def test_helper_that_moves_the_input_is_a_move_on_entry():
    # not traced: the helper moves the cpu input to the model's device, so nothing mixes
    assert _codes(_CASTING.replace("x = x.to(self.conv1.weight.device)", "x = move_device_like(x, self.conv1.weight)") + """

    def move_device_like(src, dst):
        \"\"\"Tensor.to(device=dst.device).\"\"\"
        return src.to(dst.device)


    model = MyModel().cuda()
    y = model(torch.zeros([1, 3, 32, 32]))
    """) == []


# -- tracing runs the module on its example inputs --------------------------------------------------------

_NET = """
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 4)

        def forward(self, x, mask=None):
            return self.fc(x) if mask is None else self.fc(x) * mask
"""


def test_trace_runs_the_model_on_a_cpu_example():
    assert _codes(_NET + """

    model = Net().cuda().eval()
    example = torch.rand(1, 16)
    traced = torch.jit.trace(model, example)
    traced.save("net.pt")
    """) == [(16, "DEV201")]


def test_trace_in_an_export_helper_with_a_tuple_example():
    assert _codes(_NET + """

    def export(net, path):
        dummy = (torch.rand(2, 16), torch.ones(2, 4))
        torch.jit.trace(net, dummy).save(path)


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    export(Net().to(device), "net.pt")
    """) == [(16, "DEV201"), (16, "DEV201")]  # the input and the mask, both made on the cpu


def test_trace_split_into_files(tmp_path):
    _project(tmp_path, {
        "net.py": _NET,
        "convert.py": """
            import torch

            from net import Net


            class Converter:
                def __init__(self, device):
                    self.model = Net().to(device)

                def to_torchscript(self, path):
                    sample = torch.randn(1, 16)
                    torch.jit.trace(self.model, sample).save(path)


            if __name__ == "__main__":
                Converter("cuda").to_torchscript("net.pt")
        """,
    })
    assert _file_codes(tmp_path, "convert.py") == [(12, "DEV201")]


def test_trace_with_the_example_on_the_model_device_is_silent():
    assert _codes(_NET + """

    model = Net().cuda().eval()
    example = torch.rand(1, 16).cuda()
    torch.jit.trace(model, example).save("net.pt")
    """) == []


def test_trace_before_the_move_is_silent():
    assert _codes(_NET + """

    model = Net().eval()
    traced = torch.jit.trace(model, torch.rand(1, 16))
    traced.to("cuda")
    """) == []


def test_trace_of_a_model_on_an_unknown_device_is_silent():
    assert _codes(_NET + """

    def export(net, device, path):
        torch.jit.trace(net.to(device), torch.rand(1, 16)).save(path)
    """) == []


def test_traced_cast_saved_and_loaded_onto_the_gpu():
    assert _codes(_CASTING + """

    ts = torch.jit.trace(MyModel(), torch.zeros([1, 3, 32, 32]))
    ts.save("model.ts")
    served = torch.jit.load("model.ts", map_location="cuda")
    served(torch.zeros([1, 3, 32, 32]))
    """) == [(22, "DEV207")]


def test_traced_cast_loaded_on_the_trace_device_takes_any_input():
    assert _codes(_CASTING + """

    model = MyModel().cuda()
    torch.jit.trace(model, torch.zeros([1, 3, 32, 32], device="cuda")).save("model.ts")
    served = torch.jit.load("model.ts", map_location="cuda")
    served(torch.zeros([1, 3, 32, 32]))
    """) == []


def test_helper_that_moves_the_input_imported_from_another_file(tmp_path):
    _project(tmp_path, {
        "layers/__init__.py": "",
        "layers/wrappers.py": """
            def move_device_like(src, dst):
                return src.to(dst.device)
        """,
        "model.py": _CASTING.replace("x = x.to(self.conv1.weight.device)", "x = move_device_like(x, self.conv1.weight)")
                            .replace("import torch.nn.functional as F", "import torch.nn.functional as F\n\n    from layers.wrappers import move_device_like"),
        "serve.py": """
            import torch

            from model import MyModel

            model = MyModel().cuda().eval()
            print(model(torch.zeros([1, 3, 32, 32])))
        """,
    })
    assert _file_codes(tmp_path, "serve.py") == []


def test_helper_that_casts_a_dtype_is_no_move():
    # `src.to(dst.dtype)` keeps the input where it is: the cpu input still meets the cuda weights
    assert _codes(_CASTING.replace("x = x.to(self.conv1.weight.device)", "x = like(x, self.conv1.weight)") + """

    def like(src, dst):
        return src.to(dst.dtype)


    model = MyModel().cuda()
    y = model(torch.zeros([1, 3, 32, 32]))
    """) == [(24, "DEV201")]
