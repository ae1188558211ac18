"""Semantics found missing on unseen real cases, batch BJ (tests/fixtures/engine/unseen/bj_*): training
machinery and multi-GPU (resume, checkpoints, AMP, DDP / DataParallel, Fabric).

- A GradScaler kept on an object (`self.scaler = torch.cuda.amp.GradScaler()` in `__init__`, used in
  `optimizer_step`) belongs to the object: whether its state is saved (`self.scaler.state_dict()`) or restored
  (`self.scaler.load_state_dict(...)`) is decided over all the methods of the class. A checkpoint written with
  `torch.save({... .state_dict() ...})` in a method of a class whose scaler is never saved, and an optimizer
  member (`self.optimizer = torch.optim.X(...)`) resumed with `load_state_dict(ckpt[...])` in a class whose
  scaler is never restored, restart the loss scale on every resume (DEV402; ConfLUNet's TrainingPipeline).
  An optimizer member built by an unknown factory is not taken as an optimizer (unknown stays silent)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- a GradScaler member of a trainer class ------------------------------------------------------------------

_PIPELINE = """
    import os
    import torch
    import torch.nn as nn


    class TrainingPipeline:
        def __init__(self, path):
            self.path = path
            self.model = nn.Linear(4, 4).cuda()
            self.optimizer = torch.optim.Adam(self.model.parameters())
            self.scaler = torch.cuda.amp.GradScaler()
            self.resume()

        def resume(self):
            if os.path.exists(self.path):
                checkpoint = torch.load(self.path)
                self.model.load_state_dict(checkpoint["state_dict"])
                self.optimizer.load_state_dict(checkpoint["optimizer"])
                {RESTORE}

        def optimizer_step(self, loss):
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()

        def save_checkpoint(self):
            torch.save({"state_dict": self.model.state_dict(), "optimizer": self.optimizer.state_dict(){SAVE}},
                       self.path)
"""


def _pipeline(restore: str = "pass", save: str = "") -> str:
    return _PIPELINE.replace("{RESTORE}", restore).replace("{SAVE}", save)


def test_member_scaler_neither_saved_nor_restored():
    assert _codes(_pipeline()) == [(19, "DEV402"), (28, "DEV402")]


def test_member_scaler_saved_but_not_restored():
    assert _codes(_pipeline(save=', "scaler": self.scaler.state_dict()')) == [(19, "DEV402")]


def test_member_scaler_saved_and_restored_is_silent():
    assert _codes(_pipeline('self.scaler.load_state_dict(checkpoint["scaler"])',
                            ', "scaler": self.scaler.state_dict()')) == []


def test_renamed_members_and_receiver():
    src = _pipeline().replace("self.", "trainer.").replace("(self", "(trainer") \
        .replace("self.scaler", "trainer.grad_scaler").replace("trainer.scaler", "trainer.grad_scaler") \
        .replace("trainer.optimizer", "trainer.opt")
    assert _codes(src) == [(19, "DEV402"), (28, "DEV402")]


def test_scaler_built_in_a_helper_method_of_the_class():
    src = _pipeline().replace("self.scaler = torch.cuda.amp.GradScaler()\n", "self.setup_amp()\n") + textwrap.indent(
        textwrap.dedent("""
        def setup_amp(self):
            self.scaler = torch.amp.GradScaler("cuda")
        """), "        ")
    assert _codes(src) == [(19, "DEV402"), (28, "DEV402")]


def test_optimizer_member_from_an_unknown_factory_is_not_an_optimizer():
    src = _pipeline().replace("torch.optim.Adam(self.model.parameters())", "build_optimizer(self.model)")
    assert _codes(src) == [(28, "DEV402")]


def test_class_without_a_scaler_is_silent():
    assert _codes(_pipeline().replace("self.scaler = torch.cuda.amp.GradScaler()\n", "")
                  .replace("self.scaler.scale(loss).backward()", "loss.backward()")
                  .replace("self.scaler.step(self.optimizer)", "self.optimizer.step()")
                  .replace("self.scaler.update()", "pass")) == []


def test_scaler_of_another_class_does_not_count():
    src = textwrap.dedent(_pipeline()) + textwrap.dedent("""
        class Other:
            def __init__(self):
                self.scaler = torch.cuda.amp.GradScaler()

            def state(self):
                return {"scaler": self.scaler.state_dict()}

            def load(self, ck):
                self.scaler.load_state_dict(ck["scaler"])
        """)
    assert _codes(src) == [(19, "DEV402"), (28, "DEV402")]


def test_trainer_subclass_in_another_file(tmp_path: Path):
    (tmp_path / "trainer.py").write_text(textwrap.dedent(_pipeline()))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        from trainer import TrainingPipeline


        class SemanticTrainer(TrainingPipeline):
            pass


        if __name__ == "__main__":
            SemanticTrainer("ckpt.pth")
        """))
    got = sorted((f, d.span.line, d.code) for f in ("trainer.py", "run.py")
                 for d in check_path(str(tmp_path / f)).diagnostics)
    assert got == [("trainer.py", 19, "DEV402"), ("trainer.py", 28, "DEV402")]
