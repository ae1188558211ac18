"""Plain records the code builds its configuration and batches from: `types.SimpleNamespace(**kw)`
(an object whose attributes are its keywords) and `collections.namedtuple` classes (tuples whose
fields are also attributes), so a device or a tensor stored in one is read back where it is used.
And the world the analysis runs in: a machine with CUDA (`torch.cuda.is_available()` is True).
"""

from __future__ import annotations

from devflow.analysis.interp.frames import span_of
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val

# The text that marks `torch.cuda.is_available()`'s value: a conditional expression on it still
# yields the symbolic "accelerator if available" device (its messages and fixes name the variable).
CUDA_AVAILABLE = "torch.cuda.is_available()"
_NEW_RECORD = "collections.namedtuple()"  # a namedtuple class, called: one of its instances


class Records:
    """SimpleNamespace, namedtuple, and CUDA's availability."""

    def record_call(self, node, q: str, args, kwargs) -> Val | None:
        if q == "torch.cuda.is_available":
            return Val("const", const=True, text=CUDA_AVAILABLE)
        if q == "types.SimpleNamespace" and not args:
            if "__opaque__" in kwargs:
                return UNKNOWN
            return Val("obj", obj=Obj("namespace", qual=q, attrs=dict(kwargs)))
        if q in ("collections.namedtuple", "typing.NamedTuple") and len(args) >= 2:
            fields = _field_names(args[1])
            if fields is None or "__opaque__" in kwargs:
                return UNKNOWN
            return Val("partial", func=Val("qual", const=_NEW_RECORD), const=([Val("const", const=tuple(fields))], {}))
        if q == _NEW_RECORD and args and args[0].kind == "const":
            fields, values = args[0].const, list(args[1:])
            if len(values) > len(fields) or "__opaque__" in kwargs:
                return UNKNOWN
            values += [kwargs.get(f, UNKNOWN) for f in fields[len(values):]]
            return Val("obj", obj=Obj("tuple", qual="namedtuple", items=values, attrs=dict(zip(fields, values))))
        return None


def _field_names(v: Val) -> list[str] | None:
    if v.kind == "const" and isinstance(v.const, str):
        return v.const.replace(",", " ").split()
    if v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple") and v.elem is None and \
            all(i.kind == "const" and isinstance(i.const, str) for i in v.obj.items):
        return [i.const for i in v.obj.items]
    return None


def as_batch(v: Val, found, node) -> Val:
    """What a loop gets from a project's data iterator (its `__iter__` yields the batches): cpu tensors in
    it are batches, fixed where the loop uses them (as a DataLoader's), not inside the iterator."""
    def tag(x: Val) -> Val:
        if x.kind == "tensor" and x.dev is not None and x.dev.is_cpu and not x.scalar and x.origin is not None:
            cls = found[1].name if found[1] is not None else "?"
            where = f" at line {node.lineno}" if node is not None else ""
            return Val("tensor", x.dev, Origin(span_of(node) if node is not None else x.origin.span,
                                               f"a batch from `{cls}.__iter__`{where}, on cpu", "batch"),
                       text=x.text, batch=x.batch)
        return x
    if v.kind == "tensor":
        return tag(v)
    if v.kind == "obj" and v.obj is not None and v.obj.kind == "tuple":
        o = v.obj
        items = [tag(i) for i in o.items]
        attrs = {k: items[o.items.index(a)] if any(a is i for i in o.items) else tag(a) for k, a in o.attrs.items()}
        return Val("obj", obj=Obj("tuple", qual=o.qual, items=items, attrs=attrs), elem=v.elem)
    return v
