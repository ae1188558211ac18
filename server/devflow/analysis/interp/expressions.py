"""Expressions: names, attributes, subscripts, containers, comprehensions, operators, comparisons,
constant truth of conditions, and what iterating a value yields.
"""

from __future__ import annotations

import ast
import builtins

from devflow.analysis import framework_api as FW
from devflow.analysis import torch_api as T
from devflow.analysis.index import ClassInfo, derives_from_builtin_sequence
from devflow.analysis.lattice import CPU, Dev, concrete, definitely_differ, join
from devflow.analysis.interp.hook_writes import hook_written
from devflow.analysis.interp.class_attrs import class_binding, eval_in_home, instance_may_store
from devflow.analysis.interp.module_dicts import is_module_dict, read_entry
from devflow.analysis.interp.dict_truth import known_empty_dict
from devflow.analysis.interp.matmul_operands import matmul_operand
from devflow.analysis.interp.sequence_repeat import concatenated_sequence, repeated_sequence
from devflow.analysis.interp.param_identity import placed_so_far
from devflow.analysis.interp.device_compare import compare_devices
from devflow.analysis.interp.index_dims import added_dims
from devflow.analysis.values import COLLATED, ENCODING, FIELDS, GRAPH, LIST_ENCODING, MODEL_OUTPUT, OtherKeys, after_mix, host_data, UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.env_devices import configured_join, env_read, is_env_read
from devflow.analysis.interp.hf_processors import sub_processor
from devflow.analysis.interp.missing_members import lacks_member
from devflow.analysis.interp.frames import MAX_CHOICES, span_of, FuncRef, Frame, decorators, method_kind, named_at_run_time
from devflow.analysis.interp.records import CUDA_AVAILABLE, as_batch, availability_flag
from devflow.analysis.interp.frameworks.autograd import autograd_apply_of
from devflow.analysis.interp.frameworks.threads import awaited
from devflow.analysis.interp.multigpu import device_type_name
from devflow.analysis.interp.class_refs import class_reference

BUILTIN_NAMES = frozenset(dir(builtins))

_ORDER = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
          ast.GtE: lambda a, b: a >= b}

# Filled by devflow.analysis.interp once the Interpreter class is composed.
EXPR_HANDLERS: dict = {}


