"""Multi-GPU semantics: the current CUDA device, per-process rank devices, DataParallel and DDP.

- A bare "cuda" / `.cuda()` / `torch.device("cuda")` is the *current* device (`Dev("cuda")`):
  `torch.cuda.set_device(i)` / `with torch.cuda.device(i)` change it, cuda:0 otherwise.
- A process's rank (torchrun's LOCAL_RANK / RANK environment variables, `--local-rank` of
  `torch.distributed.launch`, `dist.get_rank()`, the first argument `mp.spawn` passes) is a `rank`
  value; a device built from it (`f"cuda:{rank}"`, `torch.device("cuda", rank)`, `.cuda(rank)`,
  `.to(rank)`) is the rank's GPU, a different one in each process. It differs from any fixed index
  (on every process but one), and from the current device when the program never sets the current
  device (the classic DDP bug: the model on `cuda:{local_rank}`, the batch on `.cuda()` = cuda:0).
  When the program sets the current device anywhere, or a framework that does is imported,
  nothing is said about the two (unknown stays silent).
- `nn.DataParallel(model, device_ids=...)`: its forward needs the module on `device_ids[0]`
  (cuda:0 by default) and scatters the inputs itself (their device does not matter).
- `DistributedDataParallel(model, device_ids=[i])` needs the module on cuda:i already, and its forward
  moves the inputs to the current device (without device_ids they stay where they are).
"""

from __future__ import annotations

import ast
import copy
import re

from devflow.analysis.findings import Finding
from devflow.analysis.lattice import ANY_INDEX, TOP, Dev, definitely_differ
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.env_devices import env_read
from devflow.analysis.interp.frames import FuncRef, span_of
from devflow.analysis.interp.dp_forward_override import bound_instance_forward
from devflow.analysis.interp.dp_nested import report_nested_wrapper, wrapper_value

# Environment variables the PyTorch launchers (torchrun, torch.distributed.launch, SLURM via
# torchrun) set per process to its rank.
_RANK_ENV = ("LOCAL_RANK", "RANK", "SLURM_LOCALID", "SLURM_PROCID", "OMPI_COMM_WORLD_LOCAL_RANK")
# `--local-rank` / `--local_rank`: the option torch.distributed.launch passes to every process.
_RANK_OPTIONS = ("local_rank",)
_RANK_FUNCS = ("torch.distributed.get_rank", "torch.distributed.get_node_local_rank")
# Which ranks number the processes of one machine (a GPU index there) and which number all the processes of the
# job (the global rank): on every node but the first the two differ.
_LOCAL_RANKS = frozenset({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "local_rank",
                          "torch.distributed.get_node_local_rank"})
_GLOBAL_RANKS = frozenset({"RANK", "SLURM_PROCID", "torch.distributed.get_rank"})


def _rank_scope(source: str) -> str | None:
    return "local" if source in _LOCAL_RANKS else "global" if source in _GLOBAL_RANKS else None
_SPAWN = ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes")
# What sets the current CUDA device: a call in the program, or a framework that sets it per process.
_SETS_CURRENT = re.compile(r"set_device\s*\(|cuda\.device\s*\(|CUDA_VISIBLE_DEVICES|device_id\s*=|"
                           r"^\s*(?:from|import)\s+(?:accelerate|lightning|pytorch_lightning|deepspeed|horovod|"
                           r"colossalai|fairscale|ignite)\b", re.M)

_NAMES_CUDA = re.compile(r"\bcuda\b")


