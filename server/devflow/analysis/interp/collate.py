"""torch.utils.data.default_collate of a list of samples the code built.

`default_collate([{"image": img, "mask": m}, ...])` is a dict with the first sample's keys whose values stack
the samples' values (`torch.stack`: on their device) and turn Python numbers into a cpu tensor. A custom loader
that collates its dataset items itself (nerfstudio's CacheDataloader) keeps each entry's device, entry by entry;
without this the whole batch was unknown.
"""

from __future__ import annotations

from devflow.analysis.lattice import CPU
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val

COLLATE_FUNCTIONS = frozenset({"utils.data.default_collate", "utils.data._utils.collate.default_collate",
                               "utils.data.dataloader.default_collate"})


def _samples(v: Val) -> list[Val] | None:
    if v.kind != "obj" or v.obj is None or v.obj.kind not in ("list", "tuple"):
        return None
    items = list(v.obj.items) or ([v.elem] if v.elem is not None else [])
    return items or None


def collated_samples(batch: Val, join, origin: Origin) -> Val | None:
    """The collated dict of a list of dicts with known keys, or None when the samples are not such dicts."""
    samples = _samples(batch)
    if not samples or not all(s.kind == "obj" and s.obj is not None and s.obj.kind == "dict" and s.obj.keys
                              for s in samples):
        return None
    out = Obj("dict")
    for key in samples[0].obj.keys:
        vals = [s.obj.keys.get(key) for s in samples]
        if any(v is None for v in vals):
            return None  # samples with other keys: default_collate raises, nothing to follow
        if all(v.kind in ("const", "number") for v in vals):
            out.keys[key] = Val("tensor", CPU, origin)  # numbers become a cpu tensor
            continue
        if not all(v.kind == "tensor" for v in vals):
            out.keys[key] = UNKNOWN
            continue
        joined = vals[0]
        for v in vals[1:]:
            joined = join(joined, v)
        out.keys[key] = Val("tensor", joined.dev, joined.origin)  # stacked: one more dimension, never 0-dim
    return Val("obj", obj=out)