class Expressions:
    """Evaluates an expression to an abstract value in a frame."""

    def eval(self, node, frame: Frame) -> Val:
        if node is None:
            return UNKNOWN
        h = EXPR_HANDLERS.get(type(node))
        if h is None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child, frame)
            return UNKNOWN
        return h(self, node, frame)

    def e_Constant(self, node, frame):
        return Val("const", const=node.value)

    def e_JoinedStr(self, node, frame):
        """f"cuda:{rank}": the rank's GPU, or some cuda device (multigpu); any other f-string is unknown."""
        return self.joined_device(node, frame) or UNKNOWN

    def lookup(self, name: str, frame: Frame) -> Val | None:
        f = frame
        while f is not None:
            v = f.env.get(name)
            if v is not None:
                return v
            f = f.closure
        if self.global_point is not None and self.module_frame is self.main_unit.module_frame:
            if name in self.mutated_by_importers():
                return UNKNOWN  # an importer may have moved or rebound it before this function runs
            v = self.global_view.since(name, self.global_point, self.join)  # a function the module never calls
            if v is not None:
                return v
        return self.module_frame.env.get(name)

    def e_Name(self, node, frame):
        v = self.lookup(node.id, frame)
        if v is not None:
            if v.kind in ("tensor", "module") and not self.standalone and node.id != "self":
                self.use_hint(node, v)
            return v
        if node.id in self.index.aliases:
            q = self.index.aliases[node.id]
            if self.project is not None:
                pv = self.project_val(q)
                if pv is not None:
                    return pv
            return Val("qual", const=q)
        if node.id in self.index.classes:
            return Val("class", func=self.index.classes[node.id])
        if node.id == "__name__":
            return Val("const", const=self.unit.name)
        # A builtin (`dir`, `globals`, `len`) is not looked for in star-imported modules: that ran every
        # star-imported module's body (transformers/__init__.py: 1,100 files per checked file).
        if self.index.star_imports and self.project is not None and node.id not in BUILTIN_NAMES:
            for mod in self.index.star_imports:  # `from models import *` of a project file
                pv = self.project_val(f"{mod}.{node.id}")
                if pv is not None and pv.kind != "unknown":
                    return pv
        if node.id in ("True", "False", "None"):
            return Val("const", const={"True": True, "False": False, "None": None}[node.id])
        if node.id in ("range", "len", "int", "float", "str", "bool", "enumerate", "zip", "list", "tuple", "dict",
                       "sorted", "reversed", "next", "iter", "isinstance", "getattr", "hasattr", "print", "max", "min",
                       "sum", "abs", "type", "super", "map", "filter", "set", "any", "all", "round", "setattr"):
            return Val("qual", const="builtins." + node.id)
        return UNKNOWN

    def qualname(self, node, frame) -> str | None:
        v = self.eval(node, frame) if isinstance(node, (ast.Name, ast.Attribute)) else UNKNOWN
        return v.const if v.kind == "qual" else None

    def qual_value(self, qual: str) -> Val:
        """A dotted module name as a value: a project file's module when it is one, else the name."""
        if self.project is not None:
            pv = self.project_val(qual)
            if pv is not None:
                return pv
        return Val("qual", const=qual)

    def qual_attr(self, qual: str, attr: str) -> Val:
        """`module.attr` of a dotted name: a project file's definition when it is one, else the name."""
        if self.project is not None:
            pv = self.project_val(f"{qual}.{attr}")
            if pv is not None:
                return pv
        return Val("qual", const=f"{qual}.{attr}")

    def e_Attribute(self, node, frame):
        base = self.eval(node.value, frame)
        attr = node.attr
        if attr == "apply" and (fn := autograd_apply_of(base)) is not None:
            return fn
        if base.kind == "qual":
            return self.qual_attr(base.const, attr)
        if base.kind == "device" and attr == "type":
            # `x.device.type`: the string "cuda", which names the current device, not x's GPU
            kind = device_type_name(base.dev)
            return Val("const", const=kind, text=self.text(node)) if kind is not None else UNKNOWN
        if base.kind == "tensor":
            if attr == "device":
                return self.device_of(base, node.value)
            if attr == "data" and base.batch == ENCODING:
                return Val("tensor", base.dev, base.origin, batch=ENCODING, text=self.text(node))  # the UserDict's dict
            if attr in ("T", "mT", "H", "data", "real", "imag", "grad"):
                return Val("tensor", base.dev, base.origin, scalar=base.scalar, text=self.text(node))
            if base.batch == ENCODING and attr not in ("encodings", "n_sequences", "is_fast") and not attr.startswith("_"):
                return Val("tensor", base.dev, base.origin, text=self.text(node))  # `enc.input_ids`: an entry
            if base.batch == GRAPH and attr in FW.GRAPH_FIELDS:
                return Val("tensor", base.dev, base.origin, text=self.text(node))  # `data.x`: a field of the graph
            if base.batch == MODEL_OUTPUT and not attr.startswith("_"):
                return Val("tensor", base.dev, base.origin, text=self.text(node))  # `outputs.logits`: a field of the output
            if base.batch == FIELDS and attr not in FW.ITERATOR_BATCH_NOT_FIELDS and not attr.startswith("_"):
                # `batch.src` of a torchtext batch: the field's tensor, or its (tensor, lengths) tuple
                return Val("tensor", base.dev, base.origin, batch=COLLATED, text=self.text(node))
            return UNKNOWN
        if instances_of_choice(base) is not None:
            return self.member_of_each(base, node)
        if base.kind in ("module", "obj") and base.obj is not None:
            obj = base.obj
            if hook_written(obj, attr):  # set by a module hook torch runs at each call of the hooked module
                return UNKNOWN
            if attr in obj.attrs:
                v = obj.attrs[attr]
                if v.kind in ("tensor", "module") and not v.text:
                    return v.with_text(self.text(node))
                return v  # containers are returned as is: writes through them must stick
            if attr == "training" and obj.training is not None:
                return Val("const", const=obj.training)
            if obj.cls is not None:
                found = obj.cls.method(attr)
                if found is not None:
                    fn, owner = found
                    decos = decorators(fn)
                    kind = method_kind(decos, "method")
                    if "property" in decos:
                        return self.call_function(FuncRef(fn, None, owner, "method"), [], {}, base, node)
                    return Val("func", func=FuncRef(fn, None, owner, kind), bound=base)
                added = self.added_member(obj.cls, attr)
                if added is not None:  # a function a class decorator set on the class: a method
                    f = added.func
                    return Val("func", func=FuncRef(f.node, f.closure, obj.cls, "method", f.unit), bound=base)
                table = self.class_table(obj.cls, attr)
                if table is not None:
                    return table
                const = self.class_constant(obj.cls, attr)
                if const is not None:
                    return const
                ref = class_reference(self, obj.cls, attr)
                if ref is not None:  # `self.distr_cls` where the class body says `distr_cls = Normal`
                    return ref
            if obj.kind == "module":
                if attr in ("module", "_orig_mod", "base_model"):
                    return base
                if attr in ("weight", "bias") and obj.dev is not None and obj.dev.known and not obj.cls:
                    return Val("tensor", obj.dev, obj.moved or obj.origin, text=self.text(node))
                if attr == "device" and obj.dev is not None and obj.dev.known:
                    return Val("device", obj.dev, obj.moved or obj.origin)
            if obj.kind == "optimizer" and attr == "state":
                self.optimizer_state_read(obj)
            if obj.kind == "accelerator":
                return self.accelerator_attr(obj, attr)
            if obj.kind == "lightning_fabric" and attr in FW.FABRIC_DEVICE and obj.dev is not None:
                dev = obj.dev.named(self.text(node)) if obj.dev.kind == "sym" else obj.dev
                return Val("device", dev, obj.origin)  # `fabric.device`
            if (component := sub_processor(obj, attr)) is not None:  # `processor.feature_extractor`
                return component
            if obj.kind == "host" and not attr.startswith("_"):  # `arr.T`: still host data
                return _token_ids() if obj.qual == LIST_ENCODING else host_data()
            return Val("attr", obj=obj, const=attr, bound=base) if obj.kind == "module" else UNKNOWN
        member = self.class_attribute(base, attr)
        if member is UNKNOWN and base.kind == "class" and isinstance(base.func, ClassInfo):
            # `TASKS.CLASSIFICATION`: a literal class attribute read through the class itself (an enum-like
            # namespace of names), on the same terms as through an instance
            return self.class_constant(base.func, attr) or member
        return member

    def member_of_each(self, choice: Val, node: ast.Attribute) -> Val:
        """`backend.vectorize` of one of several objects (`instances_of_choice`): their methods as a choice
        (a call runs each), else the join of their attributes over the paths."""
        vals = [self.e_Attribute_from(item, node) for item in choice.obj.items]
        # an object whose plain project class has no such member raises there: that path ends, the others go on
        vals = [v for v, item in zip(vals, choice.obj.items)
                if not (v.kind == "method" and lacks_member(item.obj.cls, node.attr))] or vals
        if len(vals) == 1 and vals[0].kind != "method":
            return vals[0]
        if all(v.kind == "func" or _handed_on(v, choice.obj.items) for v in vals):
            return Val("obj", obj=Obj("choice", items=vals))
        if any(v.kind == "method" for v in vals):
            # a member none of this run's code defines (a wrapper's `__getattr__` handing `.to()` to the model it
            # wraps, a library base's method): what it does to the objects is not followed, so from here on
            # nothing is said about them through this choice
            choice.obj.opaque = True  # type: ignore[attr-defined]
            return UNKNOWN
        out = vals[0]
        for v in vals[1:]:
            out = self.join_paths(out, v)
        return out

    def class_table(self, cls, attr: str) -> Val | None:
        """`self.METRICS[name]` where the class body says `METRICS = {"accuracy": accuracy, ...}`: a registry
        (dict / list / tuple display) the class holds, evaluated once in the file that defines the class.
        Other class-level values are left out: an instance attribute set where this run does not see it
        would hide them."""
        c, value = class_binding(cls, attr)
        if c is None or not isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
            return None
        return eval_in_home(self, c.home, value, "_class_tables")

    def class_constant(self, cls, attr: str) -> Val | None:
        """`cfg.device` where the class body says `device = "cuda"` and no instance sets its own: Python
        reads the class attribute through the instance. Only a literal, and only when no file this run
        reads stores `<anything>.device` (a config filled in at run time keeps it unknown)."""
        c, value = class_binding(cls, attr)
        if c is None or not isinstance(value, ast.Constant) or \
                not isinstance(value.value, (str, int, float, bool, type(None))) or \
                instance_may_store(self, c.home, attr, _stores_attr):
            return None
        return Val("const", const=value.value)

    def device_of(self, t: Val, node) -> Val:
        if t.dev is not None and t.dev.known:
            return Val("device", t.dev, t.origin)
        text = f"{self.text(node)}.device"
        key = ("attr", text, id(self.frame))
        return Val("device", Dev("sym", key=key, text=text, accel=False))

    def e_Subscript(self, node, frame):
        base = self.eval(node.value, frame)
        idx = self.eval(node.slice, frame)
        if base.kind == "qual" and isinstance(base.const, str) and f"{base.const}[]" in FW.LIBRARY_FACTORIES:
            return Val("qual", const=f"{base.const}[]")  # `sam_model_registry["vit_h"]`: one of a library's builders
        if base.kind == "unknown" and _reads_shape(node) and self.eval(node.value.value, frame).kind == "tensor":
            return Val("number")  # `x.shape[-1]`: a Python int
        if base.kind == "tensor":
            idx_vals = idx.obj.items if idx.kind == "obj" and idx.obj is not None and idx.obj.kind == "tuple" else [idx]
            for iv in idx_vals:
                # `base.scalar` here means "may be 0-dim" (`torch.tensor(np_array)`); a tensor index only
                # works on a tensor with dims, so it does not excuse the mix. A 0-dim index (`perm[i]`) does:
                # torch applies a 0-dim integer index as a Python int (`.item()`), on any device.
                if iv.kind == "tensor" and not iv.zero_dim and base.dev is not None and base.dev.is_cpu \
                        and definitely_differ(base.dev, iv.dev):
                    self.report_index(node, base, iv, frame)
                    return UNKNOWN  # the indexing raises: what follows from its result is not a second bug
            # `sigmas[i]` with a Python int (or an index not known to be a slice, list or tensor) may
            # be 0-dim (the base may be 1-D), and a 0-dim cpu tensor mixes with any device
            ints = _maybe_int_index(node.slice, idx_vals)
            n_idx = len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1
            if base.batch == COLLATED and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                # `batch["x"]` of a collated dict batch: one of its entries, a tensor where the batch is or another
                # object the transfer left alone (a pandas Index): still an entry of the batch
                return Val("tensor", base.dev, base.origin, text=self.text(node), batch=COLLATED)
            if ints and base.batch == COLLATED and n_idx == 1 and not base.scalar:
                # `batch[0]` of a DataLoader batch: one part of the collated (inputs, targets) structure, a
                # tensor with its batch dimension (or a structure of them), where the batch is
                return Val("tensor", base.dev, base.origin, text=self.text(node), batch=COLLATED)
            if ints and base.dims > n_idx:
                # `ids[i]` of an `ids.view(-1, 1)`: an int index drops one dimension of the ones it has
                return Val("tensor", base.dev, base.origin, scalar=False, text=self.text(node), dims=base.dims - n_idx)
            # a slice (or None) keeps (adds) a dimension, and a 0-dim tensor cannot be sliced: the item has dims
            scalar = (base.scalar or ints) and not _keeps_a_dim(node.slice)
            item = Val("tensor", base.dev, base.origin, scalar=scalar, text=self.text(node), dims=added_dims(node.slice))
            item.zero_dim = ints and base.dims == n_idx  # `perm[i]` of a 1-D randperm
            return item
        if base.kind == "qual" and base.const == "os.environ":
            return self.env_value(idx, self.text(node)) or \
                env_read(idx, None, Origin(span_of(node), f"from the environment at line {node.lineno}")) or UNKNOWN
        if base.kind == "qual" and base.const.endswith(".__dict__") and idx.kind == "const" and isinstance(idx.const, str):
            # `models.__dict__["resnet18"]`: a module's namespace entry is the attribute of that name
            return self.qual_attr(base.const[:-len(".__dict__")], idx.const)
        if base.kind == "qual" and base.const.endswith(".__dict__") and named_at_run_time(base.const[:-len(".__dict__")]):
            return Val("qual", const=base.const[:-len(".__dict__")] + ".?")  # `models.__dict__[args.arch]`
        entry = self.checkpoint_entry(base)
        if entry is not None:
            return entry
        if base.kind == "obj" and base.obj is not None:
            obj = base.obj
            if obj.kind in ("list", "tuple"):
                if idx.kind == "const" and isinstance(idx.const, int) and -len(obj.items) <= idx.const < len(obj.items):
                    return obj.items[idx.const]
                if isinstance(node.slice, ast.Slice):
                    return base
                if base.elem is not None:  # `[cast(b) for b in buf][i]`: any element of the list
                    return base.elem if not obj.items else self.join(self.elem_of(obj), base.elem)
                return self.elem_of(obj)
            if obj.kind == "dict":
                if idx.kind == "const" and idx.const in obj.keys:
                    return obj.keys[idx.const]
                return base.elem or UNKNOWN
            if obj.kind == "host" and idx.kind != "tensor":
                if obj.qual == LIST_ENCODING:
                    return _token_ids()
                item = host_data()
                item.dims = added_dims(node.slice)  # `arr[:, None]`: a numpy column has two dimensions
                return item
            if obj.kind in ("vision_dataset", "graph_dataset"):
                # one item: an (image, target) pair, a graph; a slice of a graph dataset is a dataset
                return base if isinstance(node.slice, ast.Slice) and obj.kind == "graph_dataset" else \
                    UNKNOWN if isinstance(node.slice, ast.Slice) else obj.attrs["sample"]
        if base.kind == "module" and is_module_dict(base.obj):
            return read_entry(base.obj, idx) or UNKNOWN
        if base.kind == "module" and base.obj is not None and base.obj.items:
            return self.elem_of(base.obj)
        return UNKNOWN

    def elem_of(self, obj: Obj) -> Val:
        items = obj.items
        if items and all(v.kind == "module" and v.obj is not None for v in items):
            first = items[0].obj
            if all(v.obj.dev == first.dev and v.obj.role == first.role and v.obj.cls is first.cls for v in items):
                return items[0]  # modules alike: one stands for all
        out = None
        for v in items:
            out = v if out is None else self.join(out, v)
        return out or UNKNOWN

    def e_Tuple(self, node, frame):
        return Val("obj", obj=Obj("tuple", items=[self.eval(e, frame) for e in node.elts]))

    def e_List(self, node, frame):
        items = [self.eval(e, frame) for e in node.elts]
        return Val("obj", obj=Obj("list", items=items))

    def e_Dict(self, node, frame):
        obj = Obj("dict")
        elem = None
        exact = True  # every key known: `"k" in d` is decided, comprehensions over it run per entry
        for k, v in zip(node.keys, node.values):
            vv = self.eval(v, frame)
            if k is None:
                if vv.kind == "obj" and vv.obj is not None and vv.obj.kind == "dict":
                    obj.keys.update(vv.obj.keys)
                    obj.batches = getattr(obj, "batches", []) + getattr(vv.obj, "batches", [])  # type: ignore[attr-defined]
                    # a spread dict that code not followed may have filled: the keys are not all known
                    exact = exact and getattr(vv.obj, "exact", False) and not getattr(vv.obj, "escaped", False)
                else:
                    if vv.kind == "tensor" and vv.batch:
                        # `{**enc, "max_new_tokens": n}`: the tokenizer's tensors (keys unknown) go in with the rest
                        obj.batches = getattr(obj, "batches", []) + [(vv, self.text(v))]  # type: ignore[attr-defined]
                    exact = False
                continue
            kv = self.eval(k, frame)
            if kv.kind == "const":
                obj.keys[kv.const] = vv
            else:
                exact = False
            elem = vv if elem is None else self.join(elem, vv)
        obj.exact = exact  # type: ignore[attr-defined]
        return Val("obj", obj=obj, elem=elem)

    @staticmethod
    def _items_receiver(it):
        """`d` of an iteration over `d.items()`."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items" \
                and not it.args and not it.keywords:
            return it.func.value
        return None

    def _dict_comp_per_entry(self, node, frame) -> Val | None:
        """`{k: f(v) for k, v in d.items() if ...}` over a dict whose keys are all known: one run of the
        body per entry, so each entry keeps its own device (an image on the cpu, a mask on the GPU)."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            return None
        gen = node.generators[0]
        src = self._items_receiver(gen.iter)
        if src is None or not (isinstance(gen.target, ast.Tuple) and len(gen.target.elts) == 2):
            return None
        d = self.eval(src, frame)
        if d.kind != "obj" or d.obj is None or d.obj.kind != "dict" or not getattr(d.obj, "exact", False) \
                or len(d.obj.keys) > 64:
            return None
        out = Obj("dict")
        exact = True
        for key, value in list(d.obj.keys.items()):
            sub = Frame(node, frame.parent, frame.call_node, closure=frame)
            self._frames.append(sub)
            sub.stmt_stack = frame.stmt_stack
            sub.owner = frame.owner
            self.assign(gen.target, Val("obj", obj=Obj("tuple", items=[Val("const", const=key), value])), sub, gen)
            keep = True
            for cond in gen.ifs:
                t = self.truth(cond, sub)
                if t is False:
                    keep = False
                    break
                if t is None:
                    exact = False
            if not keep:
                continue
            k = self.eval(node.key, sub)
            v = self.eval(node.value, sub)
            if k.kind == "const" and isinstance(k.const, (str, int)):
                out.keys[k.const] = v
            else:
                return None
        out.exact = exact  # type: ignore[attr-defined]
        return Val("obj", obj=out)

    def _comp(self, node, frame) -> tuple[Val, Val | None]:
        sub = Frame(node, frame.parent, frame.call_node, closure=frame)
        self._frames.append(sub)
        sub.stmt_stack = frame.stmt_stack
        sub.owner = frame.owner  # still inside the method (a submodule called here runs its forward)
        for gen in node.generators:
            it = self.eval(gen.iter, sub)
            each = self.per_item(it, gen.iter, sub) if len(node.generators) == 1 and not gen.ifs and \
                not isinstance(node, ast.DictComp) else None
            if each is not None:
                # over a few known elements (`[op(C) for op in OPS]`, `zip(weights, self._ops)`): the
                # element expression runs once per element, so each keeps its own value
                outs = []
                for item in each:
                    self.assign(gen.target, item, sub, gen)
                    outs.append(self.eval(node.elt, sub))
                per = Obj("list", items=outs)
                per.per_item = True  # type: ignore[attr-defined]
                return Val("obj", obj=per), None
            self.assign(gen.target, self.iter_elem(it, gen.iter, sub), sub, gen)
        if isinstance(node, ast.DictComp):
            self.eval(node.key, sub)
            return self.eval(node.value, sub), None
        return self.eval(node.elt, sub), None

    def e_ListComp(self, node, frame):
        elt, _ = self._comp(node, frame)
        if elt.kind == "obj" and elt.obj is not None and elt.obj.kind == "list" and elt.elem is None and \
                getattr(elt.obj, "per_item", False):
            return elt
        return Val("obj", obj=Obj("list"), elem=elt)

    e_GeneratorExp = e_ListComp

    e_SetComp = e_ListComp

    def e_DictComp(self, node, frame):
        per_entry = self._dict_comp_per_entry(node, frame)
        if per_entry is not None:
            return per_entry
        val, _ = self._comp(node, frame)
        return Val("obj", obj=Obj("dict"), elem=val)

    def e_IfExp(self, node, frame):
        test = self.eval(node.test, frame)
        # "cuda" if torch.cuda.is_available() else "cpu": the accelerator, named by the variable it is bound to
        cond = None if test.kind == "const" and test.text == CUDA_AVAILABLE else self.truth_of(test)
        if cond is True:
            return self.eval(node.body, frame)
        if cond is False:
            return self.eval(node.orelse, frame)
        none_side = _none_branch(node)
        if none_side is not None:
            # `x if x is None else x.cuda()`: where x is None the value is None, not a tensor; the other
            # branch alone says what a tensor here is
            return self.eval(node.orelse if none_side == "body" else node.body, frame)
        for side, other in ((node.body, node.orelse), (node.orelse, node.body)):
            if isinstance(side, ast.Constant) and side.value is None:
                # `batch["y"] if "y" in batch else None`: None is never a tensor (any use of it as one
                # raises), so wherever the value is used as a tensor it is the other branch's
                v = self.eval(other, frame)
                return v.or_none() if v.kind in ("tensor", "module") and not v.optional else v
        a, b = self.eval(node.body, frame), self.eval(node.orelse, frame)
        flag = availability_flag(test, a, b)
        if flag is not None:
            return flag
        if test.kind == "const" and test.text == CUDA_AVAILABLE and a.kind == b.kind == "const" \
                and isinstance(a.const, str) and isinstance(b.const, str) and a.const != b.const \
                and self.backend_spec(a) and self.backend_spec(b):
            # `"nccl" if torch.cuda.is_available() else "gloo"`: the process-group backend of a machine with a GPU
            return Val("obj", obj=Obj("backend_option", qual=a.const), text=self.text(node))
        # a choice of two devices, each a string ("cuda:0", "cpu") or a device (f"cuda:{i}", torch.device(...))
        da, db = _chosen_device(a), _chosen_device(b)
        if da is not None and db is not None and da != db:
            # `"cuda:1" if ... else "cpu"`: on the accelerator path it is that GPU (multi-GPU checks need the index)
            # (`side`: the GPU it is where CUDA is available, kept with the choice for the multi-GPU checks)
            side = next(d for d in (da, db) if d.kind == "cuda") if {da.kind, db.kind} == {"cuda", "cpu"} else None
            gpu = side.index if side is not None and side.key is None else None
            # the key keeps the accelerator's kind: on a CUDA machine `"cuda" if ... else "cpu"` is the GPU
            accel = next((d.kind for d in (da, db) if d.kind != "cpu"), None)
            return Val("device", Dev("sym", index=gpu, key=("ifexp", node.lineno, node.col_offset, accel),
                                     text=self.text(node), accel=True, gpu=side), Origin(span_of(node), f"chosen at line {node.lineno}"))
        legacy = _accelerator_tensor_type(a, b)
        if legacy is not None:
            # `torch.cuda.FloatTensor if use_cuda else torch.FloatTensor`: like a device chosen the same way,
            # the type that builds (and `.type()` converts) on the GPU where the program has one
            return legacy
        one_path = self.cpu_on_one_path(node, a, b, frame)
        if one_path is None and all(v.kind == "obj" and v.obj is not None and v.obj.kind == "dict" and
                                    not getattr(v.obj, "opaque", False) and getattr(v.obj, "exact", False) for v in (a, b)):
            # `{"num_workers": 1, "pin_memory": True} if args.cuda else {}` (spread into a call): a key both
            # write has their joined value, a key one writes may be absent (an unknown value: never a
            # device= it may not pass); no other key is passed
            keys = {k: (self.join(a.obj.keys[k], b.obj.keys[k]) if k in a.obj.keys and k in b.obj.keys else UNKNOWN)
                    for k in [*a.obj.keys, *(k for k in b.obj.keys if k not in a.obj.keys)]}
            obj = Obj("dict", keys=keys)
            obj.exact = False  # type: ignore[attr-defined]  # whether a key is there is not known
            return Val("obj", obj=obj, elem=UNKNOWN if keys else None)
        return one_path if one_path is not None else self.join_paths(a, b)

    def cpu_on_one_path(self, node: ast.IfExp, a: Val, b: Val, frame) -> Val | None:
        """`fast_dca(msa) if nrow > 1 else torch.zeros(n, n)`: one branch made here on the cpu, the other on a
        device, chosen by a test on sizes only (shapes, `len()`, constants: nothing that knows the device).
        Both paths run on a GPU machine, so on the cpu one the value is on the cpu: it stands for the choice
        (a miss where the other path mixes, never a false alarm)."""
        if a.kind != "tensor" or b.kind != "tensor":
            return None
        for cpu, other, when in ((a, b, "true"), (b, a, "false")):
            if cpu.dev is not None and cpu.dev.is_cpu and not cpu.scalar and cpu.origin is not None and \
                    cpu.origin.kind in ("factory", "legacy") and definitely_differ(CPU, other.dev) and \
                    _sizes_only(node.test, frame.node, self._is_number_name(frame)):
                org = Origin(cpu.origin.span, f"{cpu.origin.reason}, where `{self.text(node.test)}` is {when}",
                             cpu.origin.kind)
                return Val("tensor", CPU, org, text=self.text(node))
        return None

    def _is_number_name(self, frame):
        """A test for a parameter bound here to a Python number (a size passed down from the caller)."""
        def number(name: str) -> bool:
            v = frame.env.get(name)
            return v is not None and v.kind == "number"
        return number

    def e_BoolOp(self, node, frame):
        ternary = _and_or_ternary(node)
        if ternary is not None:
            # `(torch.cuda.is_available() and torch.device(...)) or torch.device("cpu")`: the old spelling of
            # `x if c else y` (x truthy: a device, a non-empty name), chosen the same way
            return self.e_IfExp(ternary, frame)
        vals = [self.eval(v, frame) for v in node.values]
        if all(v.kind == "tensor" for v in vals):
            return vals[-1]
        if isinstance(node.op, ast.Or):  # `device = device or torch.device("cuda")`: the first truthy value
            if len(vals) == 2 and is_env_read(vals[0]):
                return configured_join(vals[0], vals[1]) or UNKNOWN  # `os.getenv("DEV") or "cuda"`
            for i, (written, v) in enumerate(zip(node.values, vals)):
                if v.kind == "rank" and all(o.kind == "const" and type(o.const) is int for o in vals[i + 1:]):
                    # `os.environ.get("LOCAL_RANK") or 0`: the local rank, or 0 in a single process (its rank)
                    return v
                if v.kind == "const":
                    try:
                        if bool(v.const):
                            return v
                    except Exception:  # noqa: BLE001
                        return UNKNOWN
                    continue
                if v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple", "dict") and \
                        not v.obj.items and v.elem is None and not v.obj.keys and \
                        isinstance(written, (ast.List, ast.Tuple, ast.Dict)):
                    continue  # a written empty container is falsy
                if v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple", "dict") and \
                        (v.obj.items or v.elem is not None or v.obj.keys):
                    # `caches = caches or [None] * n`: a container that holds something is the value (an empty
                    # one contributes no element, so the elements it has are the only ones to follow)
                    return v
                # an object of a project class is truthy (`self.qcfg = qcfg or PTQConfig()` given a config)
                return v if v.kind in ("device", "module") or (v.kind == "obj" and self.truth_of(v)) else UNKNOWN
            return vals[-1]  # all known and falsy (`"ssim" in name or "grad" in name`): the last one
        if isinstance(node.op, ast.And):
            # `"class" in protocol and use_class_weights`, `exclude and k in exclude` (a non-empty list): the first
            # falsy value, else the last; unknown as soon as an operand's truth is
            for i, v in enumerate(vals[:-1]):
                truth = self.truth_of(v)
                if truth is None:
                    # `n_gpu > 1 and not isinstance(model, DataParallel)` with the second known false: false
                    # either way (the unknown operand, falsy, or the known false one)
                    return next((w for w in vals[i + 1:] if w.kind == "const" and self.truth_of(w) is False), UNKNOWN)
                if not truth:
                    return v
            return vals[-1]
        return UNKNOWN

    def e_UnaryOp(self, node, frame):
        v = self.eval(node.operand, frame)
        if isinstance(node.op, ast.Not):
            return Val("const", const=not v.const, text=v.text) if v.kind == "const" else UNKNOWN
        if v.kind == "const" and isinstance(v.const, (int, float)):
            return Val("const", const=-v.const if isinstance(node.op, ast.USub) else v.const)
        return v if v.kind == "tensor" else UNKNOWN

    def e_BinOp(self, node, frame):
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        return self.binop(node, left, right, frame, self.text(node.left), self.text(node.right))

    def binop(self, node, left: Val, right: Val, frame, ltext: str = "", rtext: str = "") -> Val:
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and ({left.kind, right.kind} & {"obj", "module"}):
            out = self.project_operator(node, node.op, left, right, isinstance(node, ast.AugAssign))
            if out is not None:
                return out  # a project class's `__add__` / `__imul__` ...
            out = repeated_sequence(getattr(node, "op", None), left, right) or \
                concatenated_sequence(getattr(node, "op", None), left, right, self.join)
            if out is not None:
                return out  # `(x,) * n`: the same items again; `a + b`: a's then b's
        if left.kind == "tensor" and right.kind == "tensor":
            if isinstance(getattr(node, "op", None), ast.MatMult):  # `@` takes no 0-dim operand
                return self.matmul(node, left, right, frame, ltext, rtext)
            if self.check_mix(node, [(left, ltext or left.text), (right, rtext or right.text)], frame):
                return after_mix((left, right))
            return self.result_of([left, right])
        if left.kind == "tensor":
            return Val("tensor", left.dev, left.origin, scalar=left.scalar)
        if right.kind == "tensor":
            return Val("tensor", right.dev, right.origin, scalar=right.scalar)
        if _is_host(left) and (_is_host(right) or right.kind == "const") or \
                _is_host(right) and left.kind == "const":
            return host_data()  # numpy arithmetic with numbers stays on the host
        if "number" in (left.kind, right.kind) and all(_is_number(v) for v in (left, right)):
            return Val("number")  # `(m - 1) / 2` of a Python int: a Python number, never a tensor
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            dev = self.percent_device(node, left, right)
            if dev is not None:
                return dev
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            dev = self.concat_device(node, left, right)
            if dev is not None:
                return dev
        if left.kind == right.kind == "const" and isinstance(node, ast.BinOp):
            try:
                if isinstance(left.const, (int, float, str)) and isinstance(right.const, (int, float, str)) and \
                        isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
                    return Val("const", const={ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
                                               ast.Mult: lambda a, b: a * b}[type(node.op)](left.const, right.const)
                               if not (isinstance(left.const, str) and isinstance(node.op, ast.Mult)) else None)
            except Exception:  # noqa: BLE001
                return UNKNOWN
        return UNKNOWN

    def matmul(self, node, left: Val, right: Val, frame, ltext: str, rtext: str) -> Val:
        """`left @ right`: both operands have a dimension; the product may be 0-dim only where both might be."""
        a, b = matmul_operand(left), matmul_operand(right)
        if self.check_mix(node, [(a, ltext or a.text), (b, rtext or b.text)], frame):
            return after_mix((a, b))
        out = self.result_of([a, b])
        out.scalar = left.scalar and right.scalar
        return out

    def result_of(self, vals: list[Val]) -> Val:
        """A tensor op's result: on the non-scalar operands' device."""
        main = [v for v in vals if v.kind == "tensor" and not (v.scalar and v.dev is not None and v.dev.is_cpu)] or \
            [v for v in vals if v.kind == "tensor"]
        dev = None
        origin = None
        for v in main:
            dev = join(dev, v.dev) if dev is not None else v.dev
            origin = origin or v.origin
        stale = next((v.origin for v in main if v.origin is not None and v.origin.kind == "attr" and v.dev == dev), None)
        # (an operand a module's move left behind, on the result's device, is why the result is there)
        return Val("tensor", dev, stale or origin, scalar=all(v.scalar for v in main))

    def e_Compare(self, node, frame):
        left = self.eval(node.left, frame)
        vals = [left] + [self.eval(c, frame) for c in node.comparators]
        tensors = [(v, self.text(n)) for v, n in zip(vals, [node.left] + node.comparators) if v.kind == "tensor"]
        if len(tensors) >= 2 and not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            if self.check_mix(node, tensors, frame):
                return after_mix([t for t, _ in tensors])
        c = _tensor_vs_strings(node, vals)
        if c is not None:
            return Val("const", const=c)
        if tensors and not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            # (`x is not None`: identity, a Python bool, never an elementwise tensor)
            return Val("tensor", self.result_of([t for t, _ in tensors]).dev, tensors[0][0].origin,
                       scalar=all(t.scalar for t, _ in tensors))
        c = self.indexed_vs_bare_cuda(node, vals)
        if c is None:
            c = compare_devices(node, vals)
        if c is None:
            c = self.const_compare(node, vals)
        return Val("const", const=c) if c is not None else UNKNOWN

    def indexed_vs_bare_cuda(self, node, vals) -> bool | None:
        """`t.device != torch.device("cuda")`: a tensor's (or a module's) device names its index ("cuda:1"),
        a device built from a bare "cuda" names none, and torch.device compares the index: never equal."""
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            return None
        sides = (node.left, node.comparators[0])
        for i in (0, 1):
            a, b = sides[i], sides[1 - i]
            if isinstance(a, ast.Attribute) and a.attr == "device" and vals[i].kind == "device" and \
                    isinstance(b, ast.Call) and len(b.args) == 1 and not b.keywords and \
                    isinstance(b.args[0], ast.Constant) and b.args[0].value == "cuda" and \
                    self.index.qualify(self.index.dotted(b.func) or "") == "torch.device":
                return isinstance(node.ops[0], ast.NotEq)
        return None

    def const_compare(self, node, vals) -> bool | None:
        if len(node.ops) != 1:
            return None
        op, a, b = node.ops[0], vals[0], vals[1]
        if isinstance(op, (ast.In, ast.NotIn)) and b.kind == "obj" and b.obj is not None and known_empty_dict(b.obj):
            return not isinstance(op, ast.In)  # `key in self._cache` of a cache still (or again) empty: any key
        if isinstance(op, (ast.In, ast.NotIn)) and a.kind == "const" and b.kind == "obj" and b.obj is not None \
                and b.obj.kind == "dict" and getattr(b.obj, "exact", False):
            try:
                res = a.const in b.obj.keys
            except TypeError:
                return None
            return res if isinstance(op, ast.In) else not res
        if isinstance(op, (ast.In, ast.NotIn)) and a.kind == "const" and isinstance(a.const, (str, int)) \
                and b.kind == "obj" and b.obj is not None and b.obj.kind in ("list", "tuple") and b.elem is None \
                and b.obj.items and all(v.kind == "const" for v in b.obj.items):
            res = any(v.const == a.const for v in b.obj.items)  # `key not in ("file_name", "meta")`
            return res if isinstance(op, ast.In) else not res
        if isinstance(op, (ast.In, ast.NotIn)) and a.kind == b.kind == "const" and isinstance(a.const, str) \
                and isinstance(b.const, str):
            res = a.const in b.const  # `"class" in protocol`, both known strings
            return res if isinstance(op, ast.In) else not res
        if isinstance(op, (ast.Is, ast.IsNot)):
            if a.kind == b.kind == "const" and all(isinstance(v.const, bool) or v.const is None for v in (a, b)):
                res = a.const is b.const  # True / False / None are singletons
                return res if isinstance(op, ast.Is) else not res
            if b.kind == "const" and b.const is None:
                if a.optional:
                    return None  # None on some path, a tensor / module on the others
                if a.kind == "const":
                    res = a.const is None
                elif a.kind in ("tensor", "module", "obj", "device", "func", "class", "rank"):  # (a rank is a number)
                    res = False
                else:
                    return None
                return res if isinstance(op, ast.Is) else not res
            if a.kind == b.kind == "qual" and isinstance(a.const, str) and a.const == b.const:
                return isinstance(op, ast.Is)  # `type(x) is torch.Tensor` of a tensor: one class object
            if _torch_vs_builtin_class(a, b) or _torch_vs_builtin_class(b, a):
                return isinstance(op, ast.IsNot)  # `type(x) is not list` of a tensor: torch.Tensor is no Python container
            return None
        if a.kind == b.kind == "qual" and isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(a.const, str) \
                and a.const == b.const:
            return isinstance(op, ast.Eq)  # one qualified name: the same object (`type(x) == torch.Tensor`)
        if a.kind == b.kind == "const" and isinstance(op, (ast.Eq, ast.NotEq)):
            try:
                res = a.const == b.const
            except Exception:  # noqa: BLE001
                return None
            return res if isinstance(op, ast.Eq) else not res
        if a.kind == b.kind == "const" and type(op) in _ORDER and all(
                isinstance(v.const, (int, float)) and not isinstance(v.const, bool) for v in (a, b)):
            return _ORDER[type(op)](a.const, b.const)
        return None

    def truth(self, node, frame) -> bool | None:
        return self.truth_of(self.eval(node, frame))

    def truth_of(self, v: Val) -> bool | None:
        if v.kind == "const":
            try:
                return bool(v.const)
            except Exception:  # noqa: BLE001
                return None
        if v.kind in ("module", "func", "class"):
            return True
        if v.kind == "device" and v.dev is not None and v.dev.kind in ("cpu", "cuda", "mps", "meta"):
            # `if device:` on a torch.device (or a device string, never empty): always true. A symbolic device
            # (an argument, a CLI option) may be None or "": unknown
            return True
        if v.kind == "obj" and v.obj is not None:
            if v.obj.kind in ("list", "tuple", "dict"):
                if v.obj.items or v.obj.keys:
                    return True
                return False if known_empty_dict(v.obj) else None
            if v.obj.kind == "instance":
                return True
        return None

    def per_key(self, node, frame) -> list | None:
        """The keys (or `(key, value)` pairs) of a loop over a dict whose keys are all known, one by one:
        `for k in batch.keys(): if k not in skip: batch[k] = batch[k].to(device)` stores each entry under
        its own key, so each keeps its own device (a joined key would blur every entry). Only a dict named
        by a plain name or attribute, or a constant item of one (`data[0]`, a collate_fn's first sample): reading
        it again has no effect; at most MAX_PER_ITEM keys."""
        method = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args and not node.keywords \
                and node.func.attr in ("keys", "items"):
            method, node = node.func.attr, node.func.value
        named = node.value if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) else node
        if not isinstance(named, (ast.Name, ast.Attribute)):
            return None
        d = self.eval(node, frame)
        obj = d.obj if d.kind == "obj" else None
        if obj is None or obj.kind != "dict" or not obj.keys \
                or len(obj.keys) > MAX_PER_ITEM or not all(isinstance(k, (str, int)) for k in obj.keys):
            return None
        keys = [Val("const", const=k) for k in obj.keys]
        values = list(obj.keys.values())
        if not getattr(obj, "exact", False):
            # the keys not known one by one run one more pass, with a key that is none of the known ones
            keys.append(Val("unknown", const=OtherKeys(frozenset(obj.keys))))
            values.append(d.elem or UNKNOWN)
        if method == "items":
            return [Val("obj", obj=Obj("tuple", items=[k, v])) for k, v in zip(keys, values)]
        return keys

    def per_item(self, it: Val, node, frame) -> list | None:
        """The elements of an iterable to run a loop body on one by one: known one by one (a list of
        lambdas, a ModuleList of unlike modules, a zip of such) where the join of the callables among
        them is unknown, which would make every call through the loop variable unknown (alike elements
        stand for each other, and one pass over them is enough; other values keep their join)."""
        each = _known_items(it)
        if each is None:
            return None
        joined = self.iter_elem(it, node, frame)
        if joined.kind == "unknown" or (joined.kind == "obj" and joined.obj is not None and joined.obj.kind == "choice"):
            return each if all(_per_item_kind(v) for v in each) else None
        if joined.kind == "obj" and joined.obj is not None and joined.obj.kind == "tuple":
            lost = [i for i, v in enumerate(joined.obj.items) if v.kind == "unknown"]
            parts = [v.obj.items for v in each if v.kind == "obj" and v.obj is not None and v.obj.kind == "tuple"]
            if lost and len(parts) == len(each) and all(len(p) == len(joined.obj.items) for p in parts) and \
                    all(_per_item_kind(p[i]) for p in parts for i in lost):
                return each
        return None

    @staticmethod
    def known_nonempty(it: Val) -> bool:
        """A loop over it runs its body at least once: a list / tuple / module container whose elements
        are known one by one (at most MAX_PER_ITEM of them) and are not none."""
        return _known_items(it) is not None and not (it.obj.kind == "iter" and not getattr(it.obj, "exact", False))

    def added_member(self, cls, attr: str) -> Val | None:
        """A function set on `cls` (or a base) by `setattr(cls, "name", f)`, e.g. in a class decorator."""
        added = self.__dict__.get("_class_extras")
        if not added:
            return None
        for c in (cls, *getattr(cls, "base_infos", ())):
            v = added.get(id(c), {}).get(attr)
            if v is not None:
                return v
        return None

    def e_NamedExpr(self, node, frame):
        v = self.eval(node.value, frame)
        self.assign(node.target, v, frame, node)
        return v

    def e_Starred(self, node, frame):
        return self.eval(node.value, frame)

    def e_Lambda(self, node, frame):
        # a function like any other: called, it evaluates its body with its parameters bound
        return Val("func", func=FuncRef(node, frame if frame is not self.module_frame else None, None, "function",
                                        self.unit))

    def _snapshot_origin(self, obj: Obj, node, frame: Frame, what: str) -> Origin:
        """Where copies of a not-yet-moved model's tensors were taken. Inside a same-file helper
        (an EMA class, say) that is the call, in the frame that holds the model, which took them."""
        site, f = node, frame
        home = getattr(obj, "assign_frame", None)
        while f is not None and f is not home and f.call_node is not None and f.parent is not None:
            site, f = f.call_node, f.parent
        if f is not home:  # the model's frame is not on this call chain: name the direct use
            site = node
        return Origin(span_of(site), f"{what} taken at line {site.lineno}, before the model was moved", "snapshot")

    def iter_elem(self, it: Val, node, frame) -> Val:
        if it.kind == "tensor" and it.batch:  # keys of a dict batch, or the tensors of a tuple batch
            return UNKNOWN
        if it.kind == "tensor":
            # a row of the tensor: 0-dim for a 1-D tensor, one dimension less for one known to have two or more
            if it.dims >= 2:
                return Val("tensor", it.dev, it.origin, dims=it.dims - 1)
            return Val("tensor", it.dev, it.origin, scalar=True)
        if it.kind == "params" and it.obj is not None:
            o = it.obj
            dev = o.dev if o.dev is not None or o.moved is not None else placed_so_far(o)  # (a module being built)
            if dev is None or not dev.known or getattr(o, "standalone", False):
                return UNKNOWN
            org = o.moved or o.origin
            if o.moved is None and node is not None:
                org = self._snapshot_origin(o, node, frame, f"`{self.text(node)}`")
            t = Val("tensor", dev, org, owner=o)
            return Val("obj", obj=Obj("tuple", items=[UNKNOWN, t])) if it.const == "named" else t
        if it.kind == "obj" and it.obj is not None:
            obj = it.obj
            if obj.kind in ("list", "tuple"):
                if it.elem is not None:
                    return it.elem
                return self.elem_of(obj)
            if obj.kind == "loader":
                return _fresh(obj.attrs.get("batch", UNKNOWN))
            if obj.kind == "iter":
                return it.elem or UNKNOWN
            if obj.kind == "dict":
                return UNKNOWN
            if obj.kind == "instance" and obj.cls is not None and not self.standalone:
                found = obj.cls.method("__iter__")  # a project iterable (a batch iterator): what its __iter__ yields
                if found is not None:
                    gen = self.call_function(FuncRef(found[0], None, found[1], "method"), [], {}, it, node)
                    if gen.kind == "obj" and gen.obj is not obj:
                        return as_batch(self.iter_elem(gen, None, frame), found, node)
                elif obj.items and derives_from_builtin_sequence(obj.cls):
                    # a `class X(list)` built from items: an element is one of them (a processor of
                    # LogitsProcessorList: each of unlike objects is a path the loop body runs)
                    uniq = [v for i, v in enumerate(obj.items) if not any(v.obj is u.obj for u in obj.items[:i])]
                    if 1 < len(uniq) <= MAX_CHOICES and all(v.kind == "obj" and v.obj is not None and
                                                            v.obj.kind == "instance" for v in uniq):
                        return Val("obj", obj=Obj("choice", items=uniq))
                    return it.elem if it.elem is not None else self.elem_of(obj)
                return UNKNOWN
        if it.kind == "module" and it.obj is not None and it.obj.items:
            return self.elem_of(it.obj)
        if it.kind == "obj" and it.elem is not None:
            return it.elem
        return UNKNOWN

    def e_Yield(self, node, frame):
        v = self.eval(node.value, frame) if node.value is not None else Val("const", const=None)
        self._yielded(v, frame)
        return UNKNOWN  # what `send()` passes in

    def e_YieldFrom(self, node, frame):
        self._yielded(self.iter_elem(self.eval(node.value, frame), None, frame), frame)
        return UNKNOWN

    def _yielded(self, v: Val, frame) -> None:
        while frame.closure is not None and isinstance(frame.node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            frame = frame.closure
        frame.yields = v if frame.yields is None else self.join(frame.yields, v)

    def e_Await(self, node, frame):
        return awaited(self.eval(node.value, frame))


def _reads_shape(node: ast.Subscript) -> bool:
    """`x.shape[i]` / `self.x.shape[-1]` (an index, not a slice) of a name or attribute chain."""
    v = node.value
    if not (isinstance(v, ast.Attribute) and v.attr == "shape") or isinstance(node.slice, ast.Slice):
        return False
    r = v.value
    while isinstance(r, ast.Attribute):
        r = r.value
    return isinstance(r, ast.Name)


def _is_number(v: Val) -> bool:
    """A Python number: one of unknown value (`x.shape[0]`) or an int / float constant."""
    return v.kind == "number" or (v.kind == "const" and isinstance(v.const, (int, float)) and not isinstance(v.const, bool))


def _stores_attr(index, attr: str) -> bool:
    """Whether a file stores `<x>.attr` (or names it in a `setattr`) anywhere."""
    stored = index.__dict__.get("_attr_stores")
    if stored is None:  # one pass over the file for every attribute asked about later
        stored = index.__dict__["_attr_stores"] = {
            n.attr if isinstance(n, ast.Attribute) else n.args[1].value
            for n in index.nodes
            if (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)) or
            (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr" and len(n.args) > 1
             and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str))}
    return attr in stored