class MultiGpu:
    """Rank values and devices, the current device, DataParallel / DDP placement checks."""

    # ---- the current device
    def current_is_default(self) -> bool:
        """True when no analysed file sets the current CUDA device (so it is cuda:0 in every process)."""
        cached = getattr(self, "_cur_default", None)
        if cached is not None and self._cur_units == len(self.units):
            return cached
        sources = [self.source] + [u.file.source for u in self.units.values()
                                   if u is not None and u.file is not None and getattr(u.file, "source", None)]
        self._cur_default = not any(_SETS_CURRENT.search(s) for s in sources)
        self._cur_units = len(self.units)
        return self._cur_default

    def program_uses_cuda(self) -> bool:
        """True when some analysed file names CUDA (`torch.cuda.is_available()`, `.cuda()`, "cuda"): the program
        runs where GPUs are visible, where DataParallel's default device_ids are every visible GPU."""
        cached = getattr(self, "_uses_cuda", None)
        if cached is not None and self._uses_cuda_units == len(self.units):
            return cached
        sources = [self.source] + [u.file.source for u in self.units.values()
                                   if u is not None and u.file is not None and getattr(u.file, "source", None)]
        self._uses_cuda = any(_NAMES_CUDA.search(s) for s in sources)
        self._uses_cuda_units = len(self.units)
        return self._uses_cuda

    def rank_dev(self, rank: Val, text: str = "") -> Dev:
        name = rank.text or "rank"
        cur = 0 if self.current_is_default() else None
        key = ("rank", cur, rank.const) if rank.const in ("local", "global") else ("rank", cur)
        return Dev("cuda", key=key, text=text or f"cuda:{{{name}}}")

    def cuda_index_dev(self, v: Val | None, text: str = "") -> Dev | None:
        """The cuda device an index argument names (`.cuda(i)`, `.to(i)`, `torch.device("cuda", i)`)."""
        if v is None:
            return None
        if v.kind == "const" and isinstance(v.const, int) and not isinstance(v.const, bool):
            return Dev("cuda", v.const)
        if v.kind == "rank":
            return self.rank_dev(v, text)
        return None

    # ---- rank values
    def rank_value(self, text: str, source: str = "") -> Val:
        """A process's rank; `source` (the variable, option or function it comes from) tells a machine's local
        rank from the job's global rank (kept in `const`)."""
        self._saw_rank = True  # several processes of this program run on one machine
        return Val("rank", text=text, const=_rank_scope(source))

    def env_value(self, key: Val, text: str) -> Val | None:
        """`os.environ["LOCAL_RANK"]`: the process's rank; any other variable: unknown."""
        if key.kind == "const" and key.const in _RANK_ENV:
            return self.rank_value(text, key.const)
        return None

    def multigpu_call(self, node, q: str, args, kwargs, frame) -> Val | None:
        """Library calls with multi-GPU meaning; None for the others."""
        cv = self.collective_call(node, q, args, kwargs)
        if cv is not None:
            return cv
        if q in ("os.environ.get", "os.getenv", "os.environ.__getitem__") and args:
            default = args[1] if len(args) > 1 else kwargs.get("default")
            return self.env_value(args[0], self.text(node)) or \
                env_read(args[0], default, Origin(span_of(node), f"from the environment at line {node.lineno}"))
        if q in _RANK_FUNCS:
            return self.rank_value(self.text(node), q)
        if q in ("builtins.int", "builtins.str") and args and args[0].kind == "rank":
            return args[0]  # the rank as a number or as text (`"cuda:" + str(local_rank)`): still its GPU
        if q in _SPAWN and args and args[0].kind == "func" and not self.standalone:
            extra = kwargs.get("args")
            rest = list(extra.obj.items) if extra is not None and extra.kind == "obj" and extra.obj is not None \
                and extra.obj.kind == "tuple" else []
            fn = args[0].func
            first = _first_param(fn)
            self.call_function(fn, [self.rank_value(first or "rank")] + rest, {}, None, node)
            return UNKNOWN
        if q == "torch.device" and args:
            if len(args) > 1 and args[0].kind == "const" and args[0].const == "cuda":
                d = self.cuda_index_dev(args[1], f"cuda:{{{self.text(node.args[1])}}}" if len(node.args) > 1 else "")
                if d is not None:
                    return Val("device", d, Origin(span_of(node), f"set at line {node.lineno}"))
            if len(args) == 1 and args[0].kind == "rank":
                return Val("device", self.rank_dev(args[0]), Origin(span_of(node), f"set at line {node.lineno}"))
        if q.startswith("torch.nn.") and q.endswith(".DataParallel") and args and args[0].kind == "module" \
                and args[0].obj is not None:
            self.wrap_data_parallel(node, args[0].obj, args, kwargs, frame)
            return wrapper_value(args[0])
        return None

    def joined_device(self, node, frame) -> Val | None:
        """`f"cuda:{rank}"`: the rank's GPU; `f"cuda:{i}"` for another `i`: some cuda device."""
        vals = node.values
        if len(vals) == 2 and isinstance(vals[0], ast.Constant) and isinstance(vals[1], ast.FormattedValue) \
                and vals[0].value in ("cuda:", "xpu:", "npu:"):
            kind = vals[0].value[:-1]
            idx = self.eval(vals[1].value, frame)
            org = Origin(span_of(node), f"set at line {node.lineno}")
            if kind == "cuda":
                d = self.cuda_index_dev(idx, self.text(node).lstrip("f").strip("'\""))
                if d is not None:
                    return Val("device", d, org)
            return Val("device", Dev(kind, key=ANY_INDEX), org)
        return None

    def percent_device(self, node, fmt: Val, arg: Val) -> Val | None:
        """`"cuda:%d" % i`: the device `f"cuda:{i}"` names; None for other formats."""
        if fmt.kind != "const" or fmt.const not in ("cuda:%d", "cuda:%s", "cuda:%i"):
            return None
        if arg.kind == "obj" and arg.obj is not None and arg.obj.kind == "tuple" and len(arg.obj.items) == 1:
            arg = arg.obj.items[0]
        return self._cuda_of_index(node, arg)

    def format_device(self, node, fmt: Val, args: list, kwargs: dict) -> Val | None:
        """`"cuda:{}".format(i)` / `"cuda:{0}".format(i)`: the device `f"cuda:{i}"` names; None otherwise."""
        if fmt.kind != "const" or fmt.const not in ("cuda:{}", "cuda:{0}") or len(args) != 1 or kwargs:
            return None
        return self._cuda_of_index(node, args[0])

    def concat_device(self, node, left: Val, right: Val) -> Val | None:
        """`"cuda:" + str(i)`: a cuda device of that index (some cuda device when the index is unknown)."""
        if left.kind != "const" or left.const != "cuda:" or (right.kind == "const" and not isinstance(right.const, str)):
            return None
        if right.kind == "const":
            return None  # both known: the string itself, which torch.device parses
        return self._cuda_of_index(node, right)

    def _cuda_of_index(self, node, arg: Val) -> Val:
        org = Origin(span_of(node), f"set at line {node.lineno}")
        d = self.cuda_index_dev(arg, self.text(node))
        return Val("device", d if d is not None else Dev("cuda", key=ANY_INDEX), org)

    def rank_option(self, dest: str) -> bool:
        return dest in _RANK_OPTIONS

    # ---- DataParallel
    def wrap_data_parallel(self, node, obj: Obj, args, kwargs, frame=None) -> None:
        ids = kwargs.get("device_ids", args[1] if len(args) > 1 else None)
        first: Dev | None = Dev("cuda", 0)  # default: every visible GPU, the first one first
        explicit = False
        many = True
        if ids is not None and not (ids.kind == "const" and ids.const is None):
            first = None
            many = False
            if ids.kind == "obj" and ids.obj is not None and ids.obj.kind in ("list", "tuple") and ids.obj.items:
                first = self.cuda_index_dev(ids.obj.items[0], "device_ids[0]")
                explicit = first is not None
                many = len(ids.obj.items) > 1 and ids.obj.kind in ("list", "tuple") and ids.elem is None
            if not many and frame is not None:
                # `if len(args.gpus) > 1: model = DataParallel(model, device_ids=args.gpus)`: several GPUs
                ids_node = next((k.value for k in node.keywords if k.arg == "device_ids"),
                                node.args[1] if len(node.args) > 1 else None)
                many = ids_node is not None and _guarded_by_several(self.text(ids_node), frame.stmt_stack, self.text)
        obj.data_parallel = (first, explicit, span_of(node), many)  # type: ignore[attr-defined]
        # wrapped where CUDA is known to be there (`if torch.cuda.is_available(): DataParallel(model)`), or in a
        # program written for GPU machines (it uses CUDA somewhere): device_ids is then every visible GPU, so
        # even a module left on the cpu runs on cuda:0
        obj.dp_on_gpus = frame is not None and (_guarded_by_cuda(frame, self) or self.program_uses_cuda())  # type: ignore[attr-defined]

    def data_parallel_call(self, node, mod: Val, args, kwargs) -> tuple[list, dict, Val] | None:
        """A call of a DataParallel-wrapped module: the module must sit on device_ids[0]; the inputs
        are scattered by DataParallel. With several GPUs, forward runs on a replica: its parameters,
        buffers and submodules copied to the replica's GPU, plain tensor attributes left where they
        are, inputs on the replica's GPU, which is also the current device while it runs (so a
        tensor made on a fixed GPU, or kept on `self` from outside, meets the other replicas'
        inputs). Returns (inputs, keyword inputs, module) as forward sees them; None when not wrapped."""
        obj = mod.obj
        if not self.standalone:
            report_nested_wrapper(self, node, mod)  # DataParallel(DataParallel(m)), also under a DDP path
        if obj is not None and getattr(obj, "ddp_moves_inputs", False) and not self.standalone \
                and getattr(obj, "data_parallel", None) is None:  # (DDP over a DataParallel: that one's checks apply)
            # DDP(model, device_ids=[i]) sends the inputs to the current device before forward: their
            # device does not matter (the model's own placement is checked when it is wrapped)
            return [UNKNOWN if a.kind == "tensor" else a for a in args], \
                {k: (UNKNOWN if v.kind == "tensor" else v) for k, v in kwargs.items()}, mod
        dp = getattr(obj, "data_parallel", None) if obj is not None else None
        if dp is None or self.standalone:
            return None
        first, explicit, wrap_span, many = dp
        dev = obj.dev
        if first is not None and dev is not None and dev.known and not obj.dispatched \
                and (explicit or not dev.is_cpu or getattr(obj, "dp_on_gpus", False)) and definitely_differ(dev, first) \
                and ("dp", wrap_span) not in self.mix_origins:
            self.mix_origins.add(("dp", wrap_span))
            where = obj.moved or obj.origin
            reason = f" ({where.reason})" if where else ""
            related = [(wrap_span, f"wrapped in DataParallel at line {wrap_span.line}")]
            if where is not None:
                related.append((where.span, where.reason))
            if dev.text == _REPLICA:
                msg = (f"`{self.text(node.func)}` is a DataParallel module inside a module that DataParallel "
                       f"replicates{reason}: in each replica its parameters are on that replica's GPU, but it "
                       f"scatters the inputs over its own device_ids and runs its forward with them on "
                       f"{'cuda:0 (device_ids[0])' if not explicit else first.render()}: wrap only one of the two")
            else:
                msg = (f"`{self.text(node.func)}` is a DataParallel module whose parameters are on "
                       f"{dev.render()}{reason}, but DataParallel runs its forward with them on "
                       f"{'cuda:0 (device_ids[0])' if not explicit else first.render()}: move the module "
                       f"there, or do not wrap it")
            self.add(Finding("DEV106", span_of(node), msg, related, None))
        self._instance_forward_in_replicas(node, obj, wrap_span, many, first)
        if dev is None or not dev.known or dev.is_cpu or definitely_differ(dev, first):
            return [UNKNOWN if a.kind == "tensor" else a for a in args], \
                {k: (UNKNOWN if v.kind == "tensor" else v) for k, v in kwargs.items()}, mod
        org = Origin(wrap_span, f"scattered to the replicas' GPUs by DataParallel (line {wrap_span.line})", "placed")
        if many and cuda_path(dev) is not None and obj.cls is not None:
            self._dp_cpu_returns = []  # what the replica's forward returns on the cpu (note_replica_return)
            dev = Dev("cuda", key=("rank", None), text=_REPLICA)
            mod = Val("module", obj=self._replica(obj, dev, Origin(wrap_span, f"replicated by DataParallel "
                                                                   f"(line {wrap_span.line})", "placed"), {}),
                      text=mod.text)
        return [Val("tensor", dev, org, scalar=a.scalar) if a.kind == "tensor" else a for a in args], \
            {k: (Val("tensor", dev, org, scalar=v.scalar) if v.kind == "tensor" else v) for k, v in kwargs.items()}, mod

    def _instance_forward_in_replicas(self, node, obj: Obj, wrap_span, many: bool, first: Dev | None) -> None:
        """DataParallel over several GPUs of a GPU module whose forward is overridden on the instance: the
        replicas copy that bound method and all run the original module (dp_forward_override)."""
        dev = obj.dev
        if not many or dev is None or not dev.known or dev.is_cpu or ("dp-forward", wrap_span) in self.mix_origins:
            return
        if bound_instance_forward(obj) is None:
            return
        self.mix_origins.add(("dp-forward", wrap_span))
        self.add(Finding("DEV106", span_of(node),
                         f"`{self.text(node.func)}` is a DataParallel module whose `forward` is overridden on the "
                         f"instance (a method bound to the original module): DataParallel's replicas copy the "
                         f"instance `__dict__`, so the replica on each GPU runs the original module's forward, with "
                         f"its parameters on {first.render() if first is not None else 'device_ids[0]'}, on the inputs scattered to its own GPU: override "
                         f"forward in the class (or a subclass), or do not wrap it in DataParallel",
                         [(wrap_span, f"wrapped in DataParallel at line {wrap_span.line}")], None))

    def data_parallel_gather(self, mod: Val, out: Val, node=None) -> Val:
        """What a DataParallel call returns: the replicas' outputs gathered on output_device (device_ids[0]),
        so a tensor forward returned on the replica's GPU is on device_ids[0] after the call (unknown when
        device_ids[0] is). A cpu tensor a replica's forward returns cannot be gathered ("Gather function
        not implemented for CPU tensors"): DEV209 at the call."""
        dp = getattr(mod.obj, "data_parallel", None) if mod.obj is not None else None
        if dp is None or self.standalone or not dp[3]:
            return out
        if mod.obj.dev is not None and mod.obj.dev.text == _REPLICA and ("dp", dp[2]) in self.mix_origins:
            return UNKNOWN  # a DataParallel nested in a replica fails in its forward (DEV106): nothing comes back
        cpu_returns, self._dp_cpu_returns = getattr(self, "_dp_cpu_returns", None), None
        if cpu_returns and node is not None and ("dp-gather", span_of(node)) not in self.mix_origins:
            self.mix_origins.add(("dp-gather", span_of(node)))
            st, t = cpu_returns[0]
            made = f" ({t.origin.reason})" if t.origin is not None and t.origin.reason else ""
            related = [(span_of(st), "returned on the cpu here"), (dp[2], f"wrapped in DataParallel at line {dp[2].line}")]
            if t.origin is not None:
                related.append((t.origin.span, t.origin.reason))
            self.add(Finding("DEV209", span_of(node),
                             f"`{self.text(node.func)}` is a DataParallel module whose forward returns a cpu tensor at "
                             f"line {st.lineno}{made}: DataParallel gathers the replicas' outputs onto device_ids[0] "
                             f"and refuses cpu tensors (\"Gather function not implemented for CPU tensors\"): create "
                             f"it on the input's device (`device=x.device`) or register it as a buffer", related, None))
        first, wrap_span = dp[0], dp[2]
        org = Origin(wrap_span, f"gathered on device_ids[0] by DataParallel (line {wrap_span.line})", "placed")

        def gather(v: Val) -> Val:
            if v.kind == "tensor" and v.dev is not None and v.dev.text == _REPLICA:
                return Val("tensor", first if first is not None else TOP, org, scalar=v.scalar, text=v.text, batch=v.batch)
            if v.kind == "obj" and v.obj is not None and v.obj.kind in ("tuple", "list") and v.obj.items:
                items = [gather(i) for i in v.obj.items]
                if any(a is not b for a, b in zip(items, v.obj.items)):
                    return Val("obj", obj=Obj(v.obj.kind, qual=v.obj.qual, items=items), elem=v.elem)
            return v
        return gather(out)

    def note_replica_return(self, st, val: Val, frame) -> None:
        """A `return` of forward() running on a DataParallel replica: a cpu tensor among what it returns."""
        fn = frame.node
        if getattr(fn, "name", "") != "forward" or not fn.args.args:
            return
        me = frame.env.get(fn.args.args[0].arg)
        if me is None or me.kind != "module" or me.obj is None or me.obj.dev is None or me.obj.dev.text != _REPLICA:
            return
        t = _cpu_output(val)
        if t is not None:
            self._dp_cpu_returns.append((st, t))

    def _replica(self, obj: Obj, dev: Dev, origin: Origin, seen: dict, top: bool = True) -> Obj:
        """What `replicate()` gives a replica: module objects copied, parameters and buffers on its GPU.
        A plain tensor attribute made on the bare current device was made on cuda:0 (the main thread's).
        A DataParallel wrapper inside stays one: its module now sits on the replica's GPU, not on its own
        device_ids[0] (DataParallel nested in DataParallel)."""
        if id(obj) in seen:
            return seen[id(obj)]
        rep = seen[id(obj)] = copy.copy(obj)
        rep.attrs, rep.items, rep.pending, rep.optimizers = dict(obj.attrs), list(obj.items), [], []
        rep.dev, rep.moved = dev, origin
        if top:
            rep.data_parallel = None  # type: ignore[attr-defined]
        main_current = Dev("cuda", 0) if self.current_is_default() else None
        for name, v in list(rep.attrs.items()):
            if name in obj.children and v.kind == "module" and v.obj is not None:
                rep.attrs[name] = Val("module", obj=self._replica(v.obj, dev, origin, seen, False), text=v.text)
            elif name in obj.buffers and v.kind == "tensor":
                rep.attrs[name] = Val("tensor", dev, origin, scalar=v.scalar)
            elif v.kind == "tensor" and cuda_path(v.dev) == Dev("cuda"):
                rep.attrs[name] = Val("tensor", main_current, v.origin, scalar=v.scalar) if main_current else UNKNOWN
            elif v.kind == "tensor" and v.dev is not None and v.dev.kind == "sym" and cuda_path(v.dev) is not None:
                # `"cuda:1" if available else "cpu"`, made outside forward: that GPU, not the replica's
                rep.attrs[name] = Val("tensor", cuda_path(v.dev), v.origin, scalar=v.scalar)
        rep.items = [Val("module", obj=self._replica(i.obj, dev, origin, seen, False), text=i.text)
                     if i.kind == "module" and i.obj is not None else i for i in rep.items]
        return rep

    # ---- DistributedDataParallel
    def check_ddp_device(self, node, obj: Obj, ids: Val) -> None:
        """`DDP(model, device_ids=[i])` with the model on another GPU (`.cuda()` = cuda:0 in every
        process, `device_ids=[local_rank]`): DDP raises at construction."""
        if ids.kind != "obj" or ids.obj is None or ids.obj.kind not in ("list", "tuple") or len(ids.obj.items) != 1:
            return
        want = self.cuda_index_dev(ids.obj.items[0], "")
        # a device chosen between the cpu and a GPU is that GPU where CUDA is available (on the cpu path DDP refuses
        # device_ids for a cpu module as well)
        chosen = obj.dev if obj.dev is not None and obj.dev.kind == "sym" and obj.dev.gpu is not None else None
        dev = chosen.gpu if chosen is not None else obj.dev
        if want is None or dev is None or not dev.known or dev.kind != "cuda" or obj.dispatched \
                or getattr(obj, "standalone", False) or not definitely_differ(dev, want):
            return
        ids_node = next((k.value for k in node.keywords if k.arg == "device_ids"), None)
        ids_text = self.text(ids_node) if ids_node is not None else "[...]"
        where = obj.moved or obj.origin
        key = ("module", where.span if where else span_of(node))
        if key in self.mix_origins:
            return
        self.mix_origins.add(key)
        note = ("; a bare cuda device is the current one, cuda:0 in every process unless "
                "torch.cuda.set_device(local_rank) is called first") if dev.index is None and not dev.is_rank else \
            ("; a global rank numbers the processes of all the nodes, a GPU index only those of one machine: they "
             "differ on every node but the first") if dev.is_rank and want.is_rank else ""
        why = [f"{dev.render()} where CUDA is available"] if chosen is not None else []
        why += [where.reason] if where else []
        on = (chosen or dev).render() + (f" ({'; '.join(why)})" if why else "")
        self.add(Finding("DEV106", span_of(ids_node if ids_node is not None else node),
                         f"`{self.text(node.func)}` is given device_ids={ids_text} but the model is on "
                         f"{on}{note}; DistributedDataParallel "
                         f"needs the model on that GPU: move it there (or call torch.cuda.set_device) before wrapping",
                         [(where.span, where.reason)] if where else [], None))

    def rank_mix_note(self, a: Dev | None, b: Dev | None) -> str:
        """A sentence for a mix of the rank's GPU and the current device."""
        a, b = _rank_side(a), _rank_side(b)
        if a is not None and b is not None and a.kind == b.kind == "cuda" and a.key is None and b.key is None \
                and (a.index is None) != (b.index is None):
            return ("; a bare cuda device is the current one, cuda:0 unless torch.cuda.set_device() changes it, "
                    f"not {(a if a.index is not None else b).render()}")
        if a is None or b is None or not (a.is_rank or b.is_rank):
            return ""
        rank, other = (a, b) if a.is_rank else (b, a)
        if rank.text == _REPLICA and other.index is not None:
            return (f"; DataParallel runs forward on every GPU in device_ids, so a tensor on {other.render()} "
                    f"meets the inputs of the replicas on the other GPUs: derive the device from an input "
                    f"(`x.device`) or register the tensor as a buffer")
        if other.kind == "cuda" and other.index is None:
            return ("; a bare cuda device is the current one, cuda:0 in every process unless "
                    "torch.cuda.set_device(local_rank) is called, so every process but rank 0 mixes two GPUs")
        return ""


