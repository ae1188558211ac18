"""`Optimizer.load_state_dict(sd)` from a checkpoint mapped onto the cpu, on a project optimizer
(analysis/interp/optimizer_restore.py). torch casts the per-parameter `state` to each parameter's device but keeps
the saved `param_groups` entries as loaded: a tensor the optimizer keeps in its groups (Prodigy's running
`d_numerator`, made on the parameters' device by its first step) is on the cpu after the resume and meets the
gradients in the next `step()`. What a saved group holds is what the optimizer's own step leaves there (the
checkpoint comes from a run that stepped): DEV202 at the load, with a fix that moves the groups' tensors after it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devflow.api import check_path, check_source


_OPTIMIZER = """
    import torch


    class Prodigy(torch.optim.Optimizer):
        def __init__(self, params, lr=1.0, beta3=0.9):
            super().__init__(params, dict(lr=lr, beta3=beta3, d=1e-6))

        @torch.no_grad()
        def step(self, closure=None):
            group = self.param_groups[0]
            device = group["params"][0].device
            if "d_numerator" not in group:
                group["d_numerator"] = GROUP_TENSOR
            d_numerator = group["d_numerator"]
            d_numerator.mul_(group["beta3"])
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    d_numerator.add_(torch.dot(p.grad.flatten(), p.flatten()))
            for group in self.param_groups:
                group["d_numerator"] = d_numerator
"""

_TRAIN = """
    def main():
        device = torch.device("cuda")
        model = torch.nn.Linear(4, 2).to(device)
        opt = Prodigy(model.parameters())
        ckpt = torch.load("last.pt", MAP)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        for _ in range(10):
            x = torch.randn(8, 4, device=device)
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()


    if __name__ == "__main__":
        main()
"""


def _src(group_tensor: str = "torch.tensor([0.0], device=device)", map_location: str = 'map_location="cpu"',
         train: str = _TRAIN) -> str:
    return textwrap.dedent(_OPTIMIZER).replace("GROUP_TENSOR", group_tensor) + \
        textwrap.dedent(train).replace("MAP", map_location)


def _found(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(src, "t.py").diagnostics)


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if text in line)


def test_group_tensor_restored_on_the_cpu_meets_the_gradients():
    src = _src()
    (d,) = check_source(src, "t.py").diagnostics
    assert (d.span.line, d.code) == (_line(src, 'opt.load_state_dict('), "DEV202")
    assert "param_groups" in d.message and "d_numerator" in d.message
    assert any(r.span.line == _line(src, "d_numerator.add_(") for r in d.related)
    assert d.fix is not None and 'group["params"][0].device' in d.fix.edits[0].new_text


def test_the_fix_leaves_a_clean_program():
    src = _src()
    (d,) = check_source(src, "t.py").diagnostics
    line = _line(src, "opt.load_state_dict(")
    lines = src.splitlines()
    indent = " " * 8
    block = [indent + x for x in ("for group in opt.param_groups:", "    for key, value in group.items():",
                                  "        if torch.is_tensor(value):",
                                  '            group[key] = value.to(group["params"][0].device)')]
    fixed = "\n".join(lines[:line] + block + lines[line:]) + "\n"
    assert _found(fixed) == []


@pytest.mark.parametrize("map_location", ['map_location=device', "", 'map_location="cuda"'])
def test_a_load_onto_the_device_or_the_saving_device_is_silent(map_location):
    assert _found(_src(map_location=map_location)) == []


def test_a_group_holding_only_numbers_is_silent():
    assert _found(_src(group_tensor="0.0")) == []


def test_a_zero_dim_group_tensor_written_in_place_by_a_gpu_value_is_found_too():
    # `running_d_numerator.add_(x0_dot)`: a 0-dim cpu tensor mixes with any device as an operand, never as the
    # output of a cuda op (prodigy-plus-schedule-free#11 failed this way after an accelerate resume)
    src = _src(group_tensor="torch.tensor(0.0, device=device)")
    assert _found(src) == [(_line(src, "opt.load_state_dict("), "DEV202")]


def test_built_in_optimizer_is_silent():
    src = textwrap.dedent(_TRAIN).replace("MAP", 'map_location="cpu"').replace("Prodigy(", "torch.optim.Adam(")
    assert _found("import torch\n" + src) == []


_TRAINER_CLASS = """
    class Trainer:
        def __init__(self, cfg):
            self.device = torch.device(cfg.device)
            self.net = torch.nn.Linear(4, 2).to(self.device)
            self.optimizer = Prodigy(self.net.parameters(), lr=cfg.lr)

        def load(self, path):
            state = load_checkpoint(path)
            self.net.load_state_dict(state["net"])
            restore(self.optimizer, state)

        def fit(self, steps):
            for _ in range(steps):
                x = torch.randn(8, 4, device=self.device)
                self.net(x).sum().backward()
                self.optimizer.step()


    def load_checkpoint(path):
        return torch.load(path, map_location="cpu")


    def restore(optim, state):
        optim.load_state_dict(state["optim"])


    if __name__ == "__main__":
        import types
        trainer = Trainer(types.SimpleNamespace(device="cuda:0", lr=1.0))
        trainer.load("ckpt.pt")
        trainer.fit(100)