def _fresh(batch: Val) -> Val:
    """Each iteration of a DataLoader gets a new container from its collate_fn: stores into one batch
    (`batch["x"] = batch["x"].to(d)`) do not carry over to the next."""
    if batch.kind != "obj" or batch.obj is None or batch.obj.kind not in ("dict", "list", "tuple"):
        return batch
    o = batch.obj
    copy = Obj(o.kind, origin=o.origin, items=list(o.items), keys=dict(o.keys))
    if hasattr(o, "exact"):
        copy.exact = o.exact  # type: ignore[attr-defined]
    return Val("obj", obj=copy, elem=batch.elem)


def _none_branch(node: ast.IfExp) -> str | None:
    """"body" / "orelse": the branch of `... if x is [not] None else ...` that is None (the constant, or
    `x` itself where the test says it is None); None when the test is not such a check."""
    t = node.test
    if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Is, ast.IsNot))
            and isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value is None
            and isinstance(t.left, ast.Name)):
        return None
    side, other = ("body", node.body) if isinstance(t.ops[0], ast.Is) else ("orelse", node.orelse)
    if (isinstance(other, ast.Name) and other.id == t.left.id) or (isinstance(other, ast.Constant) and other.value is None):
        return side
    return None


_SIZE_METHODS = ("size", "dim", "numel", "nelement", "ndimension")


