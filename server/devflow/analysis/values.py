"""Abstract values the interpreter computes: tensors, modules, devices, containers, callables."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from devflow.analysis.lattice import TOP, Dev
from devflow.model import Span


@dataclass(frozen=True)
class Origin:
    """Where a value got its device: a span and a phrase ("created at line 41 without device=").

    `kind` says how, for the rules and fixes that depend on it (the phrase is for people):
    "factory" (a factory call without device=), "explicit" (a factory call given its device=), "legacy" (a legacy cpu constructor), "batch"
    (a DataLoader batch), "snapshot" (copies of a not-yet-moved model's tensors), "returned"
    (returned by a same-file call), "unknown-moved" (`x.to(device)` on a value of unknown kind: on that
    device, but maybe a module), "placed" (an explicit move: `.to(...)`, `.cuda()`, `.cpu()`, a module's
    move), "tensor_type" (the default set by `torch.set_default_tensor_type`), "context" (the default set by a
    `with torch.device(...)` block, for its body only), or "" for anything else.
    """

    span: Span
    reason: str
    kind: str = ""
    pinned: bool = False  # a bare `.cuda()` in a method of a module still on the cpu (interp/pinned_moves.py)
    # a factory inside a function given a tensor on an accelerator (`torch.arange(n)` in a sampler given the
    # logits): the device it should have been made on is in scope there, named so (`logits.device`)
    local_device: str = ""
    local_dev: object = None  # (that tensor's Dev: the fix names it only where it is the other side's device)


OBJ_SEQ = itertools.count()


@dataclass(eq=False)
class Obj:
    """A heap object (shared by reference): a module, an instance, a container, an optimizer ..."""

    kind: str  # module | instance | list | dict | optimizer | scheduler | scaler | tokenizer | loader | ckpt | host
    qual: str = ""
    cls: object = None  # ClassInfo of a same-file class
    attrs: dict = field(default_factory=dict)
    dev: Dev | None = None
    origin: Origin | None = None
    moved: Origin | None = None
    moved_frame: object = None
    training: bool | None = None
    dispatched: bool = False
    role: str = ""  # metric | loss | model ...
    buffers: set = field(default_factory=set)
    children: set = field(default_factory=set)  # attribute names of registered submodules
    items: list = field(default_factory=list)  # list / tuple elements (Val)
    keys: dict = field(default_factory=dict)  # dict: constant key -> Val
    pending: list = field(default_factory=list)  # findings confirmed or cancelled by a later move
    optimizers: list = field(default_factory=list)  # optimizers over this module's parameters
    modules: list = field(default_factory=list)  # optimizer: module objects whose parameters it holds
    fused: bool = False
    loaded_at: Origin | None = None
    peft: bool = False
    created_line: int = 0
    hook_written: set = field(default_factory=set)  # attributes a registered module hook assigns
    seq: int = field(default_factory=lambda: next(OBJ_SEQ))  # creation order: made inside a branch or before it


class Val:
    """An abstract value. `dev` is the device of a tensor / a device value; modules keep theirs on `obj`."""

    __slots__ = ("kind", "dev", "origin", "obj", "const", "scalar", "text", "func", "bound", "elem", "batch", "owner", "dims",
                 "optional", "zero_dim")

    def __init__(self, kind: str, dev: Dev | None = None, origin: Origin | None = None, obj: Obj | None = None,
                 const=None, scalar: bool = False, text: str = "", func=None, bound=None, elem=None,
                 batch: str = "", owner: Obj | None = None, dims: int = 0, optional: bool = False):
        self.kind = kind  # tensor | module | device | const | qual | func | class | obj | unknown | params | array
        self.dev = dev
        self.origin = origin
        self.obj = obj
        self.const = const
        self.scalar = scalar  # may be 0-dim (a cpu 0-dim tensor mixes with any device)
        self.text = text  # the source text that named this value, for messages
        self.func = func
        self.bound = bound
        self.elem = elem
        # Tensors that travel together, all on one device, modelled as one tensor: COLLATED (a
        # DataLoader batch: a tensor, or a tuple/list/dict of them) or ENCODING (a tokenizer's
        # BatchEncoding: a dict whose .to() moves it in place). Unpacking yields whole tensors, not
        # the possibly 0-dim slices of one tensor; a store `batch[k] = ...` may change the device.
        self.batch = batch
        # A parameter taken out of `model.parameters()` / `named_parameters()`: the module object that
        # holds it, so an optimizer over hand-built param groups still knows whose parameters it steps.
        self.owner = owner
        # The dimensions a tensor is known to have at least (0: not known): `ids.view(-1, 1)` has two, so
        # `ids[i]` has one and is not a 0-dim scalar that would mix with any device.
        self.dims = dims
        # None on some path (`w = torch.tensor(ws) if args.weighted else None`): where it is not None it is this
        # value, so `if w is not None:` cannot be decided, and what its other branch does with it is this value
        self.optional = optional
        # Known 0-dim: an int item of a tensor known to have that many dimensions (`perm[i]` of a randperm).
        # Torch applies a 0-dim integer index as a Python int, whatever its device.
        self.zero_dim = False

    def __repr__(self) -> str:
        return f"Val({self.kind}, {self.dev!r}, {self.const!r})"

    def with_text(self, text: str) -> "Val":
        v = Val(self.kind, self.dev, self.origin, self.obj, self.const, self.scalar, text, self.func, self.bound, self.elem,
                self.batch, self.owner, self.dims, self.optional)
        v.zero_dim = self.zero_dim
        return v

    def or_none(self) -> "Val":
        """This value on some paths, None on the others."""
        v = self.with_text(self.text)
        v.optional = True
        return v

    @property
    def device(self) -> Dev | None:
        if self.kind == "module" and self.obj is not None:
            return self.obj.dev
        return self.dev


UNKNOWN = Val("unknown")
# The result of an operation reported as a device mix with a parameter of a model never moved: PyTorch
# raises there, and moving that model is the one fix for its whole forward, so what is computed from it
# (with the same model's other parameters) is a tensor of unknown device that reports nothing more.
RAISED = Val("tensor", TOP)


def after_mix(vals) -> Val:
    """The value of an operation just reported as a device mix: RAISED when one side is a parameter of an
    unmoved model (one cause); else UNKNOWN, so that tensors made without device= further on, each its
    own cause, are still reported."""
    return RAISED if any(v.kind == "tensor" and v.origin is not None and v.origin.kind == "param" for v in vals) \
        else UNKNOWN


@dataclass(frozen=True)
class OtherKeys:
    """The loop variable of `for k in d:` on the pass for the keys of `d` not known one by one (`d` also holds
    `known`, each run on its own pass): an unknown key, but never one of `known`, as a dict's keys are distinct,
    so a store under it leaves those entries as they are. Carried as the `const` of an unknown value."""

    known: frozenset


# An object of unknown kind that a method call gave a `device=` (`ds.set_format("torch", device="cuda")`,
# `ds.with_format(..., device=d)`): what it yields may be on that device, so a DataLoader over it does not
# take its batches to be cpu tensors.
DEVICE_CONFIGURED = Val("unknown", const="<configured with device=>")
# DataParallel / DDP around a value of unknown kind: a module wrapper that scatters its inputs itself, so what its
# `.cuda()` returns is neither a tensor nor a plain module holding its inputs to its device
SCATTERING_WRAPPER = Val("unknown", const="<data-parallel wrapper of an unknown model>")


def other_key(v: Val) -> OtherKeys | None:
    return v.const if v.kind == "unknown" and isinstance(v.const, OtherKeys) else None


def host_data() -> Val:
    """numpy data (an array, a numpy scalar, a numpy object such as a Generator): it lives on the host, so a
    tensor made from it (`torch.tensor(arr)`) is on the cpu."""
    return Val("obj", obj=Obj("host", qual="numpy"))


LIST_ENCODING = "BatchEncoding of lists"  # a tokenizer's output without return_tensors: host data, entries lists of ints
COLLATED = "collated"
ENCODING = "encoding"
GRAPH = "graph"  # a graph library's collated batch object (torch_geometric Batch): its .to() moves it in place
COPY_MOVED = "moved by copy"  # a library object whose .to() returns a moved copy (a DGLGraph): never moved in place
FIELDS = "fields"  # a batch object whose every field (attribute) is a tensor or a tuple of them, on one device
MODEL_OUTPUT = "model output"  # a library model's output record (a transformers ModelOutput): its fields are tensors on its device


def module_tree(root: Obj, limit: int = 2000) -> list[Obj]:
    """`root` and the module objects registered under it (its children and container entries, theirs ...), each once."""
    out, seen, todo = [], set(), [root]
    while todo and len(out) < limit:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append(obj)
        subs = [obj.attrs.get(name) for name in obj.children]
        if obj.kind == "module":
            subs += [*obj.items, *obj.keys.values()]  # the entries of a ModuleList / Sequential / ModuleDict
        for v in subs:
            if v is not None and v.kind == "module" and v.obj is not None:
                todo.append(v.obj)
    return out
