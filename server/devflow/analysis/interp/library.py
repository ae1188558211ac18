"""Calls of library functions by qualified name: torch factories and ops, torch.nn modules,
optimizers, DataLoader, builtins, transformers / torchvision / timm loaders, copy.deepcopy.
"""

from __future__ import annotations

import ast
import numbers

from devflow.analysis import framework_api as FW, torch_api as T
from devflow.analysis.findings import Finding
from devflow.analysis.lattice import CPU, CUDA, TOP, Dev, concrete, join
from devflow.analysis.interp.module_dicts import entries_from_dict, is_module_dict
from devflow.analysis.interp.dp_nested import wrapper_isinstance
from devflow.analysis.interp.module_isinstance import derives_from as _derives_from, module_isinstance
from devflow.analysis.interp.collate import COLLATE_FUNCTIONS, collated_samples
from devflow.analysis.interp.loader_index import loader_index
from devflow.analysis.values import COLLATED, COPY_MOVED, DEVICE_CONFIGURED, FIELDS, GRAPH, SCATTERING_WRAPPER, after_mix, host_data, UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.expressions import _is_number
from devflow.analysis.interp.frames import span_of, FuncRef, decorators, method_kind, MODEL_BUILDER_PREFIXES, named_at_run_time
from devflow.analysis.interp.class_bases import any_base
from devflow.analysis.interp.modules import derives_from_optimizer, tree_device
from devflow.analysis.interp.tensors import values_indices
from devflow.analysis.interp.matmul_operands import MATMUL, matmul_operand
from devflow.analysis.interp.clamp_bounds import CLAMP_OPS, clamp_operand
from devflow.analysis.interp.module_copies import copied_device, deep_copy_instance, is_project_instance
from devflow.analysis.interp.optimizer_restore import restored_by_library
from devflow.analysis.interp.transpose import columns_of, exact_sequence, zip_columns
from devflow.analysis.interp.dict_copies import copied_dict





# The numeric ABCs of the running interpreter's stdlib (`numbers.Number` ...), by qualified name: a Python literal is
# an instance of some of them (`isinstance(0.5, Number)`), decided as Python decides it.
_NUMBER_ABCS = {f"numbers.{n}": getattr(numbers, n) for n in numbers.__all__}