def _sizes_only(test, scope, is_number_param=None) -> bool:
    """Whether a condition reads only sizes: constants, `x.shape` / `x.ndim` / `x.size(i)` / `len(x)`,
    local names every assignment of which (in `scope`) is such a size (`nrow, ncol = a3m.shape`), and
    parameters bound to a Python number (a size the caller passed)."""
    body = getattr(scope, "body", None)
    if not isinstance(body, list):
        return False
    params = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = scope.args
        params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs} | {p.arg for p in (a.vararg, a.kwarg) if p}

    def size_expr(e, names_ok: bool) -> bool:
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
        if isinstance(e, ast.Attribute):
            return e.attr in ("shape", "ndim")
        if isinstance(e, ast.Subscript):
            return size_expr(e.value, names_ok) and size_expr(e.slice, names_ok)
        if isinstance(e, ast.Call):
            f = e.func
            return (isinstance(f, ast.Name) and f.id == "len" and len(e.args) == 1 and not e.keywords) or \
                (isinstance(f, ast.Attribute) and f.attr in _SIZE_METHODS and
                 all(size_expr(x, names_ok) for x in e.args))
        if isinstance(e, ast.BinOp):
            return size_expr(e.left, names_ok) and size_expr(e.right, names_ok)
        if isinstance(e, ast.UnaryOp):
            return size_expr(e.operand, names_ok)
        if isinstance(e, ast.Compare):
            return size_expr(e.left, names_ok) and all(size_expr(c, names_ok) for c in e.comparators)
        if isinstance(e, ast.BoolOp):
            return all(size_expr(v, names_ok) for v in e.values)
        if isinstance(e, ast.Name):
            return names_ok and size_name(e.id)
        return False

    def size_name(name: str) -> bool:
        if name in params:
            return is_number_param is not None and is_number_param(name)
        values = []
        for n in ast.walk(scope):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and n is not scope:
                continue
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name) and t.id == name:
                        values.append(n.value)
                    elif isinstance(t, ast.Tuple) and any(isinstance(x, ast.Name) and x.id == name for x in t.elts):
                        values.append(n.value if isinstance(n.value, ast.Attribute) and n.value.attr == "shape" else None)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
                targets = [n.target] if not isinstance(n, ast.With) else [i.optional_vars for i in n.items]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets if t is not None) or \
                        any(isinstance(x, ast.Name) and x.id == name for t in targets if isinstance(t, ast.Tuple) for x in t.elts):
                    values.append(None)
        return bool(values) and all(v is not None and size_expr(v, False) for v in values)

    return size_expr(test, True)


