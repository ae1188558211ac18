"""Packed sequences: `pack_padded_sequence(x, lengths)` wants `lengths` on the cpu (a cpu tensor or a
list) whatever the device of `x`; a cuda `lengths` raises "'lengths' argument should be a 1D CPU int64
tensor". Also: a module input that forward() only moves or reads as metadata (`lengths.cpu()`,
`lengths.tolist()`, the lengths of a pack) never meets the module's device."""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as F
from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.index import FileIndex
from devflow.analysis.lattice import CPU, concrete, definitely_differ
from devflow.analysis.values import UNKNOWN, Val
from devflow.analysis.interp.frames import span_of
from devflow.analysis.interp.movers import moved_param, project_function
from devflow.analysis.interp.frameworks.index_inputs import indexes_a_tensor, only_indexes, sliced_into_local

# Uses of an input that do not combine it with another tensor: moves, and metadata reads.
_DEVICE_FREE_ATTRS = frozenset({"to", "cpu", "cuda", "tolist", "item", "numpy", "size", "shape", "dim", "ndim",
                                "numel", "device", "dtype", "__len__"})


def used_as_index(u: ast.Name, fn, parents: dict) -> bool:
    """`t[u]`, or `i = u[a:b]` with `i` only indexing: a cpu index meets no device (frameworks/index_inputs.py)."""
    if indexes_a_tensor(u, parents):
        return True
    alias = sliced_into_local(u, parents)
    return alias is not None and only_indexes(alias, fn, parents)


def _device_attr(a, obj) -> bool:
    """`x.to(self.first)` where the module keeps a device in `self.first` (a device string or value, as its
    __init__ stored it): a move, not a dtype cast (model-parallel stages name their GPU this way)."""
    if obj is None or not (isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "self"):
        return False
    v = obj.attrs.get(a.attr)
    if v is None:
        return False
    if v.kind == "device":
        return True
    return v.kind == "const" and isinstance(v.const, str) and concrete(v.const) is not None