class Library:
    """Library calls, modelled from the tables in `devflow.analysis.torch_api`."""

    def call_qual(self, node, q: str, args, kwargs, frame) -> Val:
        mg = self.multigpu_call(node, q, args, kwargs, frame)
        if mg is None:
            mg = self.record_call(node, q, args, kwargs)
        if mg is None:
            mg = self.thread_call(node, q, args, kwargs, frame)
        if mg is not None:
            return mg
        if q in FW.OPTIMIZER_RESTORERS and not self.standalone:
            restored_by_library(self, node, q, args, kwargs, frame)
        if q.startswith("builtins."):
            return self.call_builtin(node, q[9:], args, kwargs, frame)
        if q == "collections.OrderedDict":
            return dict_of_pairs(args, kwargs) or UNKNOWN
        if q in ("torch.autograd.Variable", "torch.autograd.variable.Variable") and args and args[0].kind == "tensor":
            return args[0]  # since torch 0.4 a Variable is the tensor it wraps, on its device
        if q.startswith("torch."):
            return self.call_torch(node, q, args, kwargs, frame)
        if q.startswith("numpy.") and not any(a.kind == "tensor" for a in args):
            return host_data()  # numpy computes on the host: what it returns never lives on a device
        if q.split(".", 1)[0] in FW.HOST_PACKAGES and not any(a.kind == "tensor" for a in args):
            return host_data()  # a package that never imports torch (PIL): its images live on the host
        if FW.SAME_DEVICE_FUNCTIONS.get(q) == "Tensor":
            return _same_device_result(q, args, kwargs)
        factory = T.DEVICE_FACTORIES.get((q.split(".", 1)[0], q.rsplit(".", 1)[-1])) if "." in q else None
        if factory is not None:
            return self.library_factory(node, q, factory, args, kwargs)
        if (q.split(".", 1)[0], q.rsplit(".", 1)[-1]) in FW.ITERABLE_WRAPPERS and (args or "iterable" in kwargs):
            # `tqdm(loader)`: iterating the bar yields the loader's batches
            return Val("obj", obj=Obj("iter"), elem=self.iter_elem(args[0] if args else kwargs["iterable"], None, frame))
        if q in FW.LIGHTNING_TRAINERS:
            trainer = Obj("lightning_trainer", qual=q)
            trainer.attrs["process_group"] = self.lightning_process_group(node, kwargs)
            trainer.attrs["callbacks"] = kwargs.get("callbacks")
            trainer.attrs["max_epochs"] = kwargs.get("max_epochs")
            return Val("obj", obj=trainer)
        if q in FW.FABRIC_CLASSES:
            fabric = Obj("lightning_fabric", qual=q, dev=self.fabric_device(node, kwargs),
                         origin=Origin(span_of(node), f"the Fabric of line {node.lineno}"))
            fabric.attrs["process_group"] = self.lightning_process_group(node, kwargs, fabric=True)
            return Val("obj", obj=fabric)
        if q in FW.LIGHTNING_GROUP_STRATEGY_CLASSES or q in FW.FABRIC_GROUP_STRATEGY_CLASSES:
            return Val("obj", obj=Obj("lightning_strategy", qual=q, attrs={"backend": kwargs.get("process_group_backend")}))
        if q in FW.HF_TRAINERS:
            return self.new_hf_trainer(node, q, args, kwargs, frame)
        if q in FW.TOKENIZER_CONSTRUCTORS:
            return Val("obj", obj=Obj("tokenizer", qual=q))
        if q in FW.LIBRARY_FACTORIES and not q.startswith(MODEL_BUILDER_PREFIXES):
            # (torchvision's model builders keep their own path below: default device, named at run time)
            return self.library_factory_call(node, q, args, kwargs)
        if q in FW.ACCELERATOR_CLASSES:
            return self.new_accelerator(node, kwargs)
        owner, _, meth = q.rpartition(".")
        if q in FW.DEVICE_ITERATORS or (owner in FW.DEVICE_ITERATORS and meth == FW.DEVICE_ITERATORS[owner]["splits"]):
            return self.device_iterator(node, q, args, kwargs)
        last = q.rsplit(".", 1)[-1]
        if q.startswith("torchvision.transforms.") and last[:1].isupper():
            return self.new_transform(node, last, args)
        if q in FW.GRAPH_DATASETS:
            return self.new_graph_dataset(node, q)
        if q.startswith("torchvision.datasets.") and last[:1].isupper():
            return self.new_vision_dataset(node, last, kwargs)
        if q in FW.DATASET_LOADERS:  # a library's loader collating a dataset's items into one batch object
            loader = self.dataloader(node, args, kwargs, frame)
            b = loader.obj.attrs["batch"]
            if b.kind == "tensor" and b.batch:  # collated by the library: a Batch object, moved in place
                loader.obj.attrs["batch"] = Val("tensor", b.dev, b.origin, batch=GRAPH)
            return loader
        if q.startswith("transformers.") and last in FW.GENERATION_CPU_STATE:
            return self.library_callback(node, last, args, kwargs)
        if q.startswith("transformers.") and last in FW.GENERATION_CALLBACK_LISTS:
            return args[0] if args and args[0].kind == "obj" else UNKNOWN  # a list that calls each callback it holds
        if q in FW.METRIC_CLASSES:
            return self.new_library_metric(node, q, kwargs)
        if q in FW.STATEFUL_LIBRARY_MODULES:
            # its buffers are made where the default device is (the cpu): it must be moved like a model
            dev = self.default_dev if self.default_dev.known else TOP
            return Val("module", obj=Obj("module", qual=q, dev=dev, origin=Origin(span_of(node), f"created at line {node.lineno}"),
                                         created_line=node.lineno))
        if q == "importlib.import_module" and len(args) == 1 and "package" not in kwargs and args[0].kind == "const" \
                and isinstance(args[0].const, str) and args[0].const and not args[0].const.startswith("."):
            # `self._torch = importlib.import_module("torch")`: the module itself, as `import torch` names it
            return self.qual_value(args[0].const)
        if q == "dataclasses.field":
            # `field(default=...)` / `field(default_factory=F)` (also returned by a helper): a field declaration;
            # the dataclass's generated __init__ binds the default, or calls the factory, per instance
            decl = Obj("dataclass_field")
            decl.keys = {k: v for k, v in kwargs.items() if k in ("default", "default_factory")}
            return Val("obj", obj=decl)
        if q == "functools.partial" and args and args[0].kind in ("func", "class", "partial", "qual"):
            return Val("partial", func=args[0], const=(list(args[1:]), dict(kwargs)))
        if q == "argparse.ArgumentParser":
            return Val("obj", obj=Obj("argparser", qual=q))
        if q.startswith("peft.") and last in _PEFT_WRAPPERS and args and args[0].kind == "module":
            # PEFT wraps the model it is given (same parameters, same placement)
            return args[0]
        if last == "from_pretrained" or last == "from_config":
            owner = q.rsplit(".", 2)[-2] if q.count(".") >= 1 else ""
            if "Tokenizer" in owner or "Processor" in owner or owner.endswith("FeatureExtractor"):
                # preprocessing: called with return_tensors="pt" it gives cpu tensors
                return Val("obj", obj=Obj("tokenizer", qual=q))
            if owner.endswith(("Scheduler", "Config", "GenerationConfig")):
                return UNKNOWN  # no weights: diffusers schedulers, configs, feature extractors are not modules
            dm = kwargs.get("device_map")
            obj = Obj("module", qual=q, origin=Origin(span_of(node), f"loaded at line {node.lineno}"))
            dm_node = next((k.value for k in node.keywords if k.arg == "device_map"), None)
            quant = next((k for k in ("load_in_8bit", "load_in_4bit") if k in kwargs and kwargs[k].kind == "const"
                          and kwargs[k].const is True), None)
            if dm is not None and _dispatches(dm, dm_node):
                # Only a model spread over several devices or offloaded is dispatched; a quantized
                # model without device_map, or device_map=0 / "cuda:0" / {"": 0}, sits on one device.
                obj.dispatched = True
                obj.dev = TOP
                obj.origin = Origin(span_of(node), f"loaded with device_map={self.text(dm_node) if dm_node is not None else repr(dm.const)}"
                                    + (f" ({quant or 'quantization_config'})" if quant or "quantization_config" in kwargs else "")
                                    + f" at line {node.lineno}")
            elif dm is None and (quant is not None or _bnb_config(node, self)):
                # bitsandbytes without device_map: transformers loads it whole onto the current GPU, and
                # accelerate attaches no hooks on one device: a plain cuda model (cpu inputs fail)
                obj.dev = CUDA
                obj.origin = Origin(span_of(node), f"loaded {quant or 'bitsandbytes-quantized'} onto the current GPU "
                                                   f"at line {node.lineno}")
            elif dm is not None and quant is None and "quantization_config" not in kwargs \
                    and (one := self._one_device_map(dm)) is not None:
                # device_map naming one device (`"cuda"`, `0`, `{"": torch.cuda.current_device()}`): accelerate
                # puts the whole model there and attaches no hooks (it does for a quantized model), so inputs
                # must be moved to it
                obj.dev = one
                obj.origin = Origin(span_of(node), f"loaded onto {one.render()} with device_map="
                                                   f"{self.text(dm_node) if dm_node is not None else repr(dm.const)} "
                                                   f"at line {node.lineno}")
            elif dm is not None or quant is not None or "quantization_config" in kwargs:
                obj.dev = TOP
            elif q.startswith(("transformers.", "diffusers.")) and not any(k.arg is None for k in node.keywords):
                obj.dev = CPU
                obj.origin = Origin(span_of(node), f"loaded on cpu at line {node.lineno}")
            else:
                obj.dev = TOP
            return Val("module", obj=obj)
        if (q.split(".", 1)[0], last) in T.LIBRARY_MODEL_CLASSES and not any(a.kind == "module" for a in args):
            # a library model class constructed directly (`BertForMaskedLM(config)`): fresh weights where the default
            # device is (a class given a model, such as peft's PeftModel, wraps it instead)
            return Val("module", obj=Obj("module", qual=q, dev=self.default_dev if self.default_dev.known else TOP,
                                         origin=Origin(span_of(node), f"created at line {node.lineno}"),
                                         created_line=node.lineno, training=True))
        if q.startswith(MODEL_BUILDER_PREFIXES) and (last[:1].islower() or last[:1].isupper() or last == "?"):
            # (`?`: `models.__dict__[args.arch]()`, a builder of that namespace named at run time: each builds
            # its model where the default device is, as every named one does)
            if "__opaque__" in kwargs or _given_a_module(args, kwargs):
                # a function of the namespace given a model (`create_feature_extractor(model, ...)`,
                # `get_graph_node_names(model)`) traces or inspects it: no fresh weights on the default device
                return UNKNOWN
            return Val("module", obj=Obj("module", qual=q, dev=self.default_dev if self.default_dev.known else TOP,
                                         origin=Origin(span_of(node), f"created at line {node.lineno}"),
                                         created_line=node.lineno, training=True))
        if q == "copy.deepcopy" and args and args[0].kind == "module" and args[0].obj is not None:
            src = args[0].obj
            dev = copied_device(src)
            if dev is None or not dev.known or getattr(src, "standalone", False):
                return UNKNOWN
            reason = (f"copied by `{self.text(node)}` at line {node.lineno}" +
                      (" before the model was moved" if src.moved is None else ""))
            return Val("module", obj=Obj("module", qual=src.qual, dev=dev, origin=Origin(span_of(node), reason),
                                         created_line=node.lineno, training=src.training, role="copy"))
        if q == "copy.deepcopy" and args and is_project_instance(args[0]):
            return deep_copy_instance(args[0])  # `agent_config = deepcopy(self.config)`: the same settings
        # (`prepare_model_for_int8_training`: peft's earlier name of prepare_model_for_kbit_training)
        if last in ("get_peft_model", "prepare_model_for_kbit_training", "prepare_model_for_int8_training") \
                and args and args[0].kind == "module":
            args[0].obj.peft = True
            return args[0]
        if last[:1].isupper():
            _held_by_unknown_class(node, q, [*args, *kwargs.values()])
        return UNKNOWN

    def call_builtin(self, node, name: str, args, kwargs, frame) -> Val:
        if name == "enumerate" and args:
            return Val("obj", obj=Obj("iter"), elem=Val("obj", obj=Obj("tuple", items=[UNKNOWN, self.iter_elem(args[0], None, frame)])))
        if name == "zip" and len(node.args) == 1 and isinstance(node.args[0], ast.Starred):
            cols = zip_columns(self, node, frame, args if "__opaque__" not in kwargs else ())
            if cols is not None:
                return cols
        if name == "zip" and args:
            it = Obj("iter")
            elems = [self.iter_elem(a, None, frame) for a in args]
            known = [_listed(a) for a in args]
            sizes = {len(k) for k in known if k is not None}
            if len(sizes) == 1 and "__opaque__" not in kwargs:  # zip(weights, self._ops): one tuple per known element
                n = sizes.pop()
                it.items = [Val("obj", obj=Obj("tuple", items=[k[i] if k is not None else e for k, e in zip(known, elems)]))
                            for i in range(n)]
                it.zipped = True  # type: ignore[attr-defined]
                it.exact = all(k is not None for k in known)  # type: ignore[attr-defined]  # its length is known
            return Val("obj", obj=it, elem=Val("obj", obj=Obj("tuple", items=elems)))
        if name == "map" and len(args) == 2 and args[0].kind == "qual" and args[0].const in ("builtins.list", "builtins.tuple") \
                and columns_of(args[1]) is not None:  # `graphs, labels = map(list, zip(*samples))`: each column a list
            kind = args[0].const.split(".")[1]
            return Val("obj", obj=exact_sequence([Val("obj", obj=Obj(kind), elem=c.elem) for c in columns_of(args[1])]))
        if name in ("list", "tuple") and args and columns_of(args[0]) is not None:
            return Val("obj", obj=exact_sequence(columns_of(args[0]), kind=name))  # `list(zip(*rows))`: the columns
        if name in ("list", "tuple", "sorted", "reversed", "iter") and args:
            el = self.iter_elem(args[0], None, frame)
            return Val("obj", obj=Obj("list"), elem=el)
        if name == "filter" and len(args) == 2 and args[1].kind == "params":  # filter(lambda p: p.requires_grad, ...)
            return Val("obj", obj=Obj("iter"), elem=self.iter_elem(args[1], None, frame))
        if name == "next" and args:
            a = args[0]
            if a.kind == "params":
                o = a.obj
                if o is not None and o.dev is not None and o.dev.known and not getattr(o, "standalone", False):
                    return Val("tensor", o.dev, o.moved or o.origin)
                return UNKNOWN
            return self.iter_elem(a, None, frame)
        if name == "super":
            return self.super_of(frame, args)
        if name == "setattr" and len(args) == 3 and args[0].kind == "class" and args[1].kind == "const" and \
                isinstance(args[1].const, str) and args[2].kind == "func" and args[2].func is not None:
            # `setattr(cls, "sample_elbo", sample_elbo)` (a class decorator adding methods): the class has it now
            self.__dict__.setdefault("_class_extras", {}).setdefault(id(args[0].func), {})[args[1].const] = args[2]
            return Val("const", const=None)
        if name == "setattr" and len(args) == 3 and len(node.args) == 3 and args[0].kind in ("module", "obj") \
                and args[0].obj is not None:
            key = args[1].const if args[1].kind == "const" and isinstance(args[1].const, str) else None
            child = args[0].kind == "module" and args[2].kind == "module"
            if child or (key is not None and key.isidentifier()):
                # the attribute store `parent.<name> = value`: a name known here (a helper's parameter bound to
                # a literal), or a submodule registered under any name (`setattr(parent, child_name,
                # LoRALinear(...))`; a computed name stays unknown, as a name)
                attr = key if key is not None else f"<{self.text(node.args[1])}>"
                target = ast.copy_location(ast.Attribute(value=node.args[0], attr=attr, ctx=ast.Store()), node)
                if child:
                    target.end_lineno, target.end_col_offset = node.end_lineno, node.end_col_offset
                st = node if child or not frame.stmt_stack else frame.stmt_stack[-1]
                self.set_attr(args[0], target, args[2], frame, st, value_node=node.args[2])
                return Val("const", const=None)
        if name == "type" and len(args) == 1 and args[0].kind == "tensor" and not args[0].batch:
            # (a DataLoader batch may be a list or a tuple of tensors: its type is not known)
            # `type(x.data)(*shape)`: the class of any tensor is torch.Tensor, whose constructor builds on the cpu
            return Val("qual", const="torch.Tensor")
        if name == "dict":
            pairs = dict_of_pairs(args, kwargs)
            if pairs is not None:  # dict([("a", A), ("b", B)]): every key known
                return pairs
            d = Obj("dict")
            d.keys = {k: v for k, v in kwargs.items() if k != "__opaque__"}
            if args or "__opaque__" in kwargs:
                d.opaque = True  # type: ignore[attr-defined]
            if args and args[0].kind == "params" and args[0].const == "named":  # dict(model.named_parameters())
                pair = self.iter_elem(args[0], None, frame)
                if pair.kind == "obj" and pair.obj is not None and len(pair.obj.items) == 2:
                    return Val("obj", obj=d, elem=pair.obj.items[1])
            return Val("obj", obj=d)
        if name == "isinstance" and len(args) == 2 and args[0].kind == "tensor" and not args[0].batch:
            # `isinstance(x, list)` of one tensor (not a DataLoader batch, which may be a list): no Python container
            types = args[1].obj.items if args[1].kind == "obj" and args[1].obj is not None and args[1].obj.kind == "tuple" \
                else [args[1]]
            if types and all(t.kind == "qual" and t.const in ("builtins.list", "builtins.tuple", "builtins.dict",
                                                                "builtins.set", "builtins.str") for t in types):
                return Val("const", const=False)
            dev = args[0].dev
            if types and dev is not None and dev.known and (not dev.is_cpu or _torch_made(args[0])) and \
                    all(t.kind == "qual" and t.const in ("numpy.ndarray", "torch.Tensor") for t in types):
                # `isinstance(coord, np.ndarray)` of a tensor on an accelerator: a numpy array never is one
                return Val("const", const=any(t.const == "torch.Tensor" for t in types))
            return UNKNOWN
        if name == "isinstance" and len(args) == 2 and args[0].kind == "obj" and args[0].obj is not None \
                and args[0].obj.kind in ("list", "tuple", "dict"):
            # `isinstance(features, torch.Tensor)` of a list / tuple / dict (an OrderedDict of feature maps): a
            # Python container is no torch object
            types = args[1].obj.items if args[1].kind == "obj" and args[1].obj is not None and args[1].obj.kind == "tuple" \
                else [args[1]]
            if types and all(t.kind == "qual" and isinstance(t.const, str) and t.const.startswith("torch.") for t in types):
                return Val("const", const=False)
        if name == "isinstance" and len(args) == 2 and args[0].kind == "obj" and args[0].obj is not None \
                and args[0].obj.kind in ("list", "tuple", "dict") and not args[0].obj.qual:
            # `isinstance(alpha, list)` of a list / tuple / dict the code built (a literal, list(...)): decided
            types = args[1].obj.items if args[1].kind == "obj" and args[1].obj is not None and args[1].obj.kind == "tuple" \
                else [args[1]]
            builtin = ("builtins.list", "builtins.tuple", "builtins.dict", "builtins.set", "builtins.str",
                       "builtins.int", "builtins.float", "builtins.bool")
            if types and all(t.kind == "qual" and t.const in builtin for t in types):
                return Val("const", const=any(t.const == f"builtins.{args[0].obj.kind}" for t in types))
            return UNKNOWN
        if name == "isinstance" and len(args) == 2 and args[0].kind == "obj" and args[0].obj is not None \
                and args[0].obj.cls is not None and args[0].obj.kind == "instance":
            # `isinstance(setup_params, dict)` of an instance of a project class (not a module) that derives from
            # no builtin type: decided False (the branch that converts a dict is not the path taken)
            types = args[1].obj.items if args[1].kind == "obj" and args[1].obj is not None and args[1].obj.kind == "tuple" \
                else [args[1]]
            builtin = ("builtins.list", "builtins.tuple", "builtins.dict", "builtins.set", "builtins.str",
                       "builtins.int", "builtins.float", "builtins.bool", "builtins.bytes")
            if types and all(t.kind == "qual" and t.const in builtin for t in types) and \
                    not _derives_from_builtin(args[0].obj.cls, self.index):
                return Val("const", const=False)
            if types and all(t.kind == "class" and t.func is not None for t in types) and \
                    any(_derives_from(args[0].obj.cls, t.func) for t in types):
                # `isinstance(controller, Controller)` of a PatienceController(Controller) the code built: True
                return Val("const", const=True)
        if name == "isinstance" and len(args) == 2 and args[0].kind == "module":
            types = args[1].obj.items if args[1].kind == "obj" and args[1].obj is not None and args[1].obj.kind == "tuple" \
                else [args[1]]
            decided = wrapper_isinstance(args[0], types)  # a DataParallel wrapper the program made
            if decided is None:
                decided = module_isinstance(args[0].obj, types, self.index)
            return Val("const", const=decided) if decided is not None else UNKNOWN
        if name == "isinstance" and len(args) == 2 and args[0].kind == "const":
            # `isinstance(device, int)` on a known constant: decided (builtin scalar types only)
            types = args[1].obj.items if args[1].kind == "obj" and args[1].obj is not None and args[1].obj.kind == "tuple" \
                else [args[1]]
            named = [t.const[9:] for t in types if t.kind == "qual" and isinstance(t.const, str) and t.const.startswith("builtins.")]
            py = {"int": int, "str": str, "float": float, "bool": bool, "bytes": bytes, "type(None)": type(None),
                  "tuple": tuple, "list": list, "dict": dict, "set": set}  # a literal is no container
            if named and len(named) == len(types) and all(n in py for n in named):
                return Val("const", const=isinstance(args[0].const, tuple(py[n] for n in named)))
            abcs = [_NUMBER_ABCS.get(t.const) if t.kind == "qual" else None for t in types]
            if abcs and None not in abcs and isinstance(args[0].const, (bool, int, float, complex, str, bytes, type(None))):
                return Val("const", const=isinstance(args[0].const, tuple(abcs)))  # `isinstance(0.5, numbers.Number)`
            if types and all(t.kind == "qual" and isinstance(t.const, str) and t.const.startswith("torch.") for t in types) \
                    and (args[0].const is None or isinstance(args[0].const, (bool, int, float, str, bytes))):
                return Val("const", const=False)  # `isinstance(None, torch.device)`: a Python literal is no torch object
            return UNKNOWN
        if name in ("max", "min", "abs", "round") and args and "__opaque__" not in kwargs and all(_is_number(a) for a in args):
            return Val("number")  # `max(max_deg, int(d.max()))`: Python numbers give a Python number
        if name in ("len", "int", "float", "round"):
            return UNKNOWN
        if name == "hasattr" and len(args) == 2 and args[1].kind == "const" and args[0].kind == "module" \
                and args[0].obj is not None and args[0].obj.cls is not None and args[1].const in args[0].obj.attrs:
            # `hasattr(self, "encoder")` of a project module that set `self.encoder`: it has it (not having
            # it is not decided: it may be set later, or be a method)
            return Val("const", const=True)
        if name == "getattr" and len(args) >= 2 and args[1].kind == "const" and args[0].kind in ("module", "obj") and args[0].obj:
            obj = args[0].obj
            if args[1].const not in obj.attrs and obj.cls is not None and isinstance(args[1].const, str):
                # `getattr(self, "_" + mode)(*args, **kwargs)`: a method named at run time, bound as `self._sample`
                found = obj.cls.method(args[1].const)
                if found is not None and "property" not in decorators(found[0]):
                    return Val("func", func=FuncRef(found[0], None, found[1], method_kind(decorators(found[0]), "method")),
                               bound=args[0])
            if args[0].kind == "module" and args[1].const not in obj.attrs and isinstance(args[1].const, str) \
                    and (obj.cls is None or obj.cls.method(args[1].const) is None):
                # `getattr(model, "to")` is `model.to`: an nn.Module method, bound to the model
                return Val("method", const=args[1].const, bound=args[0])
            return obj.attrs.get(args[1].const, UNKNOWN)
        if name == "getattr" and len(args) == 2 and args[0].kind == "tensor" and args[1].kind == "const" \
                and isinstance(args[1].const, str) and args[1].const.isidentifier() \
                and isinstance(node.args[0], (ast.Name, ast.Attribute)):
            # `getattr(batch, seq2seq.src_field_name)`: a constant name read is that attribute (a field of a
            # torchtext batch, a tensor's `.T`)
            return self.eval(ast.copy_location(ast.Attribute(value=node.args[0], attr=args[1].const, ctx=ast.Load()),
                                               node), frame)
        if name == "getattr" and len(args) == 2 and args[0].kind == "qual" and args[1].kind == "const" \
                and isinstance(args[1].const, str) and args[1].const.isidentifier():
            return self.qual_attr(args[0].const, args[1].const)  # `getattr(torch.optim, "Adam")`: torch.optim.Adam
        if name == "getattr" and len(args) == 2 and args[0].kind == "qual" and named_at_run_time(args[0].const):
            # `getattr(torch.optim, cfg.OPTIMIZER_NAME)`, `getattr(models, args.arch)`: a member of torch.optim /
            # of a model library's namespace chosen by name at run time
            return Val("qual", const=args[0].const + ".?")
        if name in ("sum",) and args:
            el = self.iter_elem(args[0], None, frame)
            return el if el.kind == "tensor" else UNKNOWN
        return UNKNOWN

    def library_factory(self, node, q: str, factory: dict, args, kwargs) -> Val:
        """`kornia.create_meshgrid(h, w)`: a library function that creates its tensor where its `device`
        parameter says, the default device (or the cpu) when it is not given (generated knowledge)."""
        pos = factory.get("position")
        given = kwargs.get("device", args[pos] if pos is not None and pos < len(args) else None)
        name = q.rsplit(".", 1)[-1]
        if given is not None and given.kind == "const" and given.const is None:
            given = None  # device=None: the default, as when not given
        if given is None:
            if "__opaque__" in kwargs:
                return UNKNOWN
            if factory.get("default") == "cpu":
                return Val("tensor", CPU, Origin(span_of(node), f"created by `{name}()` at line {node.lineno} on the cpu "
                                                                "(its default device)"))
            if not self.default_dev.known:
                return UNKNOWN
            return Val("tensor", self.default_dev,
                       Origin(span_of(node), f"created by `{name}()` at line {node.lineno} without device= (the default device)"))
        dev = self._as_device(given)
        if dev is None or not dev.known:
            return UNKNOWN
        return Val("tensor", dev, Origin(span_of(node), f"created by `{name}()` on {dev.render()} at line {node.lineno}"))

    def super_of(self, frame, args) -> Val:
        """`super()` in a method (or `super(Cls, self)`): the instance, seen from the class's bases."""
        while frame.closure is not None and isinstance(frame.node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            frame = frame.closure  # `super()` in a comprehension: the method's own frame
        owner, inst = frame.owner, None
        if len(args) == 2 and args[0].kind == "class" and hasattr(args[0].func, "base_infos"):
            owner, inst = args[0].func, args[1]
        elif owner is not None:
            a = frame.node.args
            first = (a.posonlyargs + a.args)[:1]
            inst = frame.env.get(first[0].arg) if first else None
        if owner is None or inst is None or not (owner.base_infos or self.library_children_of(owner)
                                                 or owner.is_module and inst.kind == "module"
                                                 or derives_from_optimizer(owner, self.index)):
            # (a direct nn.Module subclass still has nn.Module's own members: `super().to(device)`,
            # `super().__call__(x)` running forward; a torch.optim.Optimizer subclass its `__init__`)
            return UNKNOWN
        return Val("super", func=owner, bound=inst)

    def call_torch(self, node, q: str, args, kwargs, frame) -> Val:
        rest = q[6:]
        last = rest.rsplit(".", 1)[-1]
        framework = self.framework_call(node, q, args, kwargs, frame)
        if framework is not None:
            return framework
        if rest in ("compile", "jit.script") and args and args[0].kind == "module":
            # the compiled wrapper shares the module's parameters: moving either moves both
            return args[0]
        if rest in COLLATE_FUNCTIONS and len(args) == 1:
            collated = collated_samples(args[0], self.join, Origin(span_of(node), f"collated by `{self.text(node)}` at line {node.lineno}"))
            if collated is not None:
                return collated
        if rest == "jit.annotate" and len(args) == 2:
            # `torch.jit.annotate(List[Tensor], [])`: a type hint for TorchScript, the value itself when run eagerly
            return args[1]
        if "__opaque__" in kwargs and "device" not in kwargs and not _sized_spread(node, rest) and \
                not _legacy_sizes_spread(node, rest) and not _modules_spread(node, rest):
            return UNKNOWN
        if rest in T.FACTORIES or (rest.startswith("fft.") and rest in T.FACTORIES):
            d = _device_kwarg(kwargs)
            if d is not None:
                dev = self._as_device(d)
                if d.kind == "device" and d.origin is not None and dev is not None and (dev.is_cpu or d.origin.kind == "attr"):
                    # (on the device of a plain attribute its module's move left behind: that attribute's cause)
                    return Val("tensor", dev, d.origin, dims=_factory_dims(rest, node))
                return Val("tensor", dev, Origin(span_of(node), f"created on {dev.render() if dev else '?'} at line {node.lineno}",
                                                 "explicit"), dims=_factory_dims(rest, node))
            # an empty shape (`torch.ones(())`, `torch.zeros([])`, `size=()`) makes a 0-dim tensor: a
            # cpu scalar that mixes with any device
            shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "size"), None)
            scalar = isinstance(shape, (ast.Tuple, ast.List)) and not shape.elts
            if rest in T.MAYBE_SCALAR_FACTORIES:
                # the data positionally or by keyword (`torch.as_tensor(data=[...], dtype=torch.long)`)
                a0 = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "data"), None)
                v0 = args[0] if args else kwargs.get("data")
                scalar = not (isinstance(a0, (ast.List, ast.ListComp, ast.Tuple)) or
                              (v0 is not None and v0.kind == "obj" and v0.obj is not None and v0.obj.kind in ("list", "tuple")))
                if v0 is not None and v0.kind == "tensor":
                    return Val("tensor", v0.dev, v0.origin, scalar=v0.scalar)
                if a0 is not None and isinstance(a0, ast.Name) and v0 is not None and v0.kind == "unknown":
                    # `torch.tensor(x)` keeps a tensor `x` on its device: of an unknown `x`, the device
                    # is unknown too (it is cpu only for Python data, which `x` may not be)
                    return UNKNOWN
            if self.default_dev is not CPU and self.default_dev.known:
                return Val("tensor", self.default_dev, self.default_origin, scalar=scalar, dims=_factory_dims(rest, node))
            if self.default_dev is TOP:
                return UNKNOWN
            local, local_dev = _tensor_parameter_device(frame)
            org = Origin(span_of(node), f"created at line {node.lineno} without device=", "factory",
                         local_device=local, local_dev=local_dev)
            return Val("tensor", CPU, org, scalar=scalar, dims=_factory_dims(rest, node))
        if rest in T.LIKE_FACTORIES or last in T.LIKE_FACTORIES:
            d = _device_kwarg(kwargs)
            if d is not None:
                return Val("tensor", self._as_device(d), Origin(span_of(node), f"created at line {node.lineno}"))
            return Val("tensor", args[0].dev, args[0].origin, scalar=args[0].scalar) if args and args[0].kind == "tensor" else UNKNOWN
        if rest in T.LEGACY_CPU_TYPES:
            # legacy constructors build on the cpu backend whatever `set_default_device` / `with torch.device`
            # say (torch 2.13); `torch.Tensor(...)` alone follows `set_default_tensor_type`
            by_type = self.default_origin is not None and self.default_origin.kind == "tensor_type"
            if self.default_dev is not CPU and by_type and rest == "Tensor":
                return UNKNOWN
            scalar = not node.args or not isinstance(node.args[0], (ast.Constant, ast.Name, ast.Tuple, ast.List, ast.BinOp))
            return Val("tensor", CPU, Origin(span_of(node), f"created at line {node.lineno} by a legacy cpu constructor", "legacy"), scalar=False,
                       dims=_legacy_dims(node))
        if rest.startswith("cuda.") and last in T.LEGACY_CPU_TYPES:
            return Val("tensor", CUDA, Origin(span_of(node), f"created on cuda at line {node.lineno}"))
        if rest in T.CPU_ONLY_FUNCS:
            return Val("tensor", CPU, Origin(span_of(node), f"created at line {node.lineno} from a numpy array (cpu)"),
                       dims=args[0].dims if rest == "from_numpy" and args else 0)  # it shares the array's shape
        if rest == "device":
            if args:
                a = args[0]
                if a.kind == "const" and isinstance(a.const, str):
                    if len(args) > 1 and args[1].kind == "const" and isinstance(args[1].const, int):
                        return Val("device", Dev(a.const, args[1].const))
                    d = concrete(a.const)
                    return Val("device", d or TOP, Origin(span_of(node), f"set at line {node.lineno}"))
                if a.kind == "device":
                    return a
                if (d := _ordinal_device(a)) is not None:  # `torch.device(0)`: the accelerator of that index
                    return Val("device", d, Origin(span_of(node), f"set at line {node.lineno}"))
                text = self.text(node.args[0])
                accel = any(w in text.lower() for w in ("device", "cuda", "gpu"))
                return Val("device", Dev("sym", key=("device", node.lineno, node.col_offset), text=self.text(node), accel=accel),
                           Origin(span_of(node), f"set at line {node.lineno}"))
            return UNKNOWN
        if rest in ("set_default_device",):
            if args:
                self.default_dev = self._as_device(args[0]) or TOP
                self.default_origin = Origin(span_of(node), f"default device set at line {node.lineno}")
            return UNKNOWN
        if rest == "set_default_tensor_type":
            if args and args[0].kind == "const" and isinstance(args[0].const, str):
                self.default_dev = CUDA if "cuda" in args[0].const else CPU
            elif args and args[0].kind == "qual":
                self.default_dev = CUDA if ".cuda." in args[0].const else CPU
            else:
                self.default_dev = TOP
            self.default_origin = Origin(span_of(node), f"default tensor type set at line {node.lineno}", "tensor_type")
            return UNKNOWN
        if rest == "load":
            return self.checkpoint_load(node, args, kwargs) or UNKNOWN
        if rest.startswith("nn.") and (last in T.NN_MODULES or last in T.NN_TENSOR_WRAPPERS) \
                and not rest.startswith(("nn.functional", "nn.utils", "nn.init")):
            return self.torch_module(node, rest, last, args, kwargs, frame)
        cls_name = rest[3:].rpartition(".")[0] if rest.startswith("nn.") else ""
        if last in T.MODULE_CONSTRUCTORS.get(cls_name, ()):
            return self.module_from_tensors(node, "nn." + cls_name, cls_name, args, kwargs, frame)
        if rest.startswith("optim.") and (last in T.OPTIMIZERS or (rest == "optim.?" and self._param_modules(args[:1]))):
            # (`optim.?`: a class named at run time; given parameters, it is one of torch.optim's optimizers,
            # all of which cast a loaded state to their parameters' device, whichever it is)
            obj = Obj("optimizer", qual=q, origin=Origin(span_of(node), f"created at line {node.lineno}"))
            obj.fused = any(kwargs.get(k) is not None and kwargs[k].kind == "const" and kwargs[k].const is True
                            for k in ("fused", "foreach", "capturable"))
            obj.fused_kernel = any(kwargs.get(k) is not None and kwargs[k].kind == "const" and kwargs[k].const is True
                                   for k in ("fused", "capturable"))  # type: ignore[attr-defined]
            mods = self._param_modules(args[:1] + [kwargs.get("params", UNKNOWN)])
            self.supersede_optimizers(mods)
            for m in mods:
                obj.modules.append(m)
                m.optimizers.append(obj)
            # torch.optim's step() creates state tensors, except plain SGD (no momentum buffer)
            mom = kwargs.get("momentum", args[2] if len(args) > 2 else None)
            obj.step_makes_state = last not in ("SGD", "?") or (  # type: ignore[attr-defined]
                mom is not None and mom.kind == "const" and isinstance(mom.const, (int, float)) and mom.const != 0)
            devs = {m.dev for m in mods}
            if last in T.EAGER_STATE_OPTIMIZERS and len(devs) == 1 and None not in devs and next(iter(devs)).known and \
                    not any(getattr(m, "standalone", False) or m.dispatched for m in mods):
                obj.eager_state = (None, obj.origin, next(iter(devs)))  # type: ignore[attr-defined]
                obj.created_in = (frame, frame.stmt_stack[-1] if frame.stmt_stack else None)  # type: ignore[attr-defined]
            self._optimizers.append(obj)
            return Val("obj", obj=obj)
        if rest.startswith("utils.data.") and last == "DataLoader":
            return self.dataloader(node, args, kwargs, frame)
        if rest.startswith("utils.data.") and last == "TensorDataset":
            obj = Obj("dataset", qual=q)
            obj.items = [a for a in args]
            return Val("obj", obj=obj)
        if rest == "cuda.current_device" and not args:
            # the index of the current GPU: `.to(torch.cuda.current_device())` moves there, as a bare "cuda" does
            return Val("device", CUDA, Origin(span_of(node), f"the current GPU (line {node.lineno})"))
        if rest in T.SAME_DEVICE_PREDICATES:
            self.check_mix(node, [(v, self.text(a)) for v, a in zip(args, node.args) if v.kind == "tensor"], frame)
            return UNKNOWN  # a Python bool
        if rest == "autograd.grad":
            return self.autograd_grads(node, args, kwargs, frame)
        if last in T.MIXING_OK or rest.startswith(("cuda.", "distributed.", "jit.", "backends.", "amp.", "autograd.", "testing.",
                                                   "onnx.", "fx.", "export.", "compiler.", "_dynamo", "utils.", "hub.", "profiler.")):
            return UNKNOWN
        if last in T.PER_INPUT_FUNCTIONS and len(node.args) > 1 and not any(isinstance(a, ast.Starred) for a in node.args):
            # one result per input, each left on its input's device
            return Val("obj", obj=Obj("tuple", items=[Val("tensor", v.dev, v.origin) if v.kind == "tensor" else UNKNOWN
                                                      for v in args]))
        # an op on tensors: they must share a device
        vals = []
        for v, a in zip(args, node.args):
            if v.kind == "tensor":
                vals.append((v, self.text(a)))
            elif v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple") and \
                    (last in T.SEQUENCE_OPS or rest.startswith("nn.functional.")):
                items = list(v.obj.items) + ([v.elem] if v.elem is not None else [])
                if not isinstance(a, (ast.List, ast.Tuple)) and not (_joins_parts(last, args) and _all_items_known(v)):
                    items = [self.elem_of(v.obj)] if v.obj.items else ([v.elem] if v.elem is not None else [])
                for i, it in enumerate(items):
                    if it.kind == "tensor":
                        t = self.text(a.elts[i]) if isinstance(a, (ast.List, ast.Tuple)) and i < len(a.elts) else self.text(a)
                        vals.append((it, t))
        for kw in node.keywords:
            v = kwargs.get(kw.arg) if kw.arg else None
            if v is not None and v.kind == "tensor" and kw.arg not in ("out",):
                vals.append((v, self.text(kw.value)))
        vals += self.spread_keywords(node, kwargs)
        if last == MATMUL:  # `torch.matmul(a, b)`, the function of `a @ b`: no 0-dim operand
            vals = [(matmul_operand(v), t) for v, t in vals]
        if last in CLAMP_OPS and len(vals) > 1:  # tensor bounds: clamp's Tensor overload, no 0-dim cpu exception
            vals = [(clamp_operand(v), t) for v, t in vals]
        if vals:
            if self.check_mix(node, vals, frame, joined=_joins_parts(last, args)):
                return after_mix([v for v, _ in vals])
            if len(vals) == 1 and args and args[0] is vals[0][0] and \
                    (pair := values_indices(node, last, args[0], node.args, 1)) is not None:
                return pair  # `torch.max(t, dim=1)`: (values, indices)
            res = self.result_of([v for v, _ in vals])
            if last in ("meshgrid", "broadcast_tensors") :
                return Val("obj", obj=Obj("tuple"), elem=res)
            if res.scalar and last in T.SEQUENCE_OPS and args and args[0].kind == "obj":
                # `torch.stack([...])`, `torch.cat(parts)`: joining a sequence of tensors gives one with dims
                # (stack adds one, cat refuses 0-dim parts), never a 0-dim value that mixes with any device
                res = Val("tensor", res.dev, res.origin, scalar=False)
            return res
        return UNKNOWN

    def spread_keywords(self, node, kwargs) -> list:
        """`f(x, **kw)` with `kw` a dict whose keys are known (`kw["weight"] = w` before the call):
        its tensors are keyword arguments of the call like any written one (named `kw["weight"]`)."""
        spread = [kw.value for kw in node.keywords if kw.arg is None]
        if not spread:
            return []
        written = {kw.arg for kw in node.keywords if kw.arg}
        return [(v, f"{self.text(spread[0])}[{k!r}]") for k, v in kwargs.items()
                if k not in written and k not in ("out", "__opaque__") and v.kind == "tensor"]

    def _one_device_map(self, dm: Val) -> Dev | None:
        """The one device a `device_map=` names: a device string, an index, a device, or `{"": <one of them>}`
        (the whole model in one place); None for a strategy ("auto", ...), a real map or an unknown value."""
        if dm.kind == "obj" and dm.obj is not None and dm.obj.kind == "dict" and list(dm.obj.keys) == [""]:
            dm = dm.obj.keys[""]
        if dm.kind == "const" and isinstance(dm.const, str) and dm.const not in _DISPATCH_STRATEGIES:
            return concrete(dm.const)
        if dm.kind == "device" and dm.dev is not None and dm.dev.known:
            return dm.dev
        return self.cuda_index_dev(dm)

    def _as_device(self, d: Val) -> Dev | None:
        if d.kind == "device":
            return d.dev or TOP
        if d.kind == "const" and isinstance(d.const, str):
            return concrete(d.const) or TOP
        if (o := _ordinal_device(d)) is not None:
            return o
        return TOP

    def _param_modules(self, vals) -> list[Obj]:
        out = []
        for v in vals:
            if v is None:
                continue
            if v.kind == "params" and v.obj is not None:
                out.append(v.obj)
            elif v.kind == "tensor" and v.owner is not None:  # one parameter of a param group
                if all(m is not v.owner for m in out):
                    out.append(v.owner)
            elif v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple", "iter"):
                for it in v.obj.items + ([v.elem] if v.elem is not None else []):
                    if it.kind == "obj" and it.obj is not None and it.obj.kind == "dict":
                        out.extend(self._param_modules([it.obj.keys.get("params")]))
                    else:
                        out.extend(self._param_modules([it]))
        return out

    def torch_module(self, node, rest: str, last: str, args, kwargs, frame) -> Val:
        qual = "torch." + rest
        org = Origin(span_of(node), f"created at line {node.lineno}")
        if last in T.NN_TENSOR_WRAPPERS:
            # a tensor (the data it wraps) that its module owns: registered on assignment, moved with it
            self._param_nodes.add(id(node))
            a = args[0] if args else kwargs.get("data")
            if a is not None and a.kind == "tensor":
                return Val("tensor", a.dev, a.origin, scalar=a.scalar)
            if a is not None and a.kind == "unknown" and args:
                # a parameter of unknown device (`nn.Parameter(child.bias.data...)`): its module's device is unknown too
                return Val("tensor", TOP, None)
            return UNKNOWN
        obj = Obj("module", qual=qual, origin=org, created_line=node.lineno)
        obj.training = True
        if last in T.DATA_PARALLEL and args and args[0].kind == "module":
            if last == "DistributedDataParallel":
                self.check_ddp_placement(node, args[0], kwargs)
                if kwargs.get("device_ids") is not None and args[0].obj is not None:
                    self.check_ddp_device(node, args[0].obj, kwargs["device_ids"])
                    ids = kwargs["device_ids"]
                    if not (ids.kind == "const" and ids.const is None):
                        # with device_ids, DDP's forward moves its inputs to the current device (_pre_forward)
                        args[0].obj.ddp_moves_inputs = True  # type: ignore[attr-defined]
            return args[0]
        if last in T.DATA_PARALLEL:
            return SCATTERING_WRAPPER  # wraps a value of unknown kind (an imported wrapper, a moved unknown): its placement
        if last in ("Sequential", "ModuleList", "ModuleDict"):
            items = []
            # `nn.Sequential(*list(backbone.children())[:-1])`: submodules of a model, as many as it has
            cut = [v for v in self._starred.get(id(node), []) if v.kind == "obj" and v.elem is not None
                   and v.elem.kind == "module" and getattr(v.elem.obj, "part_of", None) is not None]
            for a in list(args) + cut:
                if a.kind == "module":
                    items.append(a)
                elif a.kind == "obj" and a.obj is not None and a.obj.kind == "dict" and getattr(a.obj, "exact", False) \
                        and last == "Sequential":
                    # `nn.Sequential(OrderedDict([("flatten", ...), ("linear", nn.Linear(...))]))`: its modules,
                    # in order, each registered under its key (`net.linear`)
                    for k, v in a.obj.keys.items():
                        if v.kind == "module" and isinstance(k, str):
                            items.append(v)
                            obj.attrs[k] = v
                elif a.kind == "obj" and a.obj is not None and a.obj.kind == "dict" and getattr(a.obj, "exact", False) \
                        and is_module_dict(obj):
                    items.extend(entries_from_dict(obj, a.obj))  # `nn.ModuleDict({"cls": head, ...})`
                elif a.kind == "obj" and a.obj is not None:
                    items.extend(x for x in a.obj.items if x.kind == "module")
                    if a.elem is not None and a.elem.kind == "module":
                        items.append(a.elem)
            obj.items = items
            for it in items:
                if it.obj is not None:
                    # a torch container registers what it holds: modules first gathered in a plain list
                    # (`layers.append(...)`, then `nn.ModuleList(layers)`) are submodules from now on
                    it.obj.in_plain_container = False  # type: ignore[attr-defined]
            dev = None
            for it in items:
                d = None if it.obj is None else it.obj.dev if it.obj.dev is not None else \
                    tree_device(it.obj.part_of) if getattr(it.obj, "part_of", None) is not None else None
                if d is not None:  # a submodule met through `model.children()`: where the whole model sits
                    dev = join(dev, d) if dev is not None else d
            obj.dev = dev
            if dev is not None and dev.is_cpu:
                obj.origin = Origin(span_of(node), f"created at line {node.lineno}")
            return Val("module", obj=obj)
        d = _device_kwarg(kwargs)
        if last in T.WEIGHTED_LOSSES:
            w = next((kwargs[k] for k in T.LOSS_WEIGHT_KWARGS if k in kwargs and kwargs[k].kind == "tensor"), None)
            if w is not None:
                obj.dev = w.dev
                obj.role = "loss"
                obj.buffers.add("weight")
                obj.attrs["weight"] = w
                obj.origin = Origin(span_of(node), f"created at line {node.lineno} with a weight on {w.dev.render() if w.dev else '?'}")
            elif not any(k in kwargs for k in T.LOSS_WEIGHT_KWARGS) and "__opaque__" not in kwargs and not args:
                obj.stateless = True  # type: ignore[attr-defined]  # no weight: no tensor, so no device
            return Val("module", obj=obj)
        if last in T.PARAM_FREE_MODULES:
            obj.stateless = last not in T.CONTAINER_MODULES  # type: ignore[attr-defined]  # holds no tensor
            return Val("module", obj=obj)
        if d is not None:
            obj.dev = self._as_device(d)
        else:
            obj.dev = self.default_dev
        return Val("module", obj=obj)

    def module_from_tensors(self, node, rest: str, cls_name: str, args, kwargs, frame) -> Val:
        """`nn.Embedding.from_pretrained(weights)`: a module of that class whose state is the tensors it is
        given, so it sits where they are (a cpu table: a cpu module that `.to()` moves like any other);
        given anything else, its device is unknown."""
        mod = self.torch_module(node, rest, cls_name, [], {}, frame)
        if mod.obj is None:
            return mod
        given = [v for v in list(args) + [v for k, v in kwargs.items() if k != "__opaque__"] if v.kind not in ("const",)]
        tensors = [v for v in given if v.kind == "tensor"]
        if not tensors or len(tensors) != len(given) or "__opaque__" in kwargs or any(t.dev is None or not t.dev.known for t in tensors):
            mod.obj.dev = TOP
            return mod
        dev = tensors[0].dev
        for t in tensors[1:]:
            dev = join(dev, t.dev)
        mod.obj.dev = dev
        mod.obj.origin = Origin(span_of(node), f"created at line {node.lineno} from `{self.text(node.args[0]) if node.args else 'its weights'}`"
                                               f" on {dev.render()}")
        return mod

    def check_ddp_placement(self, node, mod: Val, kwargs) -> None:
        """`DistributedDataParallel(model, device_ids=[rank])` needs the model on that GPU already:
        with the model still on cpu it raises at construction (device_ids only work for GPU modules)."""
        obj = mod.obj
        ids = kwargs.get("device_ids")
        if obj is None or ids is None or ids.kind != "obj" or ids.obj is None or ids.obj.kind not in ("list", "tuple") \
                or not ids.obj.items or getattr(obj, "standalone", False) or obj.dispatched or obj.moved is not None:
            return
        if any(v.kind == "const" and v.const is None for v in ids.obj.items):
            return
        if obj.dev is None or not obj.dev.is_cpu or self.default_dev is not CPU:
            return
        key = ("module", obj.origin.span if obj.origin else span_of(node))
        self.mix_origins.add(key)  # the later calls of the model would only repeat it
        ids_text = self.text(next(k.value for k in node.keywords if k.arg == "device_ids"))
        reason = obj.origin.reason if obj.origin else "created on cpu"
        self.add(Finding("DEV106", span_of(node),
                         f"`{self.text(node.func)}` is given device_ids={ids_text} but the model is on cpu ({reason}); "
                         f"DistributedDataParallel needs the model on that GPU first: move it before wrapping",
                         [(obj.origin.span, reason)] if obj.origin else [], None))

    def device_iterator(self, node, q: str, args, kwargs) -> Val:
        """torchtext's Iterator(dataset, ..., device=d) / BucketIterator.splits(datasets, device=d): every
        batch it yields has its fields on d. Without a known device it stays unknown."""
        entry = FW.DEVICE_ITERATORS.get(q)
        splits = entry is None
        if splits:
            entry = FW.DEVICE_ITERATORS[q.rpartition(".")[0]]
        d = kwargs.get(entry["param"])
        if d is None and not splits and len(args) > entry["position"]:
            d = args[entry["position"]]
        if "__opaque__" in kwargs:
            return UNKNOWN
        name = q.rsplit(".", 2)[-2] if splits else q.rsplit(".", 1)[-1]
        if d is None or (d.kind == "const" and d.const is None):
            d = self._iterator_default_device(entry, given=d is not None)
            if d is None:
                return UNKNOWN
            org = Origin(span_of(node), f"a batch from the {name} at line {node.lineno}, which puts its fields on "
                                        f"the cpu ({d.text})", "batch")
        elif d.kind != "device" or d.dev is None or not d.dev.known:
            return UNKNOWN
        else:
            org = Origin(span_of(node), f"a batch from the {name} at line {node.lineno}, which puts its fields on "
                                        f"`{self.text(next(k.value for k in node.keywords if k.arg == entry['param']))}`"
                         if any(k.arg == entry["param"] for k in node.keywords) else
                         f"a batch from the {name} at line {node.lineno}, which puts its fields on its device", "batch")
        loader = Obj("loader", origin=Origin(span_of(node), f"{name} at line {node.lineno}"))
        loader.attrs["batch"] = Val("tensor", d.dev, org, batch=FIELDS)
        if splits:  # one iterator per dataset, all with these keyword arguments
            return Val("obj", obj=Obj("list"), elem=Val("obj", obj=loader))
        return Val("obj", obj=loader)

    def _iterator_default_device(self, entry, given: bool) -> Val | None:
        """The device of an iterator given no device (or `device=None`): its own default when it names one
        (torchtext >= 0.9 turns None into the cpu), else None goes on to the tensor factories that build the
        batch, which then use torch's default device (the cpu unless the program changes it)."""
        why = "device=None" if given else "no device given"
        if entry.get("default") == "cpu" or (entry.get("default") is None and self.default_dev is CPU):
            return Val("device", CPU, text=why)
        return None

    def dataloader(self, node, args, kwargs, frame) -> Val:
        obj = Obj("loader", origin=Origin(span_of(node), f"DataLoader at line {node.lineno}"))
        ds = args[0] if args else kwargs.get("dataset", UNKNOWN)
        collate = kwargs.get("collate_fn")
        org = Origin(span_of(node), f"a batch from the DataLoader at line {node.lineno}, which yields cpu tensors", "batch")
        batch = Val("tensor", CPU, org, batch=COLLATED)
        if collate is not None:
            batch = UNKNOWN
            if collate.kind in ("func", "method", "partial") or _callable_instance(collate):
                # a function, a bound method, functools.partial, an instance of a project class with __call__
                samples = self._dataset_samples(ds, node, loader_index(kwargs))
                r = self.call_function(collate.func, [samples], {}, None, node) if collate.kind == "func" \
                    else self.call(node, collate, None, [samples], {}, frame)
                if r.kind == "tensor":  # (a graph batched by the collate_fn keeps its kind: its .to() copies)
                    batch = Val("tensor", r.dev, org if r.dev is not None and r.dev.is_cpu else r.origin,
                                batch=r.batch if r.batch == COPY_MOVED else "")
                elif _collated_container(r) or is_project_instance(r):
                    batch = r  # the DataLoader yields what collate_fn returns, entry by entry (or the batch object)
        elif ds.kind == "obj" and ds.obj is not None and ds.obj.kind == "dataset":
            dev = None
            for it in ds.obj.items:
                dev = join(dev, it.dev) if (it.kind == "tensor") else TOP
            batch = Val("tensor", dev, org if dev is not None and dev.is_cpu else None, batch=COLLATED) if dev is not None else UNKNOWN
        elif ds.kind == "obj" and ds.obj is not None and ds.obj.cls is not None:
            found = ds.obj.cls.method("__getitem__")
            batch = UNKNOWN
            if found:
                r = self.call_function(FuncRef(found[0], None, found[1], "method"), [loader_index(kwargs)], {}, ds, node)
                if r.kind == "tensor" and r.dev is not None and r.dev.is_cpu:
                    batch = Val("tensor", CPU, org)
                elif _all_cpu_sample(r):  # `return image, label`: default_collate stacks each field on the cpu
                    batch = Val("tensor", CPU, org, batch=COLLATED)
        elif (ds.kind != "unknown" and ds.kind != "obj") or ds is DEVICE_CONFIGURED:
            batch = UNKNOWN
        if self.default_dev is not CPU:
            batch = UNKNOWN
            self.check_loader_sampler(node)
        obj.attrs["batch"] = batch
        return Val("obj", obj=obj)


    def _dataset_samples(self, ds: Val, node, index: Val = UNKNOWN) -> Val:
        """What a DataLoader hands its collate_fn: a list of `dataset[index]`, each what the project Dataset's
        `__getitem__` returns (unknown for another dataset)."""
        found = ds.obj.cls.method("__getitem__") if ds.kind == "obj" and ds.obj is not None and ds.obj.cls is not None else None
        if not found:
            return UNKNOWN
        sample = self.call_function(FuncRef(found[0], None, found[1], "method"), [index], {}, ds, node)
        return Val("obj", obj=Obj("list", items=[sample])) if sample.kind != "unknown" else UNKNOWN


