"""Tensor methods: moves (`.to`, `.cuda`, `.cpu`), `new_*` factories, and ops whose tensor
arguments must share the receiver's device.
"""

from __future__ import annotations

import ast

from devflow.analysis import torch_api as T
from devflow.analysis.lattice import CPU, CUDA, Dev
from devflow.analysis.values import COLLATED, UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.pinned_moves import pins_module_state
from devflow.analysis.interp.frames import span_of
from devflow.analysis.interp.dtype_casts import casts_only_dtype
from devflow.analysis.interp.matmul_operands import MATMUL, matmul_operand
from devflow.analysis.interp.clamp_bounds import CLAMP_OPS, clamp_operand
from devflow.analysis.interp.moved_callables import moved_callable


class Tensors:
    """Methods called on tensors."""

    def tensor_method(self, node, t: Val, name: str, args, kwargs, frame) -> Val:
        if (name == "size" and args) or (name in ("dim", "numel") and not args):
            return Val("number")  # a Python int
        if "generator" in kwargs:
            self.check_generator_method(node, t, name, kwargs)
        if t.origin is not None and t.origin.kind == "unknown-moved" and name in _MODULE_OR_TENSOR:
            # maybe a module (`load().to(d).eval()`): the chain stays "maybe a module" on its device
            dev = t.dev
            if name == "to":
                dev = self.parse_to_args(args, kwargs, t.dev)
            elif name == "cuda":
                dev = CUDA
            elif name == "cpu":
                dev = CPU
            if dev is None or not dev.known:
                return UNKNOWN
            return Val("tensor", dev, t.origin if dev is t.dev else
                       Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}", "unknown-moved"),
                       scalar=t.scalar)  # a 0-dim value stays 0-dim through `.cpu()` / `.to()`
        if t.origin is not None and t.origin.kind == "unknown-moved" and name in _MODULE_TENSOR_ACCESSORS:
            # `models.__dict__[arch](...).to(d).named_parameters()`: torch.Tensor has no such method, the moved value
            # is an nn.Module on `d`, and these are its own parameters / buffers, on `d` too
            mod = moved_callable(t)
            if mod is not None:
                return self.module_method(node, mod, name, args, kwargs, frame)
        if t.origin is not None and t.origin.kind == "unknown-moved" and name not in _TENSOR_METHODS:
            # `Net(...).to(d).decode(z, idx)`: torch.Tensor has no such method, so the moved value is a module
            # or another object whose method may return anything and take tensors from anywhere
            return UNKNOWN
        if name == "to":
            dev = t.dev if casts_only_dtype(node, frame) else self.parse_to_args(args, kwargs, t.dev)
            other = args[0] if args and "device" not in kwargs else None
            if other is not None and other.kind == "tensor" and other.dev is dev and other.origin is not None:
                # `y.to(x)` follows `x`: `x` decides where the result is, so its cause is `x`'s, not `y`'s
                return Val("tensor", dev, other.origin, scalar=t.scalar, batch=t.batch, dims=t.dims)
            if dev is t.dev:
                return Val("tensor", t.dev, t.origin, scalar=t.scalar, batch=t.batch, dims=t.dims)
            return Val("tensor", dev, Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}", kind="placed"),
                       scalar=t.scalar, batch=t.batch, dims=t.dims)
        if name == "cuda":
            dev = (self.cuda_index_dev(args[0]) if args else None) or CUDA
            return Val("tensor", dev, Origin(span_of(node), f"moved by `{self.text(node)}` at line {node.lineno}", kind="placed",
                                             pinned=not args and pins_module_state(frame)),
                       scalar=t.scalar, batch=t.batch, dims=t.dims)
        if name == "cpu":
            return Val("tensor", CPU, Origin(span_of(node), f"copied to cpu by `.cpu()` at line {node.lineno}", kind="placed"),
                       scalar=t.scalar, batch=t.batch, dims=t.dims)
        if name == "type" and not args and not kwargs:
            # `t.type()`: the name of its legacy type, "torch.cuda.FloatTensor" on any cuda device; what it names
            # is the device's type, not its index (`u.type(t.type())` of a cpu `u` goes to the current cuda device)
            return Val("typestr", t.dev) if t.dev is not None and (t.dev.is_cpu or t.dev.kind == "cuda") else UNKNOWN
        if name == "type" and (args or "dtype" in kwargs):
            # `t.type(torch.cuda.FloatTensor)` moves, `t.type(torch.float16)` keeps the device, an unknown type may move
            dev = _type_device(args[0] if args else kwargs["dtype"], t.dev)
            if dev is None and node.args and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "dtype":
                dev = t.dev  # `t.type(other.dtype)`: a dtype
            if dev is None:
                return UNKNOWN
            if dev is t.dev:
                return Val("tensor", t.dev, t.origin, scalar=t.scalar, batch=t.batch)
            return Val("tensor", dev, Origin(span_of(node), f"converted by `{self.text(node)}` at line {node.lineno}",
                                             kind="placed"), scalar=t.scalar, batch=t.batch)
        if t.batch == COLLATED and name not in _TENSOR_METHODS and name not in _MAPPING_METHODS:
            # an entry of a collated batch need not be a tensor (a pandas Index, a list of ids): the batch transfer
            # moves the tensors and leaves the rest; torch.Tensor has no such method, so this entry is another object
            return UNKNOWN
        if name == "keys":  # not a Tensor method: `t` is a dict of tensors; its keys are not tensors
            return UNKNOWN
        if name == "items":
            value = Val("tensor", t.dev, t.origin)
            return Val("obj", obj=Obj("iter"), elem=Val("obj", obj=Obj("tuple", items=[UNKNOWN, value])))
        if name in ("item", "tolist"):
            return UNKNOWN
        if name == "get_device" and not args and t.dev is not None and t.dev.known and not t.batch:
            # the tensor's device ordinal: -1 on the cpu, else the index of its GPU, which `.to(i)` /
            # `torch.device(i)` read back as that same device
            return Val("const", const=-1) if t.dev.is_cpu else Val("device", t.dev, t.origin)
        if name == "type_as" and args and args[0].kind == "tensor":
            # `t.type(other.type())`: the other tensor's type string names its device type ("torch.cuda.FloatTensor"):
            # a cpu `other` copies to the cpu, a cuda one keeps a cuda receiver where it is and copies a cpu one to the
            # current GPU (listed among the non-tensor methods only to keep it out of the same-device check)
            o = args[0]
            dev = _type_device(Val("typestr", o.dev), t.dev) if o.dev is not None and o.dev.known and \
                (o.dev.is_cpu or o.dev.kind == "cuda") else o.dev
            return Val("tensor", dev, Origin(span_of(node), f"converted by `{self.text(node)}` at line {node.lineno}",
                                             kind="placed") if dev != t.dev else t.origin, scalar=t.scalar, dims=t.dims)
        if name in T.SAME_DEVICE_PREDICATES:
            others = [(v, self.text(a)) for v, a in zip(args, node.args) if v.kind == "tensor"]
            if others:
                self.check_mix(node, [(t, self.text(node.func.value))] + others, frame)
            return UNKNOWN  # a Python bool
        if name in T.NON_TENSOR_METHODS:
            return UNKNOWN
        if name in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
            d = kwargs.get("device")
            return Val("tensor", d.dev if d is not None and d.kind == "device" else t.dev, t.origin)
        if name in ("copy_", "type_as", "masked_scatter_", "set_"):
            return t
        if name.endswith("_") and not name.startswith("_") and self.inplace_into_cpu(node, t, args, frame):
            return UNKNOWN
        tensor_args = [(v, self.text(a)) for v, a in zip(args, node.args) if v.kind == "tensor"]
        # a tensor named by keyword (`t.index_select(dim=0, index=i)`, `t.gather(1, index=i)`) is the same operand
        tensor_args += keyword_tensors(node, kwargs, self.text)
        if not tensor_args and (pair := values_indices(node, name, t, node.args, 0)) is not None:
            return pair
        if name in T.SHAPE_ARGUMENT_METHODS:
            tensor_args = []  # only the argument's shape is read
        operands = [(t, self.text(node.func.value))] + tensor_args
        if name == MATMUL:  # `a.matmul(b)`, the method of `a @ b`: no 0-dim operand
            operands = [(matmul_operand(v), x) for v, x in operands]
        if name in CLAMP_OPS:  # `x.clamp(max=t)` with a tensor bound: no 0-dim cpu exception
            operands = [(clamp_operand(v), x) for v, x in operands]
        if tensor_args and self.check_mix(node, operands, frame):
            return UNKNOWN
        scalar = t.scalar
        if name in _FULL_REDUCTIONS and not args and not kwargs:
            scalar = True
        elif name in _ADDS_DIMS or (name in ("view", "reshape") and node.args and
                                    not (isinstance(node.args[0], (ast.Tuple, ast.List)) and not node.args[0].elts)) \
                or _names_inner_dim(node):
            scalar = False  # a maybe-0-dim value (`torch.tensor(ids)`) with dims added is not a cpu scalar any more
        return Val("tensor", t.dev, t.origin, scalar=scalar, dims=_dims_after(node, name, t))