def _chosen_device(v: Val) -> Dev | None:
    """The device one branch of `a if c else b` names: a device string or a device value."""
    if v.kind == "const" and isinstance(v.const, str):
        return concrete(v.const)
    if v.kind == "device" and v.dev is not None and v.dev.known:
        return v.dev
    return None


def _tensor_vs_strings(node, vals) -> bool | None:
    """A tensor compared with string constants is a plain Python bool, never true: `t == "random"` (Tensor.__eq__
    gives NotImplemented for a str, so Python falls back to identity) and `t in {"random", "last_sample"}` (a
    set hashes a tensor by identity; a list or tuple compares with ==). Options typed "a colour name or a tensor"
    (`background_color`) take the tensor's branch."""
    if len(node.ops) != 1 or vals[0].kind != "tensor":
        return None
    op, right = node.ops[0], node.comparators[0]
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return isinstance(op, ast.NotEq)
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Set, ast.List, ast.Tuple)) and right.elts \
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in right.elts):
        return isinstance(op, ast.NotIn)
    return None


def _accelerator_tensor_type(a: Val, b: Val) -> Val | None:
    """Of the cuda and the cpu form of one legacy tensor type (`torch.cuda.LongTensor`, `torch.LongTensor`),
    the cuda one; None for any other pair."""
    if a.kind != "qual" or b.kind != "qual" or not isinstance(a.const, str) or not isinstance(b.const, str):
        return None
    for gpu, cpu in ((a, b), (b, a)):
        if gpu.const.startswith("torch.cuda.") and cpu.const == "torch." + gpu.const[len("torch.cuda."):] and \
                cpu.const[len("torch."):] in T.LEGACY_CPU_TYPES:
            return gpu
    return None