_PEFT_WRAPPERS = ("get_peft_model", "prepare_model_for_kbit_training", "from_pretrained", "inject_adapter_in_model")
_DISPATCH_STRATEGIES = ("auto", "balanced", "balanced_low_0", "sequential")


def _held_by_unknown_class(node, q: str, vals) -> None:
    """A library module handed to a library class the engine does not model (`Frontend(mel)`,
    gpytorch's `ExactGP(x, y, likelihood)`) may be kept as that object's child and moved with it:
    where it sits is no longer known."""
    for v in vals:
        if v.kind == "module" and v.obj is not None and v.obj.qual in FW.STATEFUL_LIBRARY_MODULES:
            v.obj.dev = TOP
            v.obj.origin = Origin(span_of(node), f"handed to `{q.rsplit('.', 1)[-1]}` at line {node.lineno}")


def _dispatches(dm, node) -> bool:
    """Whether a `device_map=` spreads the model over several devices or offloads part of it."""
    if dm.kind == "const":
        return dm.const in _DISPATCH_STRATEGIES
    if isinstance(node, ast.Dict) and all(isinstance(v, ast.Constant) for v in node.values):
        places = {v.value for v in node.values}
        return len(places) > 1 or bool(places & {"cpu", "disk"})
    return False


def _bnb_config(node: ast.Call, interp) -> bool:
    """`quantization_config=BitsAndBytesConfig(load_in_4bit=True | load_in_8bit=True)` written in the call."""
    q = next((k.value for k in node.keywords if k.arg == "quantization_config"), None)
    if isinstance(q, ast.Name):  # `bnb_config = BitsAndBytesConfig(...)`: every binding of the name in the file
        values = [st.value for st in interp.index.nodes if isinstance(st, ast.Assign) and len(st.targets) == 1
                  and isinstance(st.targets[0], ast.Name) and st.targets[0].id == q.id]
        return bool(values) and all(_is_bnb_call(v, interp) for v in values)
    return _is_bnb_call(q, interp)


