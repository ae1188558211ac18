"""Plain records the code builds its configuration and batches from: `types.SimpleNamespace(**kw)` and
`argparse.Namespace(**kw)` (objects whose attributes are their keywords), `collections.namedtuple` classes (tuples whose
fields are also attributes) and config libraries' attribute dicts (yacs `CfgNode`, `EasyDict`), so a
device or a tensor stored in one is read back where it is used. A config the code merges (from a file,
the command line) holds its defaults no longer: a default that names an accelerator becomes the symbolic
device of that key (whatever the file says, the code means it as the accelerator, as `--device` does)
and the other defaults become unknown.
And the world the analysis runs in: a machine with CUDA (`torch.cuda.is_available()` is True).
"""

from __future__ import annotations

from devflow.analysis import framework_api as FW
from devflow.analysis.interp.frames import span_of
from devflow.analysis.lattice import Dev, concrete
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val

# dict methods that only read: calling one leaves a config as it was
_DICT_READS = frozenset(("get", "keys", "values", "items", "copy", "__contains__", "__getitem__", "__len__", "__iter__"))

# The text that marks `torch.cuda.is_available()`'s value: a conditional expression on it still
# yields the symbolic "accelerator if available" device (its messages and fixes name the variable).
CUDA_AVAILABLE = "torch.cuda.is_available()"
_NEW_RECORD = "collections.namedtuple()"  # a namedtuple class, called: one of its instances
# Plain attribute records: `Namespace(**kw)` sets each keyword as an attribute, like SimpleNamespace (argparse's
# is the object parse_args returns, also built by hand for a config: `config = argparse.Namespace(); config.device = d`)
_NAMESPACES = ("types.SimpleNamespace", "argparse.Namespace")


def availability_flag(test: Val, a: Val, b: Val) -> Val | None:
    """`True if torch.cuda.is_available() else False` (TSLib's `args.use_gpu`) is CUDA's availability itself
    (or its negation, with the constants swapped): the flag a later `if args.use_gpu:` tests, as
    `torch.cuda.is_available()` is."""
    if test.kind == "const" and test.text == CUDA_AVAILABLE and a.kind == b.kind == "const" \
            and type(a.const) is bool and type(b.const) is bool and a.const != b.const:
        return Val("const", const=a.const, text=CUDA_AVAILABLE)
    return None


class Records:
    """SimpleNamespace, namedtuple, and CUDA's availability."""

    def record_call(self, node, q: str, args, kwargs) -> Val | None:
        if q == "torch.cuda.is_available":
            return Val("const", const=True, text=CUDA_AVAILABLE)
        if q in _NAMESPACES and not args:
            if "__opaque__" in kwargs:
                return UNKNOWN
            return Val("obj", obj=Obj("namespace", qual=q, attrs=dict(kwargs)))
        if q in FW.ATTRIBUTE_DICTS:
            return _attribute_dict(q, args, kwargs)
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


    def config_method(self, node, cfg: Val, name: str, args) -> Val:
        """A method of a config's attribute dict: a read gives the entry; any other call (`merge_from_file`,
        `update`, `merge_from_list(argv)`) may override every entry."""
        obj = cfg.obj
        if name == "get" and args and args[0].kind == "const":
            return obj.attrs.get(args[0].const, args[1] if len(args) > 1 else Val("const", const=None))
        if name not in _DICT_READS:
            _overridden(obj, self.text(node.func.value), Origin(span_of(node), f"a default the code may override "
                                                                f"(`{self.text(node)}` at line {node.lineno})"))
        return UNKNOWN


def is_attribute_dict(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind == "namespace" and v.obj.qual in FW.ATTRIBUTE_DICTS


def _attribute_dict(q: str, args, kwargs) -> Val:
    """`CfgNode()`, `EasyDict(d)`, `Dict(a=1)`: the entries given, nested dicts made attribute dicts too."""
    if "__opaque__" in kwargs or len(args) > 1:
        return UNKNOWN
    entries = dict(kwargs)
    if args:
        d = args[0]
        if not (d.kind == "obj" and d.obj is not None and d.obj.kind == "dict" and getattr(d.obj, "exact", False)
                and all(isinstance(k, str) for k in d.obj.keys)):
            return UNKNOWN
        entries = {**d.obj.keys, **entries}
    for k, v in entries.items():
        if v.kind == "obj" and v.obj is not None and v.obj.kind == "dict":
            entries[k] = _attribute_dict(q, [v], {})
    return Val("obj", obj=Obj("namespace", qual=q, attrs=entries))


def _overridden(obj: Obj, path: str, origin: Origin) -> None:
    """Every entry of a merged config, nested ones too: a default naming an accelerator is now that key's
    symbolic accelerator; other plain values are unknown; tensors and modules stay what they are."""
    for k, v in list(obj.attrs.items()):
        dev = concrete(v.const) if v.kind == "const" and isinstance(v.const, str) else \
            v.dev if v.kind == "device" and v.dev is not None and v.dev.kind != "sym" else None
        if dev is not None and dev.known and not dev.is_cpu:
            obj.attrs[k] = Val("device", Dev("sym", key=("config", id(obj), k), text=f"{path}.{k}", accel=True), origin)
        elif is_attribute_dict(v):
            _overridden(v.obj, f"{path}.{k}", origin)
        elif v.kind == "const" or v.kind == "number" or (v.kind == "device" and (v.dev is None or v.dev.kind != "sym")):
            obj.attrs[k] = UNKNOWN


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