MAX_PER_ITEM = 8
_CALLABLE = ("func", "module", "class", "partial")


def _torch_vs_builtin_class(a: Val, b: Val) -> bool:
    """`a` names a torch class (`type(x)` of a tensor is torch.Tensor) and `b` a builtin container or scalar
    class: two different classes."""
    return a.kind == b.kind == "qual" and isinstance(a.const, str) and isinstance(b.const, str) \
        and a.const.startswith("torch.") and b.const in _BUILTIN_CLASSES


_BUILTIN_CLASSES = frozenset("builtins." + n for n in ("list", "tuple", "dict", "set", "str", "int", "float", "bool"))


def _per_item_kind(v: Val) -> bool:
    """An element a loop body runs on one by one: a callable, or a known constant (`for name in
    ["mse", "ssim"]`: a test `"ssim" in name` or a registry lookup `LOSSES[name]` is decided per name,
    where the join of unlike constants is unknown), or an object of a project class (`for obs in (self.w_obs,
    self.a_obs): obs.compute_qparams()`: each object's method runs on it and updates its own state, where the
    join of two objects is unknown and would update none)."""
    return v.kind in _CALLABLE or v.kind == "const" and isinstance(v.const, (str, int, float, bool)) \
        or v.kind == "obj" and v.obj is not None and v.obj.kind == "instance" and v.obj.cls is not None