def _is_bnb_call(q, interp) -> bool:
    if not isinstance(q, ast.Call):
        return False
    name = interp.index.qualify(interp.index.dotted(q.func) or "")
    return name.endswith("BitsAndBytesConfig") and any(
        k.arg in ("load_in_4bit", "load_in_8bit") and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in q.keywords)


def _given_a_module(args, kwargs) -> bool:
    """A module among a call's arguments (a model library function applied to a model, not building one)."""
    return any(isinstance(v, Val) and v.kind == "module" for v in (*args, *kwargs.values()))


def _device_kwarg(kwargs) -> Val | None:
    """The `device=` argument; `device=None` (a helper's default passed on) means the default device."""
    d = kwargs.get("device")
    return None if d is not None and d.kind == "const" and d.const is None else d


def _collated_container(r: Val) -> bool:
    """`return {"image": images, "weights": torch.tensor([...])}` from a collate_fn: a dict / tuple / list
    holding tensors, each on the device collate_fn put it (an entry it does not know stays unknown)."""
    if r.kind != "obj" or r.obj is None or r.obj.kind not in ("dict", "list", "tuple"):
        return False
    entries = r.obj.keys.values() if r.obj.kind == "dict" else r.obj.items
    return any(v.kind == "tensor" for v in entries)


