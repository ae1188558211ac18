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