"""


def test_renamed_one_helper_deeper_inside_a_trainer_class():
    src = textwrap.dedent(_OPTIMIZER).replace("GROUP_TENSOR", "torch.tensor([0.0], device=device)") \
        .replace("Prodigy", "DAdapt").replace("d_numerator", "running_sum") + \
        textwrap.dedent(_TRAINER_CLASS).replace("Prodigy", "DAdapt")
    found = _found(src)
    assert found == [(_line(src, "optim.load_state_dict("), "DEV202")]


def test_split_into_files(tmp_path: Path):
    (tmp_path / "optim").mkdir()
    (tmp_path / "optim" / "__init__.py").write_text("from .prodigy import Prodigy\n")
    (tmp_path / "optim" / "prodigy.py").write_text(
        textwrap.dedent(_OPTIMIZER).replace("GROUP_TENSOR", "torch.tensor([0.0], device=device)"))
    train = "import torch\nfrom optim import Prodigy\n" + textwrap.dedent(_TRAIN).replace("MAP", 'map_location="cpu"')
    (tmp_path / "train.py").write_text(train)
    result = check_path(tmp_path / "train.py")
    found = sorted((d.span.line, d.code) for d in result.diagnostics)
    assert found == [(_line(train, "opt.load_state_dict("), "DEV202")]


# --- restored by a library: accelerate's `load_state` and Lightning's `fit(ckpt_path=...)` (generated facts:
# frameworks.json accelerate.restores and lightning.resume)

_ACCELERATE = """
    from accelerate import Accelerator


    class NetworkTrainer:
        def train(self, args):
            accelerator = Accelerator()
            network = torch.nn.Linear(4, 2)
            optimizer = Prodigy(network.parameters(), lr=args.lr)
            loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8)
            network, optimizer, loader = accelerator.prepare(network, optimizer, loader)
            if args.resume:
                accelerator.load_state(args.resume)
            for batch in loader:
                loss = network(batch).pow(2).mean()
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()


    if __name__ == "__main__":
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--resume", type=str, default=None)
        parser.add_argument("--lr", type=float, default=1.0)
        NetworkTrainer().train(parser.parse_args())
"""


def _with_optimizer(body: str, group_tensor: str = "torch.tensor([0.0], device=device)") -> str:
    return textwrap.dedent(_OPTIMIZER).replace("GROUP_TENSOR", group_tensor) + textwrap.dedent(body)


def test_accelerate_load_state_restores_the_prepared_optimizer_on_the_cpu():
    src = _with_optimizer(_ACCELERATE)
    (d,) = check_source(src, "t.py").diagnostics
    assert (d.span.line, d.code) == (_line(src, "accelerator.load_state("), "DEV202")
    assert "accelerator.load_state()" in d.message
    assert d.fix is not None and "for group in optimizer.param_groups:" in d.fix.edits[0].new_text


@pytest.mark.parametrize("change", [("accelerator.load_state(args.resume)", "pass"),  # no resume
                                    ("Prodigy(network.parameters()", "torch.optim.AdamW(network.parameters()")])
def test_accelerate_without_a_resume_or_with_a_built_in_optimizer_is_silent(change):
    assert _found(_with_optimizer(_ACCELERATE).replace(*change)) == []


def test_accelerate_group_of_numbers_is_silent():
    assert _found(_with_optimizer(_ACCELERATE, group_tensor="0.0")) == []


_LIGHTNING = """
    import lightning.pytorch as pl


    class LitModel(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 2)

        def training_step(self, batch, batch_idx):
            return self.net(batch).pow(2).mean()

        def configure_optimizers(self):
            RETURN


    def run(resume_from):
        trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=3)
        loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8)
        trainer.fit(LitModel(), loader, FIT)


    if __name__ == "__main__":
        run("last.ckpt")