def _callable_instance(v: Val) -> bool:
    """An instance of a project class that defines `__call__` (a collator object: `collate_fn=Collator(pad)`)."""
    return v.kind == "obj" and v.obj is not None and v.obj.cls is not None and bool(v.obj.cls.method("__call__"))


def _all_cpu_sample(r: Val) -> bool:
    """A dataset sample that is a tuple / list of cpu tensors and numbers (each collated into a cpu tensor)."""
    if r.kind != "obj" or r.obj is None or r.obj.kind not in ("list", "tuple") or not r.obj.items:
        return False
    return all((v.kind == "tensor" and v.dev is not None and v.dev.is_cpu) or
               (v.kind == "const" and isinstance(v.const, (int, float)) and not isinstance(v.const, bool))
               for v in r.obj.items) and any(v.kind == "tensor" for v in r.obj.items)


def _legacy_sizes_spread(node: ast.Call, rest: str) -> bool:
    """`torch.FloatTensor(*shape)`: a legacy typed constructor takes no device from its positional
    arguments (sizes, data; a cuda tensor given to it is an error), so a positional spread leaves
    it on the cpu."""
    return rest in T.LEGACY_CPU_TYPES and all(k.arg is not None for k in node.keywords)


def _joins_parts(last: str, args) -> bool:
    """`torch.stack(parts)` / `torch.cat(parts)`: the parts are copied into one result, which checks that
    they share a device without the exception elementwise ops make for a 0-dim cpu tensor (a contraction,
    `einsum`, multiplies its operands instead)."""
    return last in T.SEQUENCE_OPS and last != "einsum" and bool(args) and args[0].kind == "obj"