def _known_items(it: Val) -> list | None:
    """The elements of an iterable known one by one (a literal list of functions, a ModuleList of
    unlike modules, a zip of such), at most MAX_PER_ITEM; None otherwise."""
    if it.kind == "obj" and it.obj is not None and 0 < len(it.obj.items) <= MAX_PER_ITEM and (
            (it.obj.kind in ("list", "tuple") and it.elem is None) or getattr(it.obj, "zipped", False)):
        return list(it.obj.items)
    if it.kind == "module" and it.obj is not None and it.obj.cls is None and 0 < len(it.obj.items) <= MAX_PER_ITEM:
        return list(it.obj.items)
    return None


def _is_host(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind == "host"


def _maybe_int_index(sl: ast.expr, idx_vals) -> bool:
    """Every index is an int, a tensor that may be 0-dim (an element of a 1-D tensor: `alphas[t]` for `t` in
    `timesteps` indexes like an int, dropping one dimension) or unknown (never a slice, None, Ellipsis, list)."""
    parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    if any(isinstance(p, (ast.Slice, ast.List, ast.ListComp, ast.Starred)) or
           (isinstance(p, ast.Constant) and not isinstance(p.value, int)) for p in parts):
        return False
    return all(v.kind == "unknown" or (v.kind == "const" and isinstance(v.const, int) and not isinstance(v.const, bool))
               or (v.kind == "tensor" and v.scalar and not v.dims and not v.batch) for v in idx_vals)


def _handed_on(v: Val, items: list) -> bool:
    """A member a wrapper's `__getattr__` handed on: a method of the object it wraps, not of the wrapper itself."""
    return v.kind == "method" and v.bound is not None and v.bound.kind == "module" and all(v.bound is not i for i in items)


def _keeps_a_dim(sl: ast.expr) -> bool:
    """`x[c, :, :]`, `x[:, None]`: an index with a slice or None gives a tensor with at least one dimension
    (slicing a 0-dim tensor raises), never a 0-dim value that mixes with any device."""
    parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    return any(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value is None) for p in parts)