_REPLICA = "each replica's GPU (DataParallel)"


def _rank_side(dev: Dev | None) -> Dev | None:
    """A device chosen between the cpu and the rank's GPU, taken on its GPU side; else the device itself."""
    if dev is not None and dev.kind == "sym" and dev.gpu is not None and dev.gpu.is_rank:
        return dev.gpu
    return dev


def cuda_path(dev: Dev | None) -> Dev | None:
    """The CUDA device `dev` is on the machine the analysis assumes (CUDA available): a cuda device
    itself, or `"cuda[:i]" if torch.cuda.is_available() else "cpu"` taken on its GPU side; else None."""
    if dev is None:
        return None
    if dev.kind == "cuda":
        return dev
    if dev.kind == "sym" and dev.accel and isinstance(dev.key, tuple) and dev.key[:1] == ("ifexp",) \
            and dev.key[-1] == "cuda":
        return Dev("cuda", dev.index)
    return None


def _cpu_output(v: Val, depth: int = 0) -> Val | None:
    """A tensor known to be on the cpu in what forward returns (a tensor, or inside a tuple / list / dict)."""
    if v.kind == "tensor":
        return v if v.dev is not None and v.dev.is_cpu else None
    if v.kind == "obj" and v.obj is not None and depth < 3:
        for i in (v.obj.items if v.obj.kind in ("list", "tuple") else v.obj.keys.values() if v.obj.kind == "dict" else ()):
            t = _cpu_output(i, depth + 1)
            if t is not None:
                return t
    return None