"""


def _lightning(ret: str = "return Prodigy(self.parameters())", fit: str = "ckpt_path=resume_from") -> str:
    return _with_optimizer(_LIGHTNING.replace("RETURN", ret).replace("FIT", fit))


@pytest.mark.parametrize("ret", [
    "return Prodigy(self.parameters())",
    "return [Prodigy(self.parameters())]",
    "opt = Prodigy(self.parameters())\n            return [opt], [torch.optim.lr_scheduler.StepLR(opt, 10)]",
    'opt = Prodigy(self.parameters())\n            return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 10)}',
])
def test_lightning_fit_with_ckpt_path_restores_configure_optimizers_on_the_cpu(ret):
    src = _lightning(ret)
    (d,) = check_source(src, "t.py").diagnostics
    assert (d.span.line, d.code) == (_line(src, "trainer.fit("), "DEV202")
    assert "param_groups" in d.message and d.fix is None  # the restore is inside the Trainer


@pytest.mark.parametrize("fit", ["", "ckpt_path=None"])
def test_lightning_fit_without_a_checkpoint_is_silent(fit):
    assert _found(_lightning(fit=fit)) == []


def test_lightning_split_into_files_one_helper_deeper(tmp_path: Path):
    (tmp_path / "optim.py").write_text(textwrap.dedent(_OPTIMIZER).replace("GROUP_TENSOR", "torch.tensor([0.0], device=device)")
                                       .replace("Prodigy", "DAdaptSGD"))
    (tmp_path / "model.py").write_text(textwrap.dedent("""\
        import lightning.pytorch as pl
        import torch

        from optim import DAdaptSGD


        def build_optimizer(module, cfg):
            return DAdaptSGD(module.parameters(), lr=cfg["lr"])


        class Classifier(pl.LightningModule):
            def __init__(self, cfg):
                super().__init__()
                self.cfg = cfg
                self.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

            def training_step(self, batch, batch_idx):
                x, y = batch
                return torch.nn.functional.cross_entropy(self.body(x), y)

            def configure_optimizers(self):
                return build_optimizer(self, self.cfg)
        """))
    train = textwrap.dedent("""\
        import lightning.pytorch as pl
        import torch

        from model import Classifier


        def main(ckpt):
            data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
            trainer = pl.Trainer(accelerator="gpu", devices=1)
            trainer.fit(Classifier({"lr": 1.0}), torch.utils.data.DataLoader(data, batch_size=8), ckpt_path=ckpt)


        if __name__ == "__main__":
            main("runs/last.ckpt")
        """)
    (tmp_path / "train.py").write_text(train)
    found = sorted((d.span.line, d.code) for d in check_path(tmp_path / "train.py").diagnostics)
    assert found == [(_line(train, "trainer.fit("), "DEV202")]


_TIMM = """
    import argparse

    from timm.models import resume_checkpoint


    def main(args):
        model = torch.nn.Linear(4, 2).cuda()
        optimizer = Prodigy(model.parameters())
        if args.resume:
            RESUME
        for _ in range(3):
            model(torch.randn(8, 4).cuda()).sum().backward()
            optimizer.step()


    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--resume", default="")
        main(p.parse_args())
