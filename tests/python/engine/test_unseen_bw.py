"""Semantics found missing on unseen real cases, batch BW (tests/fixtures/engine/unseen/bw_*): applications
(LLM / RAG / diffusion / speech inference scripts, RL, time series, science projects).

- An import statement inside a function body (or an `if __name__ == "__main__":` block, a `try`) loads its
  module when that code runs, as one at the top of the file does. A test or script whose only import of the
  project's torch code is function-local (poli-baselines' `test_turbo_runs()` does
  `from poli_baselines.solvers.bayesian_optimization.turbo import Turbo` and then `Turbo(...).solve()`, with
  only numpy imported on top) still runs that code: it is analysed like a script that imports it on top.
- `True if torch.cuda.is_available() else False` is CUDA's availability itself (and `False if ... else True`
  its negation): a flag set so (TSLib's `args.use_gpu`) picks, where the analysis runs (a machine with
  CUDA), the GPU branch of a later `if args.use_gpu: device = torch.device("cuda:0") else: ...`, as
  `torch.cuda.is_available()` itself does; the model is then on cuda:0 before DataParallel replicates it.
  A flag from the command line stays unknown."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source

# --- imports inside functions -------------------------------------------------------------------------------

_SOLVER = """
    import numpy as np
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    class Turbo:
        def __init__(self, x0):
            self.X = torch.tensor(np.asarray(x0))

        def next_candidate(self):
            return generate_batch(self.X)


    def generate_batch(X):
        x_center = X[0, :].clone()
        pert = torch.rand(10, 3).to(device=device)
        return x_center + pert
"""

_SOLVER_FIXED = _SOLVER.replace("self.X = torch.tensor(np.asarray(x0))",
                                "self.X = torch.tensor(np.asarray(x0)).to(device)")


def _project(tmp_path: Path, solver: str, runner: str) -> list[tuple[str, str]]:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "solver.py").write_text(textwrap.dedent(solver))
    (tmp_path / "run_solver.py").write_text(textwrap.dedent(runner))
    return [(d.code, name) for name in ("run_solver.py", "pkg/solver.py")
            for d in check_path(tmp_path / name).diagnostics]


# the runner's call and the line in the solver where the cpu data meet the cuda perturbation
_FOUND = [("DEV201", "pkg/solver.py"), ("DEV201", "run_solver.py")]

_RUNNER_IN_FUNCTION = """
    import numpy as np


    def test_turbo_runs():
        from pkg.solver import Turbo

        x0 = np.random.uniform(0, 1, size=30).reshape(10, 3)
        Turbo(x0).next_candidate()


    if __name__ == "__main__":
        test_turbo_runs()