def _all_items_known(v: Val) -> bool:
    """A list whose every item is known (built by literal and append / extend / insert, with no item replaced or
    removed since): each is a part of what `torch.stack(parts)` joins, not one value standing for all."""
    return v.elem is None and v.obj is not None and v.obj.kind == "list" and bool(v.obj.items) and \
        getattr(v.obj, "exact", True) and all(i.kind == "tensor" for i in v.obj.items)


def _ordinal_device(v: Val) -> Dev | None:
    """A device given as a non-negative int (`torch.device(0)`, `device=1`, `.to(0)`) is the CUDA device of
    that index: torch reads a bare ordinal as the current accelerator type's device."""
    if v.kind == "const" and isinstance(v.const, int) and not isinstance(v.const, bool) and v.const >= 0:
        return Dev("cuda", v.const)
    return None


def _sized_spread(node: ast.Call, rest: str) -> bool:
    """`torch.randn(n, *shape)`, `torch.zeros(*batch_dims, n)`: a factory's device= is keyword-only, so a
    positional spread only adds dimensions; with a plain first size (or a plain size beside the spread) the
    tensor is at least 1-d (never a 0-dim scalar)."""
    return rest in T.FACTORIES and rest not in T.MAYBE_SCALAR_FACTORIES and bool(node.args) and \
        (not isinstance(node.args[0], ast.Starred) or _sizes_beside_starred(rest, node.args) > 0) and \
        all(k.arg is not None for k in node.keywords)


