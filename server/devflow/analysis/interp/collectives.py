"""torch.distributed process groups and collectives (DEV208).

- A process group communicates the devices its backend supports (torch's `Backend.backend_capability`,
  in the generated knowledge): "nccl" only cuda tensors, "gloo" cpu and cuda. `init_process_group("nccl")`
  makes an NCCL-only default group: a cpu tensor handed to `all_reduce` / `broadcast` / `all_gather` ...
  raises ("Tensors must be CUDA and dense", "No backend type associated with device type cpu").
  `init_process_group()` without a backend sets up the backend of the machine's accelerator only (torch
  2.6 on; probed into the knowledge): NCCL on a machine with CUDA. "cpu:gloo,cuda:nccl" names one backend
  per device type, so cpu tensors go through gloo. `dist.new_group(backend=...)` is a group of its own backend;
  `group=` anything not known here leaves the backend unknown (silent).
- Object collectives (`all_gather_object`, `broadcast_object_list` ...) serialise the object into a tensor
  on the device of the group's backend: for NCCL the *current* CUDA device. Processes of one machine
  that never set it (`torch.cuda.set_device(rank)`) all use cuda:0, and NCCL refuses two ranks on one GPU.
- Lightning Fabric: `fabric.launch()` sets up the default group of its strategy (generated); `Trainer(devices=2)` with
  no strategy gets the connector's choice for several devices.
- The backend of the default group is recorded when its `init_process_group` call runs; a collective
  reached before (or without) it says nothing. A command-line option whose default names a backend
  (`--dist-backend nccl`) is that backend: the program's own launch uses it; so is a backend read from the
  environment with a backend name on the other path (`os.environ["B"] if ... else "nccl"`). On the machine
  assumed (CUDA), `dist.is_nccl_available()` is True: the backend torch sets up there is built in.
"""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as FW
from devflow.analysis.findings import Finding
from devflow.analysis.interp.env_devices import is_env_read
from devflow.analysis.interp.frames import span_of
from devflow.analysis.lattice import CPU, TOP, Dev
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val

_PREFIX = "torch.distributed."
_CONFLICT = "conflict"
_AVAILABILITY = {f"is_{b}_available": b for b in ("nccl", "gloo", "mpi", "ucc", "xccl")}


def configured_backend(a: Val, b: Val) -> Val | None:
    """A backend read from the environment on one path and a backend name on the other (`if os.getenv("BACKEND"):
    backend = os.environ["BACKEND"] elif ...: backend = "nccl"`): that name, the one the program's own launch uses
    (as for a `--dist-backend` option's default). None otherwise."""
    for x, y in ((a, b), (b, a)):
        if is_env_read(x) and y.kind == "const" and isinstance(y.const, str) and y.const.lower() in FW.BACKEND_DEVICES:
            return y
    return None