"""


def _codes(diags) -> list[tuple[str, str]]:
    return sorted(diags)


def test_function_local_import_runs_the_project_code(tmp_path: Path):
    assert _codes(_project(tmp_path, _SOLVER, _RUNNER_IN_FUNCTION)) == _FOUND


def test_function_local_import_renamed(tmp_path: Path):
    runner = _RUNNER_IN_FUNCTION.replace("from pkg.solver import Turbo", "from pkg.solver import Turbo as Solver") \
        .replace("Turbo(x0)", "Solver(x0)")
    assert _codes(_project(tmp_path, _SOLVER, runner)) == _FOUND


def test_import_under_main_guard(tmp_path: Path):
    runner = """
        import numpy as np

        if __name__ == "__main__":
            from pkg.solver import Turbo

            Turbo(np.random.uniform(0, 1, size=30).reshape(10, 3)).next_candidate()
    """
    assert _codes(_project(tmp_path, _SOLVER, runner)) == _FOUND


def test_function_local_import_one_helper_deeper(tmp_path: Path):
    runner = """
        import numpy as np


        def make_solver(x0):
            try:
                from pkg.solver import Turbo
            except ImportError:
                raise SystemExit("install pkg")
            return Turbo(x0)


        def main():
            make_solver(np.random.uniform(0, 1, size=30).reshape(10, 3)).next_candidate()


        if __name__ == "__main__":
            main()
    """
    assert _codes(_project(tmp_path, _SOLVER, runner)) == _FOUND


def test_function_local_import_inside_a_runner_class(tmp_path: Path):
    runner = """
        import numpy as np


        class Benchmark:
            def __init__(self, n):
                self.n = n

            def run(self):
                from pkg.solver import Turbo

                return Turbo(np.random.uniform(0, 1, size=3 * self.n).reshape(self.n, 3)).next_candidate()


        if __name__ == "__main__":
            Benchmark(10).run()
    """
    assert _codes(_project(tmp_path, _SOLVER, runner)) == _FOUND


def test_function_local_import_fixed_twin_is_silent(tmp_path: Path):
    assert _project(tmp_path, _SOLVER_FIXED, _RUNNER_IN_FUNCTION) == []


def test_function_local_import_unknown_device_is_silent(tmp_path: Path):
    solver = _SOLVER.replace('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                             'device = None') \
        .replace("def generate_batch(X):", "def generate_batch(X, device=device):")
    runner = _RUNNER_IN_FUNCTION.replace("Turbo(x0).next_candidate()", "Turbo(x0).next_candidate()  # device unknown")
    solver = solver.replace("return generate_batch(self.X)", "return generate_batch(self.X, self.device)") \
        .replace("def __init__(self, x0):", "def __init__(self, x0, device=None):\n            self.device = device")
    assert _project(tmp_path, solver, runner) == []


# --- a flag equal to CUDA's availability ---------------------------------------------------------------------

_MIC = """
    import torch
    import torch.nn as nn


    class MIC(nn.Module):
        def __init__(self, device="cuda"):
            super().__init__()
            self.device = device
            self.conv = nn.Conv1d(4, 4, 1)

        def forward(self, src):
            zeros = torch.zeros((src.shape[0], 4, 1), device=self.device)
            return torch.cat((zeros, self.conv(src)), dim=-1)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.mic = MIC(device=torch.device("cuda:0"))

        def forward(self, x):
            return self.mic(x)
"""

_MIC_FIXED = _MIC.replace("zeros = torch.zeros((src.shape[0], 4, 1), device=self.device)",
                          "zeros = torch.zeros((src.shape[0], 4, 1), device=src.device)")

_FLAG_SCRIPT = """
    use_gpu = True if torch.cuda.is_available() else False
    if use_gpu:
        device = torch.device("cuda:0")
    else:
        device = torch.device("cpu")
    model = nn.DataParallel(Model().to(device), device_ids=[0, 1])
    model(torch.randn(8, 4, 5).to(device))
"""


def _src_codes(src: str) -> list[str]:
    return [d.code for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def test_availability_flag_picks_the_gpu_branch():
    assert _src_codes(_MIC + _FLAG_SCRIPT) == ["DEV202"]


def test_availability_flag_negated():
    script = _FLAG_SCRIPT.replace("use_gpu = True if torch.cuda.is_available() else False",
                                  "cpu_only = False if torch.cuda.is_available() else True") \
        .replace("if use_gpu:", "if not cpu_only:")
    assert _src_codes(_MIC + script) == ["DEV202"]


def test_availability_flag_on_args_inside_an_experiment_class(tmp_path: Path):
    (tmp_path / "models.py").write_text(textwrap.dedent(_MIC))
    (tmp_path / "exp_basic.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn
        from models import Model


        class Exp_Basic:
            def __init__(self, args):
                self.args = args
                self.device = self._acquire_device()
                self.model = self._build_model().to(self.device)

            def _acquire_device(self):
                if self.args.use_gpu:
                    device = torch.device("cuda:0")
                else:
                    device = torch.device("cpu")
                return device

            def _build_model(self):
                return nn.DataParallel(Model(), device_ids=[0, 1])

            def train(self):
                x = torch.randn(8, 4, 5).to(self.device)
                return self.model(x)
    """))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        import argparse
        import torch
        from exp_basic import Exp_Basic

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--epochs", type=int, default=1)
            args = parser.parse_args()
            args.use_gpu = True if torch.cuda.is_available() else False
            Exp_Basic(args).train()
    """))
    assert [d.code for d in check_path(tmp_path / "run.py").diagnostics] == ["DEV202"]


def test_availability_flag_fixed_twin_is_silent():
    assert _src_codes(_MIC_FIXED + _FLAG_SCRIPT) == []


def test_flag_from_the_command_line_stays_unknown():
    script = _FLAG_SCRIPT.replace("use_gpu = True if torch.cuda.is_available() else False",
                                  "import sys\n    use_gpu = '--gpu' in sys.argv")
    assert _src_codes(_MIC + script) == []