def _listed(v: Val) -> list | None:
    """The elements of a list / tuple / module container known one by one, else None."""
    if v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple") and v.elem is None and v.obj.items:
        return list(v.obj.items)
    if v.kind == "module" and v.obj is not None and v.obj.cls is None and v.obj.items:
        return list(v.obj.items)
    return None


def _same_device_result(q: str, args, kwargs) -> Val:
    """einops.rearrange(x, pattern) / einsum(x, y, pattern): on the device of its tensor operands when
    they are all known and agree; a list operand (rearrange stacks it) or anything unknown stays unknown."""
    operands = [a for a in args if not (a.kind == "const" and isinstance(a.const, str))]
    if not operands or "__opaque__" in kwargs or any(a.kind != "tensor" or a.dev is None or not a.dev.known for a in operands):
        return UNKNOWN
    if len({a.dev for a in operands}) != 1:
        return UNKNOWN  # operands that disagree are reported where they meet, not here
    first = operands[0]
    # a reduction or contraction to no axes (`"b n -> "`) leaves a 0-dim result, which mixes with any device
    pattern = next((a.const for a in args if a.kind == "const" and isinstance(a.const, str)), None)
    if pattern is None and "pattern" in kwargs and kwargs["pattern"].kind == "const":
        pattern = kwargs["pattern"].const
    to_none = not isinstance(pattern, str) or "->" not in pattern or not pattern.split("->", 1)[1].strip()
    return Val("tensor", first.dev, first.origin, scalar=first.scalar or (q.endswith(("reduce", "einsum")) and to_none))