def _is_instance(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind == "instance" and v.obj.cls is not None \
        and not getattr(v.obj, "standalone", False)


def instances_of_choice(v: Val) -> list[Val] | None:
    """The objects a choice made by `_instance_choice` stands for; None for any other value."""
    if v.kind == "obj" and v.obj is not None and v.obj.kind == "choice" and v.obj.items and \
            not getattr(v.obj, "opaque", False) and all(_is_instance(i) for i in v.obj.items):
        return v.obj.items
    return None


def _modules_of(v: Val) -> list[Val]:
    """The modules `v` is: itself, or the items of a choice of modules (empty for anything else)."""
    if v.kind == "module" and v.obj is not None and not v.obj.dispatched:
        return [v]
    if v.kind == "obj" and v.obj is not None and v.obj.kind == "choice" and v.obj.items and \
            all(i.kind == "module" and i.obj is not None for i in v.obj.items):
        return list(v.obj.items)
    return []


def modules_of_choice(v: Val) -> list[Val] | None:
    """The models a choice made by `join_alternatives` stands for; None for any other value."""
    return _modules_of(v) if v.kind == "obj" and _modules_of(v) else None


def _token_ids() -> Val:
    """An entry of a BatchEncoding of lists (`enc.input_ids`, `enc["attention_mask"]`): lists of Python ints,
    never a 0-dim value; `torch.tensor()` of it is a cpu tensor like any other."""
    return Val("obj", obj=Obj("list", qual="token ids"))


def _and_or_ternary(node: ast.BoolOp) -> ast.IfExp | None:
    """`c and x or y` as `x if c else y`, where x is always truthy: a string constant that is not empty or
    a `torch.device(...)` call (a device object is truthy)."""
    if not (isinstance(node.op, ast.Or) and len(node.values) == 2):
        return None
    first = node.values[0]
    if not (isinstance(first, ast.BoolOp) and isinstance(first.op, ast.And) and len(first.values) == 2):
        return None
    x = first.values[1]
    truthy = (isinstance(x, ast.Constant) and isinstance(x.value, str) and x.value) or \
        (isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute) and x.func.attr == "device"
         and isinstance(x.func.value, ast.Name) and x.func.value.id == "torch")
    if not truthy:
        return None
    return ast.copy_location(ast.IfExp(test=first.values[0], body=x, orelse=node.values[1]), node)
