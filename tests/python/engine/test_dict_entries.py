"""Dicts whose keys are all known: `"k" in d` is decided and a comprehension over `d.items()` runs
once per entry, so each entry keeps its own device. Anything that may change the keys (a computed
key, `del`, `update`, `pop`) makes them unknown again, and the engine stays silent."""

from __future__ import annotations

import pytest

from devflow.engine import analyze

HEAD = """import torch
dev = torch.device("cuda")
batch = {"img": torch.rand(4, 3), "mask": torch.rand(4, 3, device=dev) > 0.5}
idx = torch.nonzero(batch["mask"])[:, 0]
"""


def codes(src):
    return [(d.code, d.span.line) for d in analyze(src).diagnostics]


def test_comprehension_runs_per_entry():
    src = HEAD + "picked = {k: v[idx] for k, v in batch.items()}\n"
    assert codes(src) == [("DEV204", 5)]


def test_filtered_entry_is_not_run():
    src = HEAD + "picked = {k: v[idx] for k, v in batch.items() if k != 'img'}\n"
    assert codes(src) == []


def test_each_entry_keeps_its_device_after_the_comprehension():
    src = HEAD + ("moved = {k: v.to(dev) for k, v in batch.items() if k == 'img'}\n"
                  "y = moved['img'] + batch['mask']\n")
    assert codes(src) == []


def test_membership_of_a_known_key_picks_the_branch():
    src = HEAD + ("if 'mask' in batch:\n    sel = idx\nelse:\n    sel = torch.arange(4)\n"
                  "out = batch['img'][sel]\n")
    assert codes(src) == [("DEV204", 9)]


@pytest.mark.parametrize("change", ["del batch['mask']", "batch.update(extra)", "batch.pop('mask')",
                                    "batch[name] = None"])
def test_keys_changed_are_unknown(change):
    # `extra` of keys not known (an update with a known dict keeps the keys known: test_unseen_bs.py)
    src = HEAD + ("import json\nextra, name = json.loads(input()), input()\n" + change + "\n"
                  "if 'mask' in batch:\n    sel = idx\nelse:\n    sel = torch.arange(4)\n"
                  "out = batch['img'][sel]\n")
    assert codes(src) == []


def test_cpu_index_into_a_device_tensor_is_allowed():
    src = ("import torch\nx = torch.rand(5, device='cuda')\ni = torch.nonzero(x.cpu() > 0.5)[:, 0]\n"
           "d = {'x': x}\ny = {k: v[i] for k, v in d.items()}\n")
    assert codes(src) == []