"""


@pytest.mark.parametrize("resume", ["resume_epoch = resume_checkpoint(model, args.resume, optimizer=optimizer)",
                                    "resume_checkpoint(model, args.resume, optimizer)"])
def test_timm_resume_checkpoint_restores_the_optimizer_on_the_cpu(resume):
    src = _with_optimizer(_TIMM.replace("RESUME", resume))
    (d,) = check_source(src, "t.py").diagnostics
    assert (d.span.line, d.code) == (_line(src, "resume_checkpoint(model"), "DEV202")
    assert d.fix is not None and "for group in optimizer.param_groups:" in d.fix.edits[0].new_text


@pytest.mark.parametrize("resume", ["resume_checkpoint(model, args.resume)",
                                    "resume_checkpoint(model, args.resume, optimizer=torch.optim.SGD(model.parameters(), 0.1))"])
def test_timm_resume_without_a_project_optimizer_is_silent(resume):
    assert _found(_with_optimizer(_TIMM.replace("RESUME", resume))) == []


# --- objects in the per-parameter state: `load_state_dict` casts tensors (in dicts, lists, tuples too), not objects

_OBJECT_STATE = """
    import torch


    class Diagonal:
        def __init__(self, param):
            self.acc = torch.zeros_like(param)

        def update(self, grad):
            self.acc.addcmul_(grad, grad, value=1)
            return grad / self.acc.sqrt().add_(1e-10)


    class Kron(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-2):
            super().__init__(params, dict(lr=lr))
            for group in self.param_groups:
                for p in group["params"]:
                    self.state[p]["pre"] = HELD
                    self.state[p]["momentum"] = torch.zeros_like(p)

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    direction = state["pre"].update(p.grad)
                    state["momentum"].mul_(0.9).add_(direction)
                    p.add_(state["momentum"], alpha=-group["lr"])


    class Runner:
        def __init__(self, device):
            self.device = device
            self.model = torch.nn.Linear(4, 2).to(device)
            self.opt = Kron(self.model.parameters())

        def resume(self, path):
            ckpt = torch.load(path, MAP)
            self.model.load_state_dict(ckpt["model"])
            self.opt.load_state_dict(ckpt["opt"])

        def run(self):
            self.model(torch.randn(3, 4, device=self.device)).sum().backward()
            self.opt.step()


    if __name__ == "__main__":
        runner = Runner(torch.device("cuda"))
        runner.resume("last.pt")
        runner.run()
"""


def _objects(held: str = "Diagonal(p)", map_location: str = 'map_location="cpu"') -> str:
    return textwrap.dedent(_OBJECT_STATE).replace("HELD", held).replace("MAP", map_location)


def test_an_object_in_the_state_keeps_its_tensors_on_the_cpu_in_a_runner_class():
    src = _objects()
    (d,) = check_source(src, "t.py").diagnostics
    assert (d.span.line, d.code) == (_line(src, "self.opt.load_state_dict("), "DEV202")
    assert "an object in the state" in d.message and d.fix is None


@pytest.mark.parametrize("held, map_location", [("torch.zeros_like(p)", 'map_location="cpu"'),  # a tensor: cast
                                                ('{"acc": torch.zeros_like(p)}', 'map_location="cpu"'),
                                                ("Diagonal(p)", "map_location=self.device")])
def test_state_tensors_cast_by_the_load_or_a_load_onto_the_device_are_silent(held, map_location):
    src = _objects(held, map_location)
    if not held.startswith("Diagonal"):
        src = src.replace('state["pre"].update(p.grad)', "p.grad")
    assert _found(src) == []


def test_the_discarded_step_leaves_the_real_steps_findings():
    # the step run to learn what a checkpoint holds reports nothing, and hides nothing the real steps report:
    # state made in the step without device= (DEV201) is found as without a resume
    src = _src().replace('        for group in self.param_groups:\n            group["d_numerator"] = d_numerator\n',
                         '        for group in self.param_groups:\n            group["d_numerator"] = d_numerator\n'
                         '            for p in group["params"]:\n'
                         '                self.state[p]["avg"] = self.state[p].get("avg", torch.zeros(p.shape))\n'
                         '                self.state[p]["avg"].add_(p.grad)\n')
    found = _found(src)
    assert (_line(src, 'self.state[p]["avg"] = '), "DEV201") in found
    assert (_line(src, "opt.load_state_dict("), "DEV202") in found
