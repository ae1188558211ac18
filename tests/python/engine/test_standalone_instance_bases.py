"""A method checked on its own runs on an instance its class's `__init__` made only when the class cannot be an
nn.Module. A class whose base this run cannot read (`class Model(PocketTTSModel)` imported from a file outside the
run, transformers' modular files checked one by one) may be a library model's subclass: its submodules are where
the caller put the model, so `self.embed(x_on_device)` in a public method nobody in the file calls says nothing."""

from __future__ import annotations

import textwrap

from devflow.api import check_source

_MODULAR = """
    import torch
    from torch import nn

    from ..pocket_tts.modeling_pocket_tts import PocketTTSModel


    class PhononModel(PocketTTSModel):
        def __init__(self, config):
            super().__init__(config)
            self.speakers_embed = nn.Embedding(config.vocab, config.dim)

        def condition(self, device: torch.device) -> torch.Tensor:
            speakers = torch.full((), 3, dtype=torch.long, device=device)
            return self.speakers_embed(speakers)
"""


def _codes(src: str) -> list[str]:
    return [d.code for d in check_source(textwrap.dedent(src), "transformers/models/phonon/modular_phonon.py").diagnostics]


def test_a_subclass_of_an_unread_base_is_not_run_on_its_init_instance():
    assert _codes(_MODULAR) == []


def test_a_plain_class_still_runs_on_its_init_instance():
    src = _MODULAR.replace("from ..pocket_tts.modeling_pocket_tts import PocketTTSModel\n", "").replace(
        "class PhononModel(PocketTTSModel):", "class PhononModel:").replace("        super().__init__(config)\n", "") \
        .replace("def condition(self, device: torch.device)", "def condition(self)") \
        .replace("device=device)", 'device="cuda")')
    assert _codes(src) == ["DEV106"]