class Collectives:
    """Backends of process groups, and the tensors collectives are given."""

    # while a Lightning Trainer runs a module's hooks: (span, text) of the Trainer whose strategy set up an NCCL
    # process group, for `self.log(..., sync_dist=True)`; None otherwise
    lightning_group = None

    def _first_report(self, node) -> bool:
        """Whether this collective call is not reported yet (one finding per call, whatever its path)."""
        key = ("collective", span_of(node))
        if key in self.mix_origins:
            return False
        self.mix_origins.add(key)
        return True

    def lightning_process_group(self, node, kwargs, fabric: bool = False):
        """A Lightning Trainer (or Fabric) whose strategy sets up a process group on its device's backend
        (`strategy="ddp"`, `DDPStrategy()`; generated: the strategies using `_get_process_group_backend`; with no
        strategy named, the one the connector picks for several devices, `devices=2` / `devices=[0, 1]`) on GPUs
        (accelerator "gpu" / "cuda" / "auto" or none on a machine with CUDA; `gpus=` of Lightning 1.x): NCCL.
        Its (span, strategy text); None when the backend is not NCCL or not known."""
        if "__opaque__" in kwargs:
            return None
        names = FW.FABRIC_GROUP_STRATEGIES if fabric else FW.LIGHTNING_GROUP_STRATEGIES
        strategy, acc = kwargs.get("strategy"), kwargs.get("accelerator")
        if strategy is None and _several_devices(kwargs.get("devices", kwargs.get("gpus"))):
            strategy = Val("const", const=FW.FABRIC_SEVERAL_DEVICES if fabric else FW.LIGHTNING_SEVERAL_DEVICES)
        if strategy is None:
            return None
        if strategy.kind == "const" and isinstance(strategy.const, str):
            if strategy.const not in names:
                return None
        elif strategy.kind == "obj" and strategy.obj is not None and strategy.obj.kind == "lightning_strategy":
            backend = strategy.obj.attrs.get("backend")
            if backend is not None and not (backend.kind == "const" and backend.const in ("nccl", None)):
                return None
        else:
            return None
        if acc is not None and not (acc.kind == "const" and acc.const in ("gpu", "cuda", "auto", None)):
            return None
        return span_of(node), self.text(node)

    def fabric_device(self, node, kwargs) -> Dev | None:
        """Where a Fabric runs: its accelerator's device ("gpu" / "cuda" / "auto" or none: the GPU of a machine with
        CUDA, the process's own with several), the cpu for "cpu"; None when the accelerator is not known."""
        if "__opaque__" in kwargs:
            return None
        acc = kwargs.get(FW.FABRIC_ACCELERATOR_PARAM) if FW.FABRIC_ACCELERATOR_PARAM else None
        if acc is not None and not (acc.kind == "const" and acc.const in ("gpu", "cuda", "auto", "cpu", None)):
            return None
        if acc is not None and acc.const == "cpu":
            return CPU
        return Dev("sym", key=("fabric", id(node)), text="fabric.device", accel=True)

    def fabric_method(self, node, fabric: Val, name: str, args, kwargs) -> Val:
        """`fabric.launch()` (generated: the Fabric methods that set up the processes' environment): from here the
        default process group is the one of the Fabric's strategy (NCCL on GPUs); `fabric.launch(fn)` runs
        `fn(fabric, ...)` in each process with it. `fabric.setup(model, *optimizers)` / `setup_module(model)`
        (generated: the methods moving the module they set up) move the model to the Fabric's device, as `.to()`
        does: the optimizers' state stays where it is; they give back what they were given."""
        if name in FW.FABRIC_MODULE_SETUPS:
            return self._fabric_setup(node, fabric, FW.FABRIC_MODULE_SETUPS[name], args, kwargs)
        if name not in FW.FABRIC_LAUNCHES:
            return UNKNOWN
        group = fabric.obj.attrs.get("process_group")
        if group is not None:
            span, text = group
            spec = self.backend_spec(Val("const", const="nccl"))
            prev = getattr(self, "_pg_default", None)
            self._pg_default = (spec, span, f" (the strategy of `{text}`, launched at line {node.lineno})") \
                if prev is None or prev[0] == spec else (_CONFLICT, None, "")
        fn = args[0] if args else kwargs.get("function")
        if fn is not None and fn.kind == "func" and not self.standalone:
            return self.call(node, fn, None, [fabric] + list(args[1:]), {k: v for k, v in kwargs.items() if k != "function"},
                             self.frame)
        return UNKNOWN

    def _fabric_setup(self, node, fabric: Val, gate: str | None, args, kwargs) -> Val:
        if "__opaque__" in kwargs or any(a.kind == "unknown" and a.const == "*" for a in args) or not args:
            return UNKNOWN
        flag = kwargs.get(gate) if gate else None
        moves = flag is None or flag.kind == "const" and flag.const is True
        mod, dev = args[0], fabric.obj.dev
        if dev is not None and dev.kind == "sym" and isinstance(node.func, ast.Attribute):
            dev = dev.named(f"{self.text(node.func.value)}.device")  # (as this code names it: fixes write it)
        if mod.kind == "module" and mod.obj is not None and not mod.obj.dispatched:
            if moves and dev is not None:
                self.move_module(node, mod, dev, self.frame, self.text(node), self.text(node.func))
            elif not (flag is not None and flag.kind == "const" and flag.const is False):
                # `Fabric(accelerator=args.accelerator)`, `move_to_device=args.move`: where the model ends up is
                # not known
                self._move_rec(mod.obj, TOP, Origin(span_of(node), f"maybe moved by `{self.text(node)}` at line "
                                                                   f"{node.lineno}"), self.frame, set())
        return args[0] if len(args) == 1 else Val("obj", obj=Obj("tuple", items=list(args)))

    def check_synced_log(self, node, name: str, args, kwargs) -> None:
        """`self.log(name, value, sync_dist=True)` in a hook the Trainer runs with an NCCL process group: the
        value is all-reduced there, so a cpu tensor fails (a Python number is made a tensor on the module's
        device first)."""
        spec = FW.LIGHTNING_SYNCED_LOGS.get(name)
        sync = kwargs.get("sync_dist")
        if spec is None or self.lightning_group is None or sync is None or not (sync.kind == "const" and sync.const is True):
            return
        at = spec.get("value", spec.get("entries"))
        value = kwargs.get(spec["param"], args[at] if at is not None and len(args) > at else None)
        if value is None:
            return
        if "entries" in spec:
            if value.kind != "obj" or value.obj is None or value.obj.kind != "dict":
                return
            value = Val("obj", obj=Obj("list", items=list(value.obj.keys.values())), elem=value.elem)
        t = _cpu_tensor(value)
        if t is None:
            return
        if not self._first_report(node):
            return
        trainer_span, trainer_text = self.lightning_group
        self.report_cpu_sync(node, (trainer_span, f"the Trainer's strategy sets up an NCCL process group: `{trainer_text}`"),
                             t.origin, lambda made: (
                                 f"`{self.text(node.func)}(..., sync_dist=True)` all-reduces a cpu tensor{made} over the NCCL "
                                 f"process group of the Trainer's strategy, which communicates cuda tensors only (\"No backend "
                                 f"type associated with device type cpu\" / \"Tensors must be CUDA and dense\"): log it on the "
                                 f"module's device (`.to(self.device)`), or log a Python number (`.item()`)"))

    def report_cpu_sync(self, node, group: tuple, origin, message) -> None:
        """DEV208 at `node`: `group` is (span, why) of the NCCL group, `origin` where the cpu side comes from,
        `message(made)` the text given that origin's reason."""
        related = [group] if group[0] is not None else []
        if origin is not None:
            related.append((origin.span, origin.reason))
        made = f" ({origin.reason})" if origin is not None and origin.reason else ""
        self.add(Finding("DEV208", span_of(node), message(made), related, None))

    def collective_call(self, node, q: str, args, kwargs) -> Val | None:
        """torch.distributed calls that create a group or communicate; None for the others."""
        if not q.startswith(_PREFIX) or self.standalone:
            return None
        name = q[len(_PREFIX):]
        if name in _AVAILABILITY and _AVAILABILITY[name] in FW.NO_BACKEND_ON_CUDA.values():
            # the backend torch sets up on a machine with CUDA is built in there: `dist.is_nccl_available()` is True
            return Val("const", const=True, text=self.text(node))
        if name in FW.GROUP_CONSTRUCTORS:
            i = FW.GROUP_CONSTRUCTORS[name]
            given = kwargs.get("backend", args[i] if len(args) > i else None)
            spec = self.backend_spec(given)
            how = "" if given is not None and not (given.kind == "const" and given.const is None) else \
                " (no backend given: on a machine with CUDA torch sets up NCCL alone)"
            if name == "init_process_group":
                prev = getattr(self, "_pg_default", None)
                self._pg_default = (spec, span_of(node), how) if prev is None or prev[0] == spec else (_CONFLICT, None, "")
                return UNKNOWN
            return Val("obj", obj=Obj("process_group", qual=q, attrs={"backend": spec, "span": span_of(node), "how": how}))
        spec = FW.COLLECTIVES.get(name)
        if spec is not None:
            self.check_collective(node, name, spec, args, kwargs)
        return None

    def backend_spec(self, v: Val | None):
        """A backend argument as {device type: backend name}: one name serves the devices it supports;
        "cpu:gloo,cuda:nccl" names one per device; None (or no argument): what torch sets up on a machine
        with CUDA (the generated knowledge: NCCL only). None when the argument is not known here."""
        if v is None or (v.kind == "const" and v.const is None):
            return tuple(sorted(FW.NO_BACKEND_ON_CUDA.items()))  # the backend of the machine's accelerator
        text = v.const if v.kind == "const" else v.obj.qual if v.kind == "obj" and v.obj is not None \
            and v.obj.kind == "backend_option" else None
        if v.kind == "qual" and isinstance(v.const, str) and v.const.startswith(_PREFIX + "Backend."):
            text = v.const.rsplit(".", 1)[-1]  # `dist.Backend.NCCL` is the string "nccl"
        if not isinstance(text, str):
            return None
        text = text.strip().lower()
        if ":" in text:
            pairs = [p.split(":", 1) for p in text.split(",")]
            if all(len(p) == 2 and p[1].strip() in FW.BACKEND_DEVICES for p in pairs):
                return tuple(sorted((d.strip(), b.strip()) for d, b in pairs))
            return None
        if text not in FW.BACKEND_DEVICES:
            return None
        return tuple(sorted((d, text) for d in FW.BACKEND_DEVICES[text]))

    def group_backend(self, group: Val | None):
        """(spec, span of the call that made the group, how its backend was chosen) for a collective's `group`;
        None when unknown."""
        if group is None or (group.kind == "const" and group.const is None):
            pg = getattr(self, "_pg_default", None)
            return pg if pg is not None and pg[0] not in (None, _CONFLICT) else None
        if group.kind == "obj" and group.obj is not None and group.obj.kind == "process_group":
            spec = group.obj.attrs.get("backend")
            return (spec, group.obj.attrs.get("span"), group.obj.attrs.get("how", "")) if spec is not None else None
        return None

    def check_collective(self, node, name: str, spec: dict, args, kwargs) -> None:
        gi = spec["group"]
        pg = self.group_backend(kwargs.get("group", args[gi] if len(args) > gi else None))
        if pg is None:
            return
        backends = dict(pg[0])
        if spec["objects"]:
            self.check_object_collective(node, name, backends, pg[1], args, kwargs)
            return
        cpu_backend = backends.get("cpu")
        if cpu_backend is not None and "cpu" in FW.BACKEND_DEVICES.get(cpu_backend, ()):
            return
        data = [(a, node.args[i] if i < len(node.args) else None) for i, a in enumerate(args[:gi])]
        data += [(v, next((k.value for k in node.keywords if k.arg == k_), None)) for k_, v in kwargs.items()
                 if k_ != "group"]
        for v, arg_node in data:
            t = _cpu_tensor(v)
            if t is None:
                continue
            if not self._first_report(node):
                return
            named = ", ".join(sorted(set(backends.values())))
            what = f"`{self.text(arg_node)}`" if arg_node is not None else "a tensor"
            made = f" ({t.origin.reason})" if t.origin is not None and t.origin.reason else ""
            related = [(pg[1], f"process group created with backend {named!r} here")] if pg[1] is not None else []
            if t.origin is not None:
                related.append((t.origin.span, t.origin.reason))
            self.add(Finding("DEV208", span_of(node),
                             f"`{self.text(node.func)}` is given {what}, a cpu tensor{made}, but the process group "
                             f"{'was created' if pg[1] is not None else 'is'} with backend {named!r}{pg[2]}, which "
                             f"communicates {', '.join(sorted(_devices(backends)))} tensors only (\"Tensors must be "
                             f"CUDA and dense\" / \"No backend type associated with device type cpu\"): create the "
                             f"tensor on the GPU, or use a gloo group (`dist.new_group(backend=\"gloo\")`) for cpu data",
                             related, None))
            return

    def check_object_collective(self, node, name: str, backends: dict, pg_span, args, kwargs) -> None:
        """An NCCL object collective in processes that never set their current CUDA device."""
        if not FW.OBJECT_COLLECTIVES_ON_CURRENT or "cpu" in backends or "device" in kwargs \
                or not getattr(self, "_saw_rank", False) or not self.current_is_default():
            return
        if set(backends.values()) - {b for b, ds in FW.BACKEND_DEVICES.items() if "cuda" in ds and "cpu" not in ds}:
            return
        if not self._first_report(node):
            return
        related = [(pg_span, "NCCL process group created here")] if pg_span is not None else []
        self.add(Finding("DEV208", span_of(node),
                         f"`{self.text(node.func)}` on an NCCL process group serialises the object into a tensor on the "
                         f"current CUDA device, and this program never sets it (no `torch.cuda.set_device`): every "
                         f"process of this machine uses cuda:0, which NCCL refuses (\"Duplicate GPU detected\") or "
                         f"hangs on: call `torch.cuda.set_device(local_rank)` in each process before the collective",
                         related, None))