# Reductions along one dimension that return a (values, indices) pair: with a dim for the first five (without
# one they return a single 0-dim tensor), always for the others.
_PAIR_WITH_DIM = frozenset({"max", "min", "median", "nanmedian", "mode"})
_PAIR_ALWAYS = frozenset({"kthvalue", "sort", "topk", "cummax", "cummin"})
_PAIR_KEEPS_SHAPE = frozenset({"sort", "topk", "cummax", "cummin"})


def values_indices(node, name: str, t: Val, rest: list, first: int) -> Val | None:
    """`t.max(1)`, `torch.max(t, dim=1)`, `t.topk(k)`: a namedtuple (values, indices), each on `t`'s device, not
    one tensor; so `t.max(1)[1]` is the indices tensor, not an element of a tensor. A reduction along dim d >= 1
    proves `t` has d + 1 dimensions, so its results keep at least one: not 0-dim (a 0-dim cpu tensor would mix
    with any device, a 1-D one does not). `rest` are the call's argument nodes after `t`, from index `first`."""
    if name not in _PAIR_WITH_DIM and name not in _PAIR_ALWAYS:
        return None
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    pos = rest[first:]
    dim_node = kw.get("dim")
    if name in _PAIR_WITH_DIM:
        dim_node = dim_node if dim_node is not None else (pos[0] if pos else None)
        if dim_node is None or not _int_literal(dim_node):
            return None  # no dim (a 0-dim result) or a second tensor (`torch.max(a, b)`, element-wise)
    elif name == "kthvalue":
        dim_node = dim_node if dim_node is not None else (pos[1] if len(pos) > 1 else None)
    keepdim = kw.get("keepdim")
    if name in _PAIR_KEEPS_SHAPE or isinstance(keepdim, ast.Constant) and keepdim.value is True:
        scalar, dims = t.scalar, t.dims
    else:
        d = _int_literal(dim_node) if dim_node is not None else None
        if d is not None and (d >= 1 or d <= -2):
            scalar, dims = False, (d + 1 if d >= 0 else -d) - 1
        elif t.dims >= 2:
            scalar, dims = False, t.dims - 1
        else:
            scalar, dims = True, 0
    values = Val("tensor", t.dev, t.origin, scalar=scalar, dims=dims)
    indices = Val("tensor", t.dev, t.origin, scalar=scalar, dims=dims)
    return Val("obj", obj=Obj("tuple", qual="namedtuple", items=[values, indices],
                              attrs={"values": values, "indices": indices}))


