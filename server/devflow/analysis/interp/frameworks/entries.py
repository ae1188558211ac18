"""Code a framework calls for the user, run on its own with the arguments the framework passes.

- Lightning: the Trainer moves the LightningModule and, before the step hooks, each batch to the
  module's device (`self.device`); `on_before_batch_transfer` (and `transfer_batch_to_device`)
  still see the loader's cpu batch.
- transformers generate(): logits processors and stopping criteria are called with the running
  `input_ids` and `scores`, on the model's device.
- transformers Trainer: the hooks it calls after `_prepare_inputs` (`compute_loss(model, inputs)`) get
  the model and every tensor of the batch on `args.device`, where the Trainer moved the model.
A tensor such a hook builds without device= and combines with those is reported where it is built.
"""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as F
from devflow.analysis import torch_api as T
from devflow.analysis.index import FileIndex
from devflow.analysis.lattice import CPU, CUDA, TOP, Dev
from devflow.analysis.values import COLLATED, UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import FuncRef, span_of
from devflow.analysis.interp.optimizer_restore import restore_saved_groups


def _bases(info, seen=None):
    """Qualified names of a class's bases, through its same-file / project base classes."""
    seen = seen if seen is not None else set()
    if id(info) in seen:
        return []
    seen.add(id(info))
    index = info.home
    out = [index.qualify(b) if index is not None else b for b in info.bases]
    for b in info.base_infos:
        out += _bases(b, seen)
    return out


class_bases = _bases  # for the other framework modules (unittest_entries)


def _generation_base(info) -> str | None:
    for q in _bases(info):
        if q.startswith("transformers.") and q.rsplit(".", 1)[-1] in F.GENERATION_CALLBACKS:
            return q.rsplit(".", 1)[-1]
    return None


# a step hook -> the stage whose hooks are named `on_<stage>_...` (Lightning's naming of its loops)
_STEP_STAGES = {"training_step": "train", "validation_step": "validation", "test_step": "test", "predict_step": "predict"}


def _own_hooks() -> list[str]:
    """The module's own hooks the Trainer runs after the move, without a batch: those named like the Callback hooks
    and those its loops call (generated, Lightning 2.x and 1.x), less the step hooks and the batch hooks."""
    hooks = (set(F.LIGHTNING_CALLBACK_HOOKS) | F.LIGHTNING_LOOP_HOOKS) - F.LIGHTNING_AFTER_TRANSFER - F.LIGHTNING_BEFORE_TRANSFER
    return sorted(h for h in hooks if "batch" not in h and "batch" not in F.LIGHTNING_CALLBACK_HOOKS.get(h, {}))


def _is_lightning(info) -> bool:
    return any(q in F.LIGHTNING_MODULES for q in _bases(info))


def is_lightning_trainer(obj) -> bool:
    """A Lightning Trainer, or an instance of a project subclass of one (`class GraphTrainer(pl.Trainer)`)."""
    return obj.kind == "lightning_trainer" or (obj.cls is not None and any(q in F.LIGHTNING_TRAINERS for q in _bases(obj.cls)))


def _is_hf_trainer(info) -> bool:
    return any(q in F.HF_TRAINERS for q in _bases(info))


