"""Call frames, references to same-file functions, and small helpers shared by the interpreter's parts."""

from __future__ import annotations

import ast
import re

from devflow.analysis.findings import Finding
from devflow.analysis.index import ClassInfo, FileIndex
from devflow.analysis.values import UNKNOWN, Val
from devflow.model import Span

# Calls are followed to any depth (memoised per abstract arguments, recursion cut by the active set);
# this bound only keeps the Python stack safe on pathological call chains.
MAX_DEPTH = 64
MAX_CHOICES = 8  # callables one call may run as each of (a registry's entries, a criterion picked by an option)


_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def span_of(node: ast.AST) -> Span:
    return Span(node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)


class FuncRef:
    __slots__ = ("node", "closure", "owner", "kind", "unit")

    def __init__(self, node, closure, owner: ClassInfo | None = None, kind: str = "function", unit=None):
        self.unit = unit  # the file a plain function was defined in (a method's is its owner's home)
        self.node = node
        self.closure = closure  # defining Frame (for nested functions) or None
        self.owner = owner
        self.kind = kind  # function | method | staticmethod | classmethod


class Frame:
    __slots__ = ("node", "env", "parent", "call_node", "returns", "closure", "assigned", "params", "pending_names",
                 "stmt_stack", "owner", "global_names", "yields", "moved_params")

    def __init__(self, node, parent, call_node, closure=None):
        self.node = node
        self.env: dict[str, Val] = {}
        self.parent = parent
        self.call_node = call_node
        self.returns: Val | None = None
        self.closure = closure
        self.assigned: dict[str, int] = {}
        self.params: set[str] = set()
        self.pending_names: dict[str, Finding] = {}
        self.stmt_stack: list[ast.stmt] = []
        self.owner: ClassInfo | None = None  # the class whose method runs here (for `super()`)
        self.global_names: set[str] | None = None  # `global x`: x is assigned in the module frame
        self.yields: Val | None = None  # a generator: the join of what it yields (its elements)
        self.moved_params: dict[str, Val] | None = None  # parameters moved in place here (param_moves)


DECO_CACHE: dict[int, tuple] = {}


def decorators(node) -> set[str]:
    hit = DECO_CACHE.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    out = _decorators_of(node)
    if len(DECO_CACHE) > 50000:
        DECO_CACHE.clear()
    DECO_CACHE[id(node)] = (node, out)
    return out


def _decorators_of(node) -> set[str]:
    out = set()
    for d in getattr(node, "decorator_list", ()):
        name = FileIndex.dotted(d.func if isinstance(d, ast.Call) else d) or ""
        out.add(name.rsplit(".", 1)[-1])
    return out


def method_kind(decos: set[str], plain: str) -> str:
    """How a function found on a class binds: `plain` ("method" on an instance, "function" on the class)
    unless it is a static or class method."""
    return "staticmethod" if "staticmethod" in decos else ("classmethod" if "classmethod" in decos else plain)


def class_member(base: Val, attr: str) -> Val:
    """`Cls.attr` for a class defined in this file: its function, bound for a classmethod."""
    if base.kind == "class" and isinstance(base.func, ClassInfo):
        found = base.func.method(attr)
        if found is not None:
            fn, owner = found
            decos = decorators(fn)
            kind = method_kind(decos, "function")
            return Val("func", func=FuncRef(fn, None, owner, kind), bound=base if kind == "classmethod" else None)
    return UNKNOWN


def call_counts(source: str, names: set[str]) -> dict[str, int]:
    """`source.count(name + "(")` for each name, less attribute calls (`x.name(`), in one scan instead
    of one per function (which made the driver quadratic). Each occurrence is the tail of a maximal
    word followed by "("."""
    runs: dict[str, int] = {}
    for w in _CALLED_WORD.findall(source):
        runs[w] = runs.get(w, 0) + 1
    out: dict[str, int] = {}
    for w, n in runs.items():
        for i in range(len(w)):
            tail = w[i:]
            if tail in names:
                out[tail] = out.get(tail, 0) + n
    return out


# (not `x.name(`: an attribute call, `model.train()`, is never a call of the module-level function `name`)
_CALLED_WORD = re.compile(r"(?<!\.)\b(\w+)\(")


def attribute_calls(source: str) -> set[str]:
    """The names called as attributes anywhere in `source` (`x.name(` -> "name")."""
    return set(_CALLED_ATTR.findall(source))


_CALLED_ATTR = re.compile(r"\.(\w+)\(")


def is_dotted_name(text: str) -> bool:
    return all(p.isidentifier() for p in text.split("."))


def call_sig(v: Val):
    if v.kind == "tensor":
        return ("t", v.dev, v.scalar, v.dims)
    if v.kind in ("module", "obj"):
        # the receiver's placement too: a method run again after a move sees (and caches) moved tensors
        return (v.kind, id(v.obj), v.obj.training if v.obj is not None else None, v.obj.dev if v.obj is not None else None)
    if v.kind == "const":
        c = v.const
        return ("c", c if isinstance(c, (int, float, str, bool, type(None))) else id(c))
    if v.kind == "device":
        return ("d", v.dev)
    if v.kind == "func":
        return ("f", id(v.func.node) if v.func else 0)
    if v.kind == "class":
        return ("k", id(v.func))
    if v.kind == "params":
        return ("p", id(v.obj))
    return (v.kind,)


def _is_none(v: Val) -> bool:
    return v.kind == "const" and v.const is None


def placement_changed(old: Val, new: Val) -> bool:
    """Whether storing `new` over `old` changes where the attribute's state lives: a tensor on another
    device (or a tensor where there was none), another module. (A fresh container per call, such as
    `self.cache = []` in forward, does not count: it would make every memoised call run again.)
    State set lazily over None (`self._step_index = 0` after `= None`) counts too: a memoised property read
    before the store (`if self.step_index is None:`) would hand the stale None to an index after it."""
    if _is_none(old) != _is_none(new):
        return True
    if old.kind != new.kind:
        return "tensor" in (old.kind, new.kind) or "module" in (old.kind, new.kind)
    if new.kind == "tensor":
        return old.dev != new.dev
    if new.kind == "module":
        return old.obj is not new.obj
    return False


DTYPES = frozenset({"float", "float32", "float64", "double", "half", "float16", "bfloat16", "int", "int32", "int64",
                     "long", "int8", "uint8", "bool", "short", "int16", "complex64", "complex128", "cfloat"})

TENSOR_ATTRS = frozenset({"shape", "size", "device", "dtype", "dim", "ndim", "view", "reshape", "transpose",
                           "permute", "unsqueeze", "squeeze", "contiguous", "flatten", "masked_fill", "matmul",
                           "float", "half", "softmax", "sum", "mean", "numel", "expand", "repeat", "chunk", "split"})

HEAD_RESETTERS = frozenset({"reset_classifier", "reset_head"})  # timm: a new nn.Linear on cpu

MODULE_SIDE = "\x00module"  # marks the module side of a mix: `model.device` is not an nn.Module attribute


# Namespaces whose callables build a model (torchvision / timm / smp builders, torch.hub.load): the model is
# built where the default device is.
MODEL_BUILDER_PREFIXES = ("torchvision.models.", "timm.create_model", "timm.models.", "torch.hub.load",
                          "segmentation_models_pytorch.")


def named_at_run_time(namespace: str) -> bool:
    """A namespace whose member picked by a name known only at run time is still known in kind: one of
    torch.optim's optimizers, one of a model library's builders."""
    return namespace == "torch.optim" or (namespace + ".").startswith(MODEL_BUILDER_PREFIXES)