def _int_literal(n) -> int | None:
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant) \
            and type(n.operand.value) is int:
        return -n.operand.value
    return n.value if isinstance(n, ast.Constant) and type(n.value) is int else None


def _dims_after(node, name: str, t: Val) -> int:
    """The dimensions `t.<name>(...)` is known to have at least: those a view / reshape names, one more than
    `t`'s for unsqueeze, `t`'s own through an element-wise cast or copy; 0 (unknown) otherwise."""
    if name in ("view", "reshape") and node.args and not any(isinstance(a, ast.Starred) for a in node.args):
        if len(node.args) > 1:
            return len(node.args)  # one int per dimension
        a = node.args[0]
        if isinstance(a, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in a.elts):
            return len(a.elts)
        if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub):
            a = a.operand
        return 1 if isinstance(a, ast.Constant) and type(a.value) is int else 0  # a shape held in a name may be ()
    if name in ("unsqueeze", "unsqueeze_"):
        return t.dims + 1 if t.dims else 1
    return t.dims if name in _KEEPS_SHAPE else 0


# Tensor methods whose result has the receiver's shape (casts, copies, element-wise maps).
_KEEPS_SHAPE = frozenset({"long", "int", "float", "double", "half", "bfloat16", "bool", "byte", "char", "short",
                          "contiguous", "detach", "detach_", "clone", "requires_grad_", "pin_memory", "abs", "neg",
                          "exp", "log", "sigmoid", "tanh", "relu", "float_", "type_as"})


