"""The project's Lightning callbacks (`Trainer(callbacks=[...])`) run with the module on its device: their hooks
(generated from the lightning release: the Callback hooks taking `pl_module` that `Trainer._run` calls after
`self.strategy.setup(self)` moves the module; `setup`, `on_load_checkpoint`, `on_fit_end` and `teardown` are
called before that move or after the teardown) get `pl_module` (also `trainer.lightning_module`) there, and
the batch hooks the moved batch. A tensor such a hook builds without device= and feeds the module is a mix
(DEV201 where it is built).

Variations: a sampling callback in another file, a batch hook, a helper one call deeper, the module reached
as `trainer.lightning_module`. Silent neighbours: the noise built on `pl_module.device`, a `setup` hook (it runs
before the move), a callback never given to the Trainer."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


MODEL = """
    import lightning as L
    import torch
    from torch import nn


    class Generator(L.LightningModule):
        def __init__(self, latent_dim=64):
            super().__init__()
            self.latent_dim = latent_dim
            self.net = nn.Sequential(nn.Linear(latent_dim, 256), nn.ReLU(), nn.Linear(256, 784))

        def forward(self, z):
            return self.net(z)

        def training_step(self, batch, batch_idx):
            x, _ = batch
            z = torch.randn(x.size(0), self.latent_dim, device=self.device)
            return ((self(z) - x.view(x.size(0), -1)) ** 2).mean()

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)
"""

CALLBACK = """
    import torch
    from lightning.pytorch.callbacks import Callback


    class SampleImages(Callback):
        def __init__(self, n=16):
            self.n = n

        def {hook}(self, trainer, pl_module{extra}):
            {body}
            with torch.no_grad():
                images = {module}(z)
            return images
"""

TRAIN = """
    import lightning as L

    from callbacks import SampleImages
    from model import Generator


    def main(loader):
        model = Generator()
        trainer = L.Trainer(accelerator="gpu", devices=1, max_epochs=5, callbacks=[{callbacks}])
        trainer.fit(model, loader)


    if __name__ == "__main__":
        main(None)
"""

CPU_NOISE = "z = torch.randn(self.n, pl_module.latent_dim)"


def _files(hook="on_train_epoch_end", extra="", body=CPU_NOISE, module="pl_module", callbacks="SampleImages()"):
    return {"model.py": MODEL,
            "callbacks.py": CALLBACK.format(hook=hook, extra=extra, body=body, module=module),
            "train.py": TRAIN.format(callbacks=callbacks)}


def test_noise_built_on_the_cpu_in_an_epoch_hook(tmp_path):
    _project(tmp_path, _files())
    assert _codes(tmp_path, "callbacks.py") == [(10, "DEV201")]


def test_a_batch_hook_and_the_module_from_the_trainer(tmp_path):
    _project(tmp_path, _files(hook="on_train_batch_end", extra=", outputs, batch, batch_idx",
                              module="trainer.lightning_module"))
    assert _codes(tmp_path, "callbacks.py") == [(10, "DEV201")]


def test_the_noise_from_a_helper_one_call_deeper(tmp_path):
    files = _files(body="z = self.noise(pl_module.latent_dim)")
    files["callbacks.py"] = files["callbacks.py"].replace("    def __init__(self, n=16):", """    def noise(self, dim):
            return torch.randn(self.n, dim)

        def __init__(self, n=16):""")
    _project(tmp_path, files)
    # reported where the helper's cpu noise enters the hook (the engine anchors a returned value at its call)
    assert _codes(tmp_path, "callbacks.py") == [(13, "DEV202")]


def test_noise_on_the_module_device_is_silent(tmp_path):
    _project(tmp_path, _files(body="z = torch.randn(self.n, pl_module.latent_dim, device=pl_module.device)"))
    assert _codes(tmp_path, "callbacks.py") == []


def test_a_setup_hook_runs_before_the_move_and_is_silent(tmp_path):
    _project(tmp_path, _files(hook="setup", extra=", stage"))
    assert _codes(tmp_path, "callbacks.py") == []


def test_a_callback_not_given_to_the_trainer_is_silent(tmp_path):
    _project(tmp_path, _files(callbacks=""))
    assert _codes(tmp_path, "callbacks.py") == []