def _literal_dims(e) -> int:
    """The dimensions a tensor made from this literal data has at least: one per level of written nesting."""
    if isinstance(e, (ast.List, ast.Tuple)) and e.elts and not any(isinstance(x, ast.Starred) for x in e.elts):
        return 1 + min(_literal_dims(x) for x in e.elts)
    return 1 if isinstance(e, ast.ListComp) else 0


def _is_int(e) -> bool:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        e = e.operand
    return isinstance(e, ast.Constant) and type(e.value) is int


# Factories whose result is 1-D whatever their arguments.
_ONE_DIM_FACTORIES = frozenset({"arange", "range", "linspace", "logspace", "randperm", "bartlett_window",
                                "blackman_window", "hamming_window", "hann_window", "kaiser_window"})


def _factory_dims(rest: str, node) -> int:
    """The dimensions a factory's result has at least, from the data or sizes written in the call (0: not known)."""
    if any(isinstance(a, ast.Starred) for a in node.args):
        return _sizes_beside_starred(rest, node.args)
    if rest in T.MAYBE_SCALAR_FACTORIES:
        return _literal_dims(node.args[0]) if node.args else 0
    if rest in _ONE_DIM_FACTORIES:
        return 1
    if rest in ("zeros", "ones", "empty", "rand", "randn", "full"):
        sizes = node.args[:1] if rest == "full" else node.args
        if len(sizes) > 1:
            return len(sizes)  # one int per dimension
        if sizes and isinstance(sizes[0], (ast.Tuple, ast.List)) and not any(isinstance(x, ast.Starred) for x in sizes[0].elts):
            return len(sizes[0].elts)
        if sizes and _is_int(sizes[0]):
            return 1
    return 0


def _sizes_beside_starred(rest: str, args) -> int:
    """`torch.zeros(*batch_dims, n)`: each size argument is one dimension and a spread one adds zero or more,
    so the sizes written beside it are a lower bound (a tuple or list there could be the whole shape)."""
    if rest not in ("zeros", "ones", "empty", "rand", "randn"):
        return 0
    return sum(1 for a in args if not isinstance(a, (ast.Starred, ast.Tuple, ast.List)))


def _legacy_dims(node) -> int:
    """`torch.LongTensor([[1, 2]])` (data) or `torch.FloatTensor(3, 4)` (sizes): the dimensions written."""
    if not node.args or any(isinstance(a, ast.Starred) for a in node.args):
        return 0
    if isinstance(node.args[0], (ast.List, ast.Tuple, ast.ListComp)):
        return _literal_dims(node.args[0])
    return len(node.args) if all(_is_int(a) for a in node.args) else 0


def dict_of_pairs(args, kwargs) -> Val | None:
    """`dict(pairs)` / `OrderedDict(pairs)` of a known list of (constant key, value) pairs, plus keyword
    entries: a dict whose every key is known. None when any key or the pairs' length is not known."""
    if "__opaque__" in kwargs or len(args) > 1:
        return None
    entries: dict = {}
    if args:
        seq = args[0]
        if seq.kind == "obj" and seq.obj is not None and seq.obj.kind == "dict" and not seq.obj.qual:
            return copied_dict(seq, kwargs)  # `dict(kw)`: a shallow copy of a known dict, keywords on top
        if seq.kind != "obj" or seq.obj is None or seq.obj.kind not in ("list", "tuple") or seq.elem is not None:
            return None
        for item in seq.obj.items:
            o = item.obj if item.kind == "obj" else None
            if o is None or o.kind != "tuple" or len(o.items) != 2 or o.items[0].kind != "const":
                return None
            try:
                entries[o.items[0].const] = o.items[1]
            except TypeError:
                return None
    entries.update(kwargs)
    d = Obj("dict")
    d.keys = entries
    d.exact = True  # type: ignore[attr-defined]
    return Val("obj", obj=d)


def _modules_spread(node: ast.Call, rest: str) -> bool:
    """`nn.Sequential(*layers)`: only modules are spread (it takes no keywords)."""
    return rest in ("nn.Sequential", "nn.modules.container.Sequential") and not node.keywords


def _derives_from_builtin(info, index) -> bool:
    """A project class with a builtin type (dict, list, ...) or an unresolved class among its bases."""
    return any_base(info, index, lambda q, resolved: q.startswith("builtins.") or
                    (not resolved and not q.startswith(("torch.", "object"))))


# Origins only a torch tensor has: made by a torch factory or legacy constructor, moved by `.to()` / `.cuda()` /
# `.cpu()`, made under a default device. numpy has none of these, so such a cpu value is a torch.Tensor too.
_TORCH_ORIGINS = frozenset({"factory", "legacy", "placed", "tensor_type", "context"})


def _torch_made(v) -> bool:
    return v.origin is not None and v.origin.kind in _TORCH_ORIGINS


def _tensor_parameter_device(frame) -> tuple[str, object]:
    """`p.device` (and its device) for the first parameter of the running function bound to a tensor on an
    accelerator: a factory there could have been given `device=p.device`, so it is where the fix goes."""
    fn = getattr(frame, "node", None)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return "", None
    for name in (a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs):
        v = frame.env.get(name)
        if v is not None and v.kind == "tensor" and v.dev is not None and v.dev.known and not v.dev.is_cpu and not v.scalar:
            return f"{name}.device", v.dev
    return "", None