def _first_param(fn: FuncRef) -> str:
    node = getattr(fn, "node", None)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        ps = a.posonlyargs + a.args
        if ps:
            return ps[0].arg
    return ""


def device_type_name(dev: Dev | None) -> str | None:
    """`device.type` of a device value: its kind ("cuda" for any GPU, a rank's or a replica's too), or None
    when unknown (a device chosen at run time between kinds, except the accelerator side of a CUDA choice)."""
    if dev is None or not dev.known:
        return None
    if dev.kind in ("cpu", "cuda", "mps", "meta", "xpu", "npu"):
        return dev.kind
    path = cuda_path(dev)
    return path.kind if path is not None else None


def _guarded_by_cuda(frame, interp) -> bool:
    """Whether the innermost statement sits in the body of an `if` that requires CUDA: its test is
    `torch.cuda.is_available()` (or `torch.cuda.device_count()` compared to be positive), alone or as one
    operand of an `and` (`if not args.no_cuda and torch.cuda.is_available():`)."""
    stack = frame.stmt_stack
    for st, inner in zip(stack, stack[1:]):
        if not isinstance(st, ast.If) or not any(s is inner for s in st.body):
            continue
        t = st.test
        terms = t.values if isinstance(t, ast.BoolOp) and isinstance(t.op, ast.And) else [t]
        if any(_requires_cuda(term, frame, interp) for term in terms):
            return True
    return False