def _several_devices(v: Val | None) -> bool:
    """`devices=2`, `devices=[0, 1]`, `devices="0,1"`: more than one device, known here (`-1` / "auto": all the
    machine has, a number not known)."""
    if v is None:
        return False
    if v.kind == "const" and isinstance(v.const, int) and not isinstance(v.const, bool):
        return v.const > 1
    if v.kind == "const" and isinstance(v.const, str):
        parts = [p for p in v.const.split(",") if p.strip()]
        return len(parts) > 1 and all(p.strip().isdigit() for p in parts)
    if v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple") and v.elem is None:
        return len(v.obj.items) > 1
    return False


def _cpu_tensor(v: Val) -> Val | None:
    """`v` if it is a tensor known to be on the cpu; the first such element of a list / tuple of tensors."""
    if v.kind == "tensor":
        return v if v.dev is not None and v.dev.is_cpu else None  # a 0-dim cpu tensor too
    if v.kind == "obj" and v.obj is not None and v.obj.kind in ("list", "tuple"):
        if v.elem is not None:
            return _cpu_tensor(v.elem)
        for i in v.obj.items:
            t = _cpu_tensor(i)
            if t is not None:
                return t
    return None


def _devices(backends: dict) -> set:
    return {d for b in set(backends.values()) for d in FW.BACKEND_DEVICES.get(b, ())}
