"""One of two lists or tuples is a sequence of either's elements. Where a name may be either of two sequences (a
loop over `(tps, fps)`, a comprehension `torch.cat(s) for s in (tps, fps)`, `xs if c else ys`), each element it
holds is one of the two's elements: the join of their element values, so a device both agree on is kept (the cpu
statistics of segmentation_models.pytorch's `get_stats`, gathered into per-statistic lists and concatenated one
list at a time before an NCCL all-reduce). Elements that disagree, or are unknown, join to what the element join
gives (an unknown device stays unknown)."""

from __future__ import annotations

from devflow.analysis.values import Obj, Val

_SEQUENCES = ("list", "tuple")


def joined_sequence(a: Val, b: Val, elem_of, join) -> Val | None:
    """A list whose element is the join of the elements of `a` and `b`, both lists / tuples; else None."""
    if not (a.kind == b.kind == "obj" and a.obj is not None and b.obj is not None
            and a.obj.kind in _SEQUENCES and b.obj.kind in _SEQUENCES):
        return None
    ea = a.elem if a.elem is not None else elem_of(a.obj)
    eb = b.elem if b.elem is not None else elem_of(b.obj)
    out = Obj("list")
    out.joined = True  # type: ignore[attr-defined]  # (a new list standing for either: a store into it changes neither)
    return Val("obj", obj=out, elem=join(ea, eb))


def is_joined_sequence(v: Val) -> bool:
    """`v` stands for one of two sequences (`joined_sequence`): a mutation must go to the sequences themselves."""
    return v.kind == "obj" and v.obj is not None and getattr(v.obj, "joined", False)