def _requires_cuda(term, frame, interp) -> bool:
    if isinstance(term, ast.Compare) and len(term.ops) == 1 and isinstance(term.comparators[0], ast.Constant) \
            and isinstance(term.comparators[0].value, int) and (
                isinstance(term.ops[0], ast.Gt) and term.comparators[0].value >= 0
                or isinstance(term.ops[0], ast.GtE) and term.comparators[0].value >= 1):
        term = term.left
        want = "torch.cuda.device_count"
    else:
        want = "torch.cuda.is_available"
    return isinstance(term, ast.Call) and not term.args and interp.qualname(term.func, frame) == want


def _guarded_by_several(ids_text: str, stack: list, text) -> bool:
    """Whether the innermost statement sits in the body of `if len(<ids>) > 1:` (or `>= 2`)."""
    for st, inner in zip(stack, stack[1:]):
        if not isinstance(st, ast.If) or not any(s is inner for s in st.body):
            continue
        t = st.test
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.left, ast.Call) \
                and isinstance(t.left.func, ast.Name) and t.left.func.id == "len" and len(t.left.args) == 1 \
                and text(t.left.args[0]) == ids_text and isinstance(t.comparators[0], ast.Constant) \
                and isinstance(t.comparators[0].value, int) and (
                    isinstance(t.ops[0], ast.Gt) and t.comparators[0].value >= 1
                    or isinstance(t.ops[0], ast.GtE) and t.comparators[0].value >= 2):
            return True
    return False
