"""Lightning Fabric's module setup (generated from lightning: the Fabric methods reaching `_move_model_to_device`,
`setup` and `setup_module`, each skipped by `move_to_device=False`; the `device` property; the `accelerator`
parameter). `fabric.setup(model, *optimizers)` moves the model to the Fabric's device as `.to()` does and leaves
the optimizers' state where it is: an optimizer that stepped on the cpu before the setup keeps cpu state, and its
next step on the moved parameters mixes devices (DEV304, Lightning-AI/pytorch-lightning#19225). What setup gives
back is what it was given; a cpu input meets the moved model; `Fabric(accelerator="cpu")` moves nothing."""

from __future__ import annotations

import textwrap

from devflow.api import check_source


def _found(src: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics)


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


_STEP_BEFORE_SETUP = """
    import torch
    from lightning import Fabric
    from torch import nn
    from torch.optim import AdamW


    def main():
        m = nn.Linear(10, 1)
        optimizer = AdamW(m.parameters())
        m(torch.randn(1, 10)).backward()
        optimizer.step()
        fabric = Fabric(ACC)
        fabric.launch()
        m, optimizer = fabric.SETUP
        x = torch.randn(1, 10, device=fabric.device)
        fabric.backward(m(x).sum())
        optimizer.step()


    if __name__ == "__main__":
        main()
"""


def _case(acc: str = "", setup: str = "setup(m, optimizer)") -> str:
    return _STEP_BEFORE_SETUP.replace("ACC", acc).replace("SETUP", setup)


def test_a_step_before_setup_leaves_the_state_on_the_cpu():
    src = _case()
    assert _found(src) == [(_line(src, "    optimizer.step()"), "DEV304")]
    assert "moved by `fabric.setup(m, optimizer)`" in check_source(textwrap.dedent(src), "t.py").diagnostics[0].message


def test_on_a_gpu_accelerator_named_or_chosen():
    for acc in ('accelerator="cuda"', 'accelerator="gpu", devices=1', 'accelerator="auto"'):
        src = _case(acc)
        assert _found(src) == [(_line(src, "    optimizer.step()"), "DEV304")], acc


def test_the_optimizer_built_after_setup_is_silent():
    src = _case().replace("""        optimizer = AdamW(m.parameters())
        m(torch.randn(1, 10)).backward()
        optimizer.step()
""", "").replace("m, optimizer = fabric.setup(m, optimizer)",
                 "m = fabric.setup(m)\n    optimizer = fabric.setup_optimizers(AdamW(m.parameters()))")
    assert _found(src) == []


def test_no_move_is_silent():
    assert _found(_case('accelerator="cpu"')) == []
    assert _found(_case(setup="setup(m, optimizer, move_to_device=False)").replace(
        "torch.randn(1, 10, device=fabric.device)", "torch.randn(1, 10)")) == []


def test_a_move_chosen_at_run_time_is_silent():
    cli = "import argparse\n    args = argparse.ArgumentParser().parse_args()\n    "
    src = _case(setup="setup(m, optimizer, move_to_device=args.move)").replace("    m = nn.Linear", cli + "m = nn.Linear")
    assert _found(src) == []
    src = _case("accelerator=args.accelerator").replace("    m = nn.Linear", cli + "m = nn.Linear")
    assert _found(src) == []


def test_a_default_argument_is_the_value_used():
    src = _case(setup="setup(m, optimizer, move_to_device=move)").replace("def main():", "def main(move=True):")
    assert _found(src) == [(_line(src, "    optimizer.step()"), "DEV304")]


def test_inside_a_trainer_class_with_a_renamed_fabric():
    src = """
        import torch
        from lightning.fabric import Fabric
        from torch import nn


        class Trainer:
            def __init__(self, model):
                self.engine = Fabric(accelerator="cuda", devices=1)
                self.model = model
                self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)

            def warm_up(self):
                self.model(torch.randn(2, 8)).sum().backward()
                self.opt.step()

            def prepare(self):
                self.model, self.opt = self.engine.setup(self.model, self.opt)

            def fit(self):
                for _ in range(3):
                    x = torch.randn(2, 8, device=self.engine.device)
                    self.engine.backward(self.model(x).sum())
                    self.opt.step()


        if __name__ == "__main__":
            t = Trainer(nn.Linear(8, 1))
            t.warm_up()
            t.prepare()
            t.fit()
    """
    found = _found(src)
    assert (_line(src, "        self.opt.step()"), "DEV304") in found


def test_setup_module_moves_the_model_and_a_cpu_input_meets_it():
    src = """
        import torch
        from lightning.fabric import Fabric
        from torch import nn


        def run():
            fab = Fabric(accelerator="cuda", devices=1)
            model = fab.setup_module(nn.Linear(10, 1))
            x = torch.randn(4, 10)
            return model(x)


        if __name__ == "__main__":
            run()
    """
    assert _found(src) == [(_line(src, "x = torch.randn(4, 10)"), "DEV201")]
    d = check_source(textwrap.dedent(src), "t.py").diagnostics[0]
    assert "`fab.device`" in d.message
    assert _found(src.replace("torch.randn(4, 10)", "torch.randn(4, 10, device=fab.device)")) == []


def test_a_module_added_after_setup():
    src = """
        import torch
        from lightning.fabric import Fabric
        from torch import nn


        def run():
            fabric = Fabric(accelerator="cuda", devices=1)
            model = fabric.setup_module(nn.Sequential(nn.Linear(10, 4)))
            model.head = nn.Linear(4, 1)
            x = torch.randn(4, 10, device=fabric.device)
            return model.head(model(x))


        if __name__ == "__main__":
            run()
    """
    assert _found(src) == [(_line(src, "model.head = nn.Linear"), "DEV101")]


def test_an_unknown_accelerator_leaves_the_model_unknown():
    """lit-llama's evaluate scripts: `Fabric(accelerator=accelerator)` from the command line, the model set up on it
    and inputs made by a helper on `fabric.device`: where either is is not known, so nothing is said."""
    src = """
        import torch
        import lightning as L
        from torch import nn


        def encode(values, device=None):
            return torch.tensor(values, device=device)


        def main(*, accelerator: str = "auto"):
            fabric = L.Fabric(accelerator=accelerator, devices=1)
            model = nn.Linear(3, 1)
            model = fabric.setup_module(model)
            inp = encode([[1.0, 2.0, 3.0]], device=fabric.device)
            return model(inp)


        if __name__ == "__main__":
            from jsonargparse import CLI
            CLI(main)
    """
    assert _found(src) == []