class PackedSequences:
    def pack_call(self, node, rest: str, args, kwargs, frame) -> Val:
        spec = F.CPU_LENGTHS[rest]
        pos, name = spec["position"], spec["param"]
        if pos < len(args):
            v, a = args[pos], node.args[pos] if pos < len(node.args) else None
        else:
            v, a = kwargs.get(name), next((k.value for k in node.keywords if k.arg == name), None)
        if v is None or a is None or v.kind != "tensor" or v.dev is None or not v.dev.known \
                or not definitely_differ(CPU, v.dev):
            return UNKNOWN
        key = ("lengths", span_of(a))
        if key in self.mix_origins:
            return UNKNOWN
        self.mix_origins.add(key)
        atext = self.text(a)
        fix = FixPlan("append", span_of(a), text=".cpu()", title=f"Pass the lengths on the cpu: `{atext}.cpu()`") \
            if isinstance(a, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) else None
        related = [(v.origin.span, v.origin.reason)] if v.origin else []
        self.add(Finding("DEV206", span_of(a),
                         f"`{atext}` is on {v.dev.render()}" + (f" ({v.origin.reason})" if v.origin else "")
                         + f" but `{rest.rsplit('.', 1)[-1]}` needs its `{name}` on the cpu: torch raises \"'lengths' "
                         f"argument should be a 1D CPU int64 tensor\"", related, fix))
        return UNKNOWN

    def without_device_free_inputs(self, obj, node, arg_pairs: list) -> list:
        """Drop the inputs of a project module that its forward() never combines with a tensor."""
        if obj is None or obj.cls is None or any(isinstance(a, ast.Starred) for a in node.args):
            return arg_pairs
        found = obj.cls.method("forward")
        if found is None:
            return arg_pairs
        free = self._device_free_params(found[0], obj)
        if not free:
            return arg_pairs
        params = [p.arg for p in found[0].args.posonlyargs + found[0].args.args][1:]
        out = []
        for i, (v, t) in enumerate(arg_pairs):
            p = params[i] if i < len(node.args) and i < len(params) else t
            if p not in free:
                out.append((v, t))
        return out

    @staticmethod
    def _handed_back(u: ast.Name, parents: dict) -> bool:
        """`return {"preds": ..., "target": targets}`: an input returned as it is (alone or as an item of
        a returned tuple / list / dict display) meets nothing inside; the caller gets it back unchanged."""
        node, p = u, parents.get(id(u))
        while isinstance(p, (ast.Tuple, ast.List)) or isinstance(p, ast.Dict) and any(v is node for v in p.values):
            node, p = p, parents.get(id(p))
        return isinstance(p, ast.Return)

    def _device_free_params(self, fn, obj=None) -> frozenset:
        key = ("device-free", id(fn), id(obj))
        hit = self.builds_modules_cache.get(key)
        if hit is not None:
            return hit
        a = fn.args
        names = {p.arg for p in (a.posonlyargs + a.args)[1:] + a.kwonlyargs}
        parents, uses = {}, {n: [] for n in names}
        for p in ast.walk(fn):
            for c in ast.iter_child_nodes(p):
                parents[id(c)] = p
                if isinstance(c, ast.Name) and c.id in names:
                    uses[c.id].append(c)
        stored = {t.id for st in ast.walk(fn) if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                  for t in (st.targets if isinstance(st, ast.Assign) else [st.target]) if isinstance(t, ast.Name)}
        free = set()
        for name, us in uses.items():
            if not us:
                free.add(name)  # never read: PyTorch checks no argument's device at the call, only where tensors meet
                continue
            if name in stored and self._moved_on_entry(fn, name, parents, obj):
                free.add(name)
                continue
            if name in stored or not any(isinstance(u.ctx, ast.Load) for u in us):
                continue
            if all(self._device_free_use(u, parents, obj) or used_as_index(u, fn, parents)
                   for u in us if isinstance(u.ctx, ast.Load)):
                free.add(name)
        hit = self.builds_modules_cache[key] = frozenset(free)
        return hit

    def _moved_on_entry(self, fn, name: str, parents: dict, obj) -> bool:
        """`x = x.to(self.first)` as the first statement that reads `x`: what the caller passed is moved before
        anything uses it (the later reads see the moved value)."""
        for st in fn.body:
            loads = [n for n in ast.walk(st) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
            if not loads:
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(st)):
                    return False  # rebound before it is read
                continue
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                    and st.targets[0].id == name):
                return False
            if self._moved_by_helper(st.value, name, obj):
                return True  # `x = move_device_like(x, self.conv.weight)`
            return all(self._device_free_use(u, parents, obj) for u in loads) \
                and any(isinstance(parents.get(id(u)), ast.Attribute) and parents[id(u)].attr in ("to", "cuda") for u in loads)
        return False

    def _moved_by_helper(self, value, name: str, obj) -> bool:
        """`helper(x, ...)` where `helper` is a project function of the module's file returning that argument moved."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)) or obj is None or obj.cls is None:
            return False
        found = project_function(self, value.func.id, obj.cls.home)
        pos = moved_param(*found) if found is not None else None
        return pos is not None and pos < len(value.args) and isinstance(value.args[pos], ast.Name) \
            and value.args[pos].id == name

    def _device_free_use(self, u: ast.Name, parents: dict, obj=None) -> bool:
        p = parents.get(id(u))
        if self._handed_back(u, parents):
            return True
        if isinstance(p, ast.Attribute) and p.attr in _DEVICE_FREE_ATTRS:
            call = parents.get(id(p))
            if p.attr != "to":
                return True
            # `.to(device)` moves it; `.to(torch.long)` keeps it where it is
            return isinstance(call, ast.Call) and call.func is p and (
                any(k.arg == "device" for k in call.keywords) or any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) or "device" in ast.unparse(a).lower()
                    or _device_attr(a, obj) for a in call.args[:1]))
        if isinstance(p, ast.Call) and u in p.args and isinstance(p.func, ast.Name) and p.func.id == "len":
            return True
        if isinstance(p, ast.keyword):
            p, kw = parents.get(id(p)), p.arg
        else:
            kw = None
        if isinstance(p, ast.Call):
            # names resolve in the forward's own file (the model may live in another file than the caller)
            home = getattr(getattr(obj, "cls", None), "home", None) or self.index
            q = home.qualify(FileIndex.dotted(p.func) or "")
            spec = F.CPU_LENGTHS.get(q[6:]) if q.startswith("torch.") else None
            if spec is not None and (kw == spec["param"] or (kw is None and spec["position"] < len(p.args)
                                                              and p.args[spec["position"]] is u)):
                return True
            return self._device_free_in_submodule(p, u, kw, obj)
        return False

    def _device_free_in_submodule(self, call: ast.Call, u: ast.Name, kw, obj) -> bool:
        """`self.enc(x, lengths)`: an input handed on to a project submodule whose forward never combines
        that parameter with a tensor (it packs the sequence with it) meets nothing on the way either."""
        f = call.func
        if obj is None or not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"):
            return False
        sub = obj.attrs.get(f.attr)
        if sub is None or sub.kind != "module" or sub.obj is None or sub.obj.cls is None or sub.obj is obj:
            return False
        found = sub.obj.cls.method("forward")
        if found is None or any(isinstance(a, ast.Starred) for a in call.args):
            return False
        fn = found[0]
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
        name = kw if kw is not None else next((params[i] for i, a in enumerate(call.args) if a is u and i < len(params)), None)
        return name is not None and name in self._device_free_params(fn, sub.obj)