def _names_inner_dim(node) -> bool:
    """`t.argmax(dim=1)`, `t.softmax(dim=-2)`: torch checks `dim` against the receiver's dimensions, so a `dim` other
    than 0 / -1 proves at least two; reducing one of them (or keeping them all) leaves at least one: not 0-dim."""
    for kw in node.keywords:
        if kw.arg == "dim":
            v = kw.value
            if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) and isinstance(v.operand, ast.Constant):
                return type(v.operand.value) is int and v.operand.value >= 2
            return isinstance(v, ast.Constant) and type(v.value) is int and v.value >= 1
    return False


# Every method a torch.Tensor has (from torch's stubs), and the calls it answers.
_TENSOR_METHODS = T.SAME_DEVICE_METHODS | T.NON_TENSOR_METHODS | T.DEVICE_MOVING_METHODS | T.IN_PLACE_FILL | \
    T.SHAPE_ARGUMENT_METHODS | {"__call__"}

# Tensor methods that, given no dim, reduce every element to one 0-dim result (`logits.argmax()`).
_FULL_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "norm", "std", "var", "all", "any", "amax", "amin",
                              "argmax", "argmin", "median", "nanmedian", "nansum", "nanmean", "count_nonzero"})

# The mapping methods of a collated dict batch (`batch.get("x")`, `batch.items()`): its entries, not a Tensor's.
_MAPPING_METHODS = frozenset(n for n in dir(dict) if not n.startswith("_"))

# Tensor methods whose result has at least one dimension, whatever the receiver's.
_ADDS_DIMS = frozenset({"unsqueeze", "unsqueeze_", "flatten", "ravel", "atleast_1d", "atleast_2d", "atleast_3d"})

# nn.Module methods (no Tensor has them) that give the module's own parameters / buffers.
_MODULE_TENSOR_ACCESSORS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})

# Methods of both nn.Module and Tensor that return the receiver's kind (or only Module's: eval/train).
_MODULE_OR_TENSOR = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "requires_grad_",
                               "eval", "train", "share_memory", "type", "zero_"})


def _type_device(v: Val, same: Dev | None) -> Dev | None:
    """The device `t.type(v)` is on: a legacy typed class or its name ("torch.cuda.FloatTensor") names
    one; a dtype keeps the tensor's (`same`); anything else is unknown (None)."""
    if v.kind == "typestr":  # `other.type()`
        name = "torch.FloatTensor" if v.dev.is_cpu else "torch.cuda.FloatTensor"
    else:
        name = v.const if v.kind in ("qual", "const") and isinstance(v.const, str) else None
    if name is None or not name.startswith("torch."):
        return None
    rest = name[6:]
    if rest.startswith("cuda.") and rest[5:] in T.LEGACY_CPU_TYPES:
        # a tensor already on a cuda device keeps it (a cast); another one is copied to the *current* device
        return same if same is not None and same.kind == "cuda" else CUDA
    if rest in T.LEGACY_CPU_TYPES:
        return CPU
    if "." not in rest and not rest[:1].isupper():
        return same  # a dtype: torch.float16, torch.long
    return None


# Keywords of tensor methods that are not operands: the random source is checked on its own (DEV205), `out`
# receives the result.
_NOT_OPERAND_KEYWORDS = frozenset({"generator", "out"})


def keyword_tensors(node, kwargs, text) -> list[tuple[Val, str]]:
    """The tensors a method call names by keyword, with their source text, in the call's order."""
    return [(kwargs[kw.arg], text(kw.value)) for kw in node.keywords
            if kw.arg is not None and kw.arg not in _NOT_OPERAND_KEYWORDS
            and kw.arg in kwargs and kwargs[kw.arg].kind == "tensor"]