class Entries:
    def new_hf_trainer(self, node, q: str, args, kwargs, frame) -> Val:
        """`Trainer(model=model, args=args, ...)`: the Trainer moves the model it is given onto `args.device`
        as it is built (the world here has CUDA: the current GPU), unless accelerate dispatched it. The
        trainer keeps it as `trainer.model`."""
        trainer = Obj("hf_trainer", qual=q)
        places = F.HF_TRAINER_PLACES
        model = kwargs.get(places.get("param", "")) if places else None
        if model is None and places and len(args) > places.get("position", len(args)):
            model = args[places["position"]]
        if model is None or model.kind != "module" or model.obj is None:
            return Val("obj", obj=trainer)
        trainer.attrs["model"] = model
        obj = model.obj
        if not obj.dispatched and not getattr(obj, "standalone", False):
            origin = Origin(span_of(node), f"moved to `args.device` by `{self.text(node.func)}(...)` at line {node.lineno}",
                            kind="placed")
            self._move_rec(obj, CUDA, origin, frame, set())
        return Val("obj", obj=trainer)

    def framework_entry(self, fn, owner, self_val) -> list | None:
        """The arguments a framework passes to this method (None: not a framework entry point)."""
        if owner is None or self_val is None:
            return None
        name = fn.name
        params = [p for p in fn.args.posonlyargs + fn.args.args][1:]
        if self.is_test_method(fn, owner):  # unittest runs it after setUp()
            return self.test_method_args(owner, self_val, fn)
        if name == "__call__":
            base = _generation_base(owner)
            if base is None:
                return None
            self.run_own_method(owner, self_val, "__init__")  # what __init__ stores on self (a mask built on the cpu ...)
            return self._generate_args(base, fn)
        if name in F.HF_TRAINER_HOOKS and not owner.is_module and _is_hf_trainer(owner):
            return self._trainer_hook_args(owner, self_val, fn, F.HF_TRAINER_HOOKS[name])
        if not (name in F.LIGHTNING_AFTER_TRANSFER or name in F.LIGHTNING_BEFORE_TRANSFER or name == F.LIGHTNING_TRANSFER) \
                or not owner.is_module or not _is_lightning(owner):
            return None
        obj = self_val.obj
        dev = Dev("sym", key=("lightning-device", owner.name), text="self.device", accel=True)
        obj.dev = dev
        self._lightning_module(owner, self_val, dev, fn)
        batch_at = F.LIGHTNING_BATCH_POSITION.get(name)
        args = [UNKNOWN] * len(params)
        if batch_at is not None and batch_at < len(params):
            p = params[batch_at]
            if name in F.LIGHTNING_AFTER_TRANSFER:
                args[batch_at] = self._transferred_batch(owner, self_val, dev, p, name)
            else:
                args[batch_at] = Val("tensor", CPU, Origin(span_of(p), f"the batch `{name}` gets before the Trainer moves "
                                                                       f"it to the module's device", "batch"),
                                     batch=COLLATED, text=p.arg)
        return args

    def _trainer_hook_args(self, owner, self_val, fn, positions: dict) -> list:
        """A Trainer subclass's `compute_loss(model, inputs)`: the model the Trainer moved to `args.device` and
        the batch `_prepare_inputs` moved there (every tensor of it); `self` as its __init__ left it."""
        self.run_own_method(owner, self_val, "__init__")
        params = [p for p in fn.args.posonlyargs + fn.args.args][1:]
        args = [UNKNOWN] * len(params)
        at_model, at_inputs = positions.get("model"), positions.get("inputs")
        model_p = params[at_model] if at_model is not None and at_model < len(params) else None
        text = f"{model_p.arg}.device" if model_p is not None else "self.args.device"
        dev = Dev("sym", key=("hf-trainer-device", owner.name), text=text, accel=True)
        if model_p is not None:
            model = Obj("module", qual="", dev=dev, origin=Origin(span_of(model_p), "moved to `args.device` by the Trainer", "placed"))
            model.standalone = True  # type: ignore[attr-defined]  # placed by the Trainer, not by this program
            args[at_model] = Val("module", obj=model, text=model_p.arg)
        if at_inputs is not None and at_inputs < len(params):
            p = params[at_inputs]
            args[at_inputs] = Val("tensor", dev, Origin(span_of(p), "the batch, moved to `args.device` by the Trainer's "
                                                                    f"_prepare_inputs before `{fn.name}`"),
                                  batch=COLLATED, text=p.arg)
        return args

    def _generate_args(self, base: str, fn) -> list:
        """The tensors generate() passes to a callback's `__call__`: all on the model's device."""
        owner_key = id(fn)
        params = [p for p in fn.args.posonlyargs + fn.args.args][1:]
        passed = F.GENERATION_CALLBACKS[base]["params"]
        # one device for all of them; each named after its own parameter, for fixes (`device=scores.device`)
        return [Val("tensor", Dev("sym", key=("generate-device", owner_key, p.arg), text=f"{p.arg}.device", accel=True),
                    Origin(span_of(p), "passed by generate() on the model's device"), text=p.arg)
                if i < len(passed) else UNKNOWN for i, p in enumerate(params)]

    def run_own_method(self, owner, self_val, name: str) -> None:
        """Run the class's method `name` on `self_val`, its calls followed, its other arguments unknown (what it
        stores on `self` is what the entry point then sees)."""
        found = owner.method(name)
        if found is None:
            return
        fn, cls = found
        n = len(fn.args.posonlyargs + fn.args.args) - 1
        saved, self.standalone = self.standalone, False
        try:
            self.call_function(FuncRef(fn, None, cls, "method"), [UNKNOWN] * n, {}, self_val, None)
        finally:
            self.standalone = saved

    def framework_instance(self, node, val: Val, info) -> None:
        """A generate() callback built in the program: generate() will call it with the model's tensors;
        run its `__call__` on this very instance (what its __init__ was given is known here)."""
        base = _generation_base(info)
        found = info.method("__call__") if base is not None else None
        if found is None:
            return
        fn, cls = found
        self.call_function(FuncRef(fn, None, cls, "method"), self._generate_args(base, fn), {}, val, node)

    def run_inherited_hooks(self) -> None:
        """A LightningModule that inherits its step hooks from a base class (of this file or another project
        file): the hooks run again with `self` this class (its own forward, layers and helpers)."""
        hooks = F.LIGHTNING_AFTER_TRANSFER | F.LIGHTNING_BEFORE_TRANSFER
        for info in self.index.all_classes:
            if self.budget <= 0 or not info.is_module or not info.base_infos or not _is_lightning(info):
                continue
            for hook in sorted(hooks):
                found = info.method(hook) if hook not in info.methods else None
                if found is not None:
                    # a base in another file: what goes wrong there is said at `class Sub(Base)` here
                    site = None if found[1].home is info.home else \
                        next((b for b in info.node.bases if self.text(b).rsplit(".", 1)[-1] == found[1].name), None)
                    self.run_standalone(found[0], info, defined_in=found[1], site=site)

    def lightning_run(self, node, args, kwargs, trainer=None) -> Val:
        """`trainer.fit(model)` (validate / test / predict): the Trainer moves this very instance, built with
        the arguments the program gave it, to its device and runs its step hooks on the moved batches (with
        the process group its strategy sets up, for `self.log(..., sync_dist=True)`).
        Afterwards its placement is not known (the strategy's teardown may move it back to the cpu)."""
        model = kwargs.get("model", args[0] if args else None)
        if self.standalone or model is None or model.kind != "module" or model.obj is None or model.obj.cls is None \
                or not model.obj.cls.is_module or not _is_lightning(model.obj.cls):
            return UNKNOWN
        info, obj = model.obj.cls, model.obj
        dev = Dev("sym", key=("lightning-device", info.name), text="self.device", accel=True)
        origin = Origin(span_of(node), f"moved to the Trainer's device by `{self.text(node)}` at line {node.lineno}", "placed")
        self._move_rec(obj, dev, origin, self.frame, set())
        obj.dev = dev
        saved_group = self.lightning_group
        self.lightning_group = trainer.attrs.get("process_group") if trainer is not None and trainer.kind == "lightning_trainer" else None
        # the module's own hooks of the callback hooks' names (`on_validation_start`, `on_validation_epoch_end`), with
        # the module moved: a stage's `*_start` hooks before its batches, the others after them
        own = _own_hooks()
        try:
            optimizers = self._lightning_optimizers(node, args, kwargs, info, model)
            self._run_own_hooks(node, info, model, [h for h in own if h.endswith("_start")])
            self._run_step_hooks(node, info, model, dev)
            self._step_optimizers(node, optimizers)
            if _runs_another_epoch(node, trainer):
                # the fit loop's next epoch sees what the epoch-end hooks left on the module (a buffer
                # re-registered on the cpu, a tensor attribute rebuilt there): they run, then the steps again
                self._run_own_hooks(node, info, model, [h for h in own if h.endswith("epoch_end")])
                self._run_own_hooks(node, info, model, [h for h in own if h.endswith("epoch_start")])
                self._run_step_hooks(node, info, model, dev)
            self._run_own_hooks(node, info, model, [h for h in own if not h.endswith("_start")])
            if trainer is not None and trainer.kind == "lightning_trainer":
                self._run_callbacks(node, trainer, info, model, dev)
        finally:
            self.lightning_group = saved_group
        obj.dev = TOP
        return UNKNOWN

    def _lightning_optimizers(self, node, args, kwargs, info, model: Val) -> list:
        """The optimizers the Trainer builds from the module's `configure_optimizers()` (run on the moved module:
        one optimizer, a list or tuple of them, `([optimizers], [schedulers])`, or dicts with an "optimizer"
        entry). With `ckpt_path=`, the strategy restores each from the checkpoint its IO loads onto the cpu
        (generated: lightning.resume): a project optimizer's param_groups tensors stay there."""
        found = info.method(F.LIGHTNING_RESUME.get("optimizers_hook", "")) if F.LIGHTNING_RESUME else None
        if found is None or self.budget <= 0:
            return []
        fn, cls = found
        made = _optimizers_in(self.call_function(FuncRef(fn, None, cls, "method"), [], {}, model, node))
        name, at = F.LIGHTNING_RESUME.get("ckpt_kwarg", ""), F.LIGHTNING_RESUME.get("ckpt_position", -1)
        ckpt = kwargs.get(name) if name in kwargs else args[at] if 0 <= at < len(args) else None
        if ckpt is not None and not (ckpt.kind == "const" and ckpt.const is None) and \
                F.LIGHTNING_RESUME.get("map_location") == "cpu":
            loaded = Obj("ckpt", qual="lightning", origin=Origin(span_of(node), f"loaded onto the cpu by `{self.text(node)}`"))
            for opt in made:
                if getattr(opt, "project_optimizer", False):
                    restore_saved_groups(self, node, opt, loaded, self.frame, receiver="")
        return made

    def _step_optimizers(self, node, optimizers: list) -> None:
        """After the training step, Lightning's automatic optimization calls each optimizer's `step(closure)`: a
        project optimizer's own step runs on the moved parameters."""
        for opt in optimizers:
            found = opt.cls.method("step") if getattr(opt, "project_optimizer", False) and opt.cls is not None else None
            if found is not None and self.budget > 0:
                self.call_function(FuncRef(found[0], None, found[1], "method"), [], {}, Val("obj", obj=opt), node)

    def _run_step_hooks(self, node, info, model: Val, dev: Dev) -> None:
        """The module's step hooks (`training_step`, `validation_step`, ...) on the batches moved to its device."""
        for hook in sorted(F.LIGHTNING_AFTER_TRANSFER):
            found = info.method(hook)
            if found is None or self.budget <= 0:
                continue
            fn, cls = found
            params = (fn.args.posonlyargs + fn.args.args)[1:]
            at = F.LIGHTNING_BATCH_POSITION.get(hook)
            hook_args = [UNKNOWN] * len(params)
            if at is not None and at < len(params):
                hook_args[at] = self._transferred_batch(info, model, dev, params[at], hook)
            self.call_function(FuncRef(fn, None, cls, "method"), hook_args, {}, model, node)

    def _run_own_hooks(self, node, info, model: Val, hooks: list[str]) -> None:
        """The module's own hooks, in this order, with unknown arguments; in a step hook checked on its own (`self`
        standalone) they run as its own code (what they set on self is what the step sees)."""
        for hook in hooks:
            found = info.method(hook)
            if found is None or self.budget <= 0:
                continue
            fn, cls = found
            self.call_function(FuncRef(fn, None, cls, "method"), [UNKNOWN] * (len(fn.args.posonlyargs + fn.args.args) - 1),
                               {}, model, node, standalone=self.standalone)

    def _run_callbacks(self, node, trainer: Obj, info, model: Val, dev: Dev) -> None:
        """The project's callbacks given to this Trainer (`Trainer(callbacks=[SampleImages()])`): their hooks
        run with the module on its device (`pl_module`, also `trainer.lightning_module`) and, for the batch
        hooks, the moved batch (generated: the Callback hooks the Trainer calls after the strategy's setup)."""
        given = trainer.attrs.get("callbacks")
        if given is None:
            return
        listed = given.obj.items if given.kind == "obj" and given.obj is not None and given.obj.kind in ("list", "tuple") \
            else [given]
        trainer.attrs["lightning_module"] = model
        me = Val("obj", obj=trainer)
        for cb in listed:
            if cb.kind not in ("obj", "module") or cb.obj is None or cb.obj.cls is None:
                continue
            for hook, spec in sorted(F.LIGHTNING_CALLBACK_HOOKS.items()):
                found = cb.obj.cls.method(hook)
                if found is None or self.budget <= 0:
                    continue
                fn, cls = found
                params = (fn.args.posonlyargs + fn.args.args)[1:]
                hook_args = [UNKNOWN] * len(params)
                if params:
                    hook_args[0] = me
                if spec["module"] < len(params):
                    hook_args[spec["module"]] = model
                at = spec.get("batch")
                if at is not None and at < len(params):
                    hook_args[at] = self._transferred_batch(info, model, dev, params[at], hook)
                self.call_function(FuncRef(fn, None, cls, "method"), hook_args, {}, cb, node)

    def _transferred_batch(self, owner, self_val, dev: Dev, p, name: str) -> Val:
        """The batch a step hook gets: Lightning's transfer moves every tensor of it to the module's
        device; a project override of the transfer hook gives what it returns for the loader's batch."""
        found = owner.method(F.LIGHTNING_TRANSFER)
        if found is None:
            return Val("tensor", dev, Origin(span_of(p), f"the batch, moved to `self.device` by the Trainer before `{name}`"),
                       batch=COLLATED, text=p.arg)
        fn, cls = found
        loader = Val("tensor", CPU, Origin(span_of(fn), "the loader's batch, before the transfer", "batch"), batch=COLLATED)
        saved, self.standalone = self.standalone, False
        try:
            got = self.call_function(FuncRef(fn, None, cls, "method"), [loader, Val("device", dev), UNKNOWN][:len(fn.args.args) - 1],
                                     {}, self_val, None)
        finally:
            self.standalone = saved
        if got.kind == "tensor" and got.dev == dev:
            return got.with_text(p.arg)
        if got.kind == "obj" and got.obj is not None and got.obj.kind in ("tuple", "list") and got.obj.items \
                and all(v.kind == "tensor" and v.dev is not None and v.dev.known for v in got.obj.items):
            return got  # `return x.to(device), y`: each where the override left it
        return UNKNOWN

    def _lightning_module(self, owner, self_val, dev: Dev, fn) -> None:
        """`self` as the Trainer hands it to a hook: built by its __init__ (arguments unknown), then moved to
        the module's device, so its layers, submodules and buffers are there and plain tensor attributes
        are not (the Trainer moves with Module.to())."""
        obj = self_val.obj
        self.run_own_method(owner, self_val, "__init__")
        obj.standalone = True  # type: ignore[attr-defined]  # its placement is the symbolic one, not a run's
        origin = Origin(span_of(fn), "moved to the module's device by the Lightning Trainer", "placed")
        self._move_rec(obj, dev, origin, self.frame, set())
        obj.dev = dev
        self._lightning_layers(owner, obj, dev)
        # the module's own `*_start` hooks of the step's stage run between the move and the batches
        # (`on_validation_start` before `validation_step`): what they set on self is what the step sees
        stage = _STEP_STAGES.get(fn.name)
        if stage is not None:
            self._run_own_hooks(None, owner, self_val, [h for h in _own_hooks() if h.endswith("_start")
                                                        and (h == "on_fit_start" or h.startswith(f"on_{stage}_"))])

    def _lightning_layers(self, owner, obj: Obj, dev: Dev) -> None:
        """torch.nn layers `self.x = nn.Linear(...)` built in __init__: on the module's device (moved by the Trainer)."""
        init = owner.method("__init__")
        if init is None:
            return
        fn, cls = init
        index = cls.home or self.index
        for st in fn.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Attribute) \
                    and isinstance(st.targets[0].value, ast.Name) and st.targets[0].value.id == "self" \
                    and isinstance(st.value, ast.Call):
                q = index.qualify(FileIndex.dotted(st.value.func) or "")
                last = q.rsplit(".", 1)[-1]
                if q.startswith("torch.nn.") and last in T.NN_MODULES and last not in T.PARAM_FREE_MODULES \
                        and not q.startswith(("torch.nn.functional", "torch.nn.utils", "torch.nn.init")) \
                        and last not in ("Parameter", "ModuleList", "ModuleDict", "Sequential"):
                    cur = obj.attrs.get(st.targets[0].attr)
                    if cur is None or cur.kind != "module":  # not built by the __init__ run (a branch not taken ...)
                        sub = Obj("module", qual=q, dev=dev, origin=Origin(span_of(st), f"a layer of `{owner.name}`, moved by the Trainer"))
                        obj.attrs[st.targets[0].attr] = Val("module", obj=sub)


def _runs_another_epoch(node, trainer) -> bool:
    """`trainer.fit(...)` runs epochs until max_epochs (Lightning's default: 1000), each after the previous
    one's epoch-end hooks; validate / test / predict run one pass, and `max_epochs=1` one epoch."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fit"):
        return False
    given = trainer.attrs.get("max_epochs") if trainer is not None else None
    return given is None or not (given.kind == "const" and isinstance(given.const, int) and given.const <= 1)



def _optimizers_in(v: Val, depth: int = 0) -> list:
    """The optimizer objects in what `configure_optimizers()` returns (the forms Lightning accepts)."""
    o = v.obj if v.kind == "obj" else None
    if o is None or depth > 2:
        return []
    if o.kind == "optimizer" or getattr(o, "project_optimizer", False):
        return [o]
    if o.kind in ("list", "tuple"):
        return [x for item in o.items for x in _optimizers_in(item, depth + 1)]
    if o.kind == "dict" and "optimizer" in o.keys:
        return _optimizers_in(o.keys["optimizer"], depth + 1)
    return []
