"""Tables about the frameworks users run around torch (-> devflow/knowledge/frameworks.json):

- torch.distributions: which classes exist, which constructor arguments are their parameters, and
  which methods take a value / a sample shape (read from the installed torch, probed on meta);
- functions taking `generator=` (torch's stubs) and the device a fresh `torch.Generator()` is on;
- functions whose `lengths` must be a cpu tensor (probed: meta lengths are refused naming the CPU);
- torch.jit.trace: whether a device computed at trace time is baked into the graph (probed); torch's
  functions that trace a module they are given on inputs they are given (SummaryWriter.add_graph);
- Lightning: LightningModule hooks that see the batch before / after Trainer's transfer to the
  module's device (ast scan of the released `lightning` wheel, never imported);
- transformers generate(): the callback bases it calls with the input's tensors (`__call__`
  signatures of LogitsProcessor / StoppingCriteria ..., ast scan of the wheel).
"""

from __future__ import annotations

import ast
import inspect
import tarfile
import zipfile
from pathlib import Path


# ---------------------------------------------------------------- from the installed torch

def _distributions() -> dict:
    import torch
    import torch.distributions as D

    out = {}
    for name in sorted(D.__all__):
        cls = getattr(D, name, None)
        if not (isinstance(cls, type) and issubclass(cls, D.Distribution)) or cls is D.Distribution:
            continue
        sig = [p for p in inspect.signature(cls.__init__).parameters.values()
               if p.name not in ("self", "validate_args") and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        ac = getattr(cls, "arg_constraints", None)
        if isinstance(ac, dict):
            params = [p.name for p in sig if p.name in ac]
        else:  # a property computed from the instance (Uniform, Wishart): every tensor-like argument
            params = [p.name for p in sig if "distribution" not in p.name and p.name not in ("transforms",)]
        if not params:
            continue  # built from other distributions (Independent, MixtureSameFamily ...): not followed
        out[name] = {"signature": [p.name for p in sig], "params": params}
    base = D.Distribution
    value, shaped, nullary, props = [], [], [], []
    for n, m in inspect.getmembers(base):
        if n.startswith("_"):
            continue
        if isinstance(inspect.getattr_static(base, n), property):
            props.append(n)
        elif callable(m):
            ps = list(inspect.signature(m).parameters)[1:]
            if ps[:1] == ["value"]:
                value.append(n)
            elif ps[:1] == ["sample_shape"]:
                shaped.append(n)
            elif not ps:
                nullary.append(n)
    tensor_props = [p for p in props if p in ("mean", "mode", "stddev", "variance")]
    with torch.device("cpu"):
        meta = torch.ones(2, device="meta")
        follows = D.Normal(meta, meta, validate_args=False).sample().device.type == "meta"
        numbers_cpu = D.Normal(0.0, 1.0).sample((2,)).device.type == "cpu"
    # functions of two distributions (kl_divergence(p, q)): they combine both one's parameters
    pairs = sorted(n for n in D.__all__ if inspect.isfunction(getattr(D, n))
                   and list(inspect.signature(getattr(D, n)).parameters)[:2] == ["p", "q"])
    return {"classes": out, "pair_functions": pairs, "value_methods": sorted(value), "sample_methods": sorted(shaped),
            "nullary_tensor_methods": sorted(set(nullary) & {"entropy", "perplexity", "enumerate_support"}),
            "tensor_properties": sorted(tensor_props),
            "evidence": {"results_follow_parameters": follows, "python_numbers_make_cpu_parameters": numbers_cpu}}


def _generators() -> dict:
    import torch

    from knowledge import torch_tables

    funcs, methods = torch_tables._stubs()
    fn = sorted(n for n, os_ in funcs.items() if not n.startswith("_") and any(p == "generator" for o in os_ for p, _ in o.params))
    meth = sorted(n for n, os_ in methods.items() if not n.startswith("_") and any(p == "generator" for o in os_ for p, _ in o.params))
    # torch.utils.data's samplers / random_split / DataLoader draw their permutations with the generator
    # they are given on the default device (torch.randperm(n, generator=g), no device=)
    import torch.utils.data as data

    samplers, given = [], {}
    for n in sorted(getattr(data, "__all__", [])):
        try:
            params = inspect.signature(getattr(data, n)).parameters
        except (TypeError, ValueError):
            continue
        if "generator" in params:
            samplers.append(f"utils.data.{n}")
            if isinstance(params["generator"].default, torch.Generator):
                # `random_split(..., generator=default_generator)`: without one given, it draws with torch's own
                given[f"utils.data.{n}"] = params["generator"].default.device.type
    return {"functions": fn, "tensor_methods": meth, "default_device_draws": samplers,
            "default_generator_draws": given,
            "default_device": torch.Generator().device.type, **_default_generators(torch)}


def _default_generators(torch) -> dict:
    """The process-wide generator objects of torch / torch.random (`torch.default_generator`) and the
    seeding functions that return one (`torch.manual_seed(s)` seeds and returns the cpu default
    generator): user code passes them as `generator=`. Each with the device it lives on."""
    objects, seeding = {}, {}
    for mod, prefix in ((torch, ""), (torch.random, "random.")):
        for n in sorted(dir(mod)):
            v = getattr(mod, n, None)
            if n.startswith("_") or v is None:
                continue
            if isinstance(v, torch.Generator):
                objects[prefix + n] = v.device.type
                continue
            if not callable(v) or isinstance(v, type):
                continue
            try:
                params = list(inspect.signature(v).parameters)
            except (TypeError, ValueError):
                continue
            if params != ["seed"]:
                continue
            state = torch.random.get_rng_state()
            try:
                r = v(0)
            finally:
                torch.random.set_rng_state(state)
            if isinstance(r, torch.Generator):
                seeding[prefix + n] = r.device.type
    return {"default_objects": objects, "seeding_functions": seeding}


def _cpu_lengths() -> dict:
    """Functions of torch.nn.utils.rnn with a `lengths` argument that refuse lengths off the cpu."""
    import torch
    import torch.nn.utils.rnn as rnn

    out = {}
    for name in sorted(getattr(rnn, "__all__", dir(rnn))):
        f = getattr(rnn, name, None)
        if not inspect.isfunction(f):
            continue
        ps = list(inspect.signature(f).parameters)
        if "lengths" not in ps:
            continue
        try:
            f(torch.zeros(3, 2, 1), torch.tensor([3, 2], device="meta"))
        except Exception as e:  # noqa: BLE001
            if "CPU" in str(e):
                out[f"nn.utils.rnn.{name}"] = {"param": "lengths", "position": ps.index("lengths"), "error": str(e)[:120]}
    return out


def _trace() -> dict:
    import torch

    class _Probe(torch.nn.Module):
        def forward(self, x):
            return x + torch.zeros(x.shape[0], device=x.device)

    traced = torch.jit.trace(_Probe(), torch.ones(2), check_trace=False)
    baked = any(n.kind() == "prim::Constant" and n.output().type().kind() == "DeviceObjType"
                for n in traced.graph.nodes())
    # a saved trace keeps its graph: loaded back (torch.jit.load) it builds on the same baked device
    import io

    buf = io.BytesIO()
    torch.jit.save(traced, buf)
    buf.seek(0)
    loaded = torch.jit.load(buf)
    kept = any(n.kind() == "prim::Constant" and n.output().type().kind() == "DeviceObjType"
               for n in loaded.graph.nodes())
    return {"functions": ["jit.trace", "jit.trace_module"], "bakes_devices": baked,
            "archive": {"save": "jit.save", "load": "jit.load", "save_method": "save", "keeps_baked_devices": kept}}


def _distributed() -> dict:
    """torch.distributed: which devices each process-group backend communicates, the backend per device
    when none is named, where each function taking a process group (`group=`) and a backend (`backend=`)
    has them, and which collectives take Python objects (they serialise them into a tensor on the device
    of the group's backend: the *current* CUDA device for NCCL)."""
    import inspect

    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    collectives, constructors = {}, {}
    for name in sorted(dir(dist)):
        f = getattr(dist, name)
        if name.startswith("_") or not inspect.isfunction(f):
            continue
        sig = inspect.signature(f)
        params = list(sig.parameters)
        if "backend" in params and "group" not in params and sig.return_annotation is not bool:
            constructors[name] = params.index("backend")
        if "group" in params and params.index("group") > 0:  # a collective: its data comes before `group`
            objects = any("obj" in p for p in params[:params.index("group")])
            collectives[name] = {"group": params.index("group"), "objects": objects}
    current = "current_device" in inspect.getsource(c10d._object_to_tensor) or \
        "current_device" in inspect.getsource(c10d.all_gather_object)
    # A group created without a backend: the backends torch sets up on a machine whose accelerator is cuda
    # (this torch: the accelerator's backend only, so no cpu backend; older ones added gloo for the cpu).
    from unittest import mock

    import torch

    with mock.patch.object(torch._C, "_get_accelerator", lambda: torch.device("cuda")):
        no_backend = {k: str(v) for k, v in c10d.BackendConfig(dist.Backend("undefined")).device_backend_map.items()}
    return {"backend_devices": {k: list(v) for k, v in dist.Backend.backend_capability.items()},
            "default_backends": dict(dist.Backend.default_device_backend_map),
            "no_backend_on_cuda_machine": no_backend,
            "collectives": collectives, "group_constructors": constructors,
            "object_collectives_use_current_device": current}


def _module_runners(subs: tuple = ("utils", "onnx", "export", "jit")) -> dict:
    """torch's own functions and methods that run a module they are given on inputs they are given: they
    hand both to a tracer (torch.jit.trace, the jit's graph tracer, torch.export.export), directly or
    through a helper of the package (ast scan of the installed torch's `torch/<sub>` sources, never
    imported: `SummaryWriter.add_graph(model, input_to_model)` traces through `_pytorch_graph.graph`,
    `torch.onnx.export(model, args, f)` through the exporter's capture). Positions count the arguments
    after self. Public methods by class, public module-level functions by name."""
    import torch

    root = Path(torch.__file__).parent
    files = {}
    for p in sorted(p for sub in subs for p in (root / sub).rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mod = ".".join(["torch"] + (parts[:-1] if is_pkg else parts))
        try:
            files[mod] = (ast.parse(p.read_text(encoding="utf-8", errors="replace")), is_pkg)
        except SyntaxError:
            continue
    funcs, imports_of = {}, {}
    for mod, (tree, is_pkg) in files.items():
        package, imports = mod if is_pkg else mod.rsplit(".", 1)[0], {}
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom):
                src = n.module or ""
                if n.level:
                    up = package.split(".")
                    src = ".".join(up[:len(up) - (n.level - 1)] + ([src] if src else []))
                for a in n.names:
                    imports[a.asname or a.name] = f"{src}.{a.name}"
            elif isinstance(n, ast.Import):
                for a in n.names:
                    imports[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        imports_of[mod] = imports
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                funcs[f"{mod}.{st.name}"] = (st, mod, False)
            elif isinstance(st, ast.ClassDef):
                for m in st.body:
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        funcs[f"{mod}.{st.name}.{m.name}"] = (m, mod, True)

    def dotted(e):
        if isinstance(e, ast.Name):
            return e.id
        d = dotted(e.value) if isinstance(e, ast.Attribute) else None
        return f"{d}.{e.attr}" if d else None

    def qualify(d, mod):
        head, _, rest = d.partition(".")
        if head in imports_of[mod]:
            return imports_of[mod][head] + ("." + rest if rest else "")
        return f"{mod}.{d}" if f"{mod}.{d}" in funcs else d

    # the tracers: each runs the module on the example inputs (devices kept, so a mix fails there)
    runners = {"torch.jit.trace": (0, 1), "torch.jit._trace.trace": (0, 1), "torch.jit._get_trace_graph": (0, 1),
               "torch.jit._trace._get_trace_graph": (0, 1), "torch.export.export": (0, 1)}
    changed = True
    while changed:  # to a fixpoint: a helper that traces makes its callers runners too
        changed = False
        for q, (fn, mod, is_method) in funcs.items():
            params = [a.arg for a in fn.args.posonlyargs + fn.args.args][1 if is_method else 0:]
            for c in ast.walk(fn) if q not in runners else ():
                target = qualify(dotted(c.func) or "", mod) if isinstance(c, ast.Call) else ""
                if target not in runners:
                    continue
                m, i = runners[target]
                if len(c.args) > max(m, i) and all(isinstance(c.args[k], ast.Name) and c.args[k].id in params for k in (m, i)):
                    runners[q] = (params.index(c.args[m].id), params.index(c.args[i].id))
                    changed = True
                    break
    classes: dict = {}
    for q, (m, i) in sorted(runners.items()):
        if q in funcs and funcs[q][2] and not q.rsplit(".", 1)[1].startswith("_"):
            cls, meth = q.rsplit(".", 1)
            fn = funcs[q][0]
            names = [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
            classes.setdefault(cls, {})[meth] = {"module": m, "inputs": i, "module_param": names[m], "inputs_param": names[i]}
    functions: dict = {}
    for q, (m, i) in sorted(runners.items()):
        if q in funcs and not funcs[q][2] and not any(part.startswith("_") for part in q.split(".")):
            names = [a.arg for a in funcs[q][0].args.posonlyargs + funcs[q][0].args.args]
            functions[q] = {"module": m, "inputs": i, "module_param": names[m], "inputs_param": names[i]}
    # the names a package re-exports those classes under (`torch.utils.tensorboard.SummaryWriter`)
    aliases = {f"{mod}.{name}": target for mod, (_, is_pkg) in files.items() if is_pkg
               for name, target in imports_of[mod].items() if target in classes}
    return {"classes": classes, "aliases": aliases, "functions": functions}


def torch_tables() -> dict:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"distributions": _distributions(), "generators": _generators(), "cpu_lengths": _cpu_lengths(),
                "trace": _trace(), "module_runners": _module_runners(), "distributed": _distributed()}


# ---------------------------------------------------------------- from released wheels

def _sources(archive: Path):
    """(path inside the package tree, bytes) of a released wheel, or of an sdist (`encodec-0.1.1.tar.gz`,
    for projects that publish no wheel: its top folder stripped)."""
    if archive.name.endswith(".tar.gz"):
        with tarfile.open(archive) as t:
            for m in sorted(t.getmembers(), key=lambda m: m.name):
                if m.isfile() and "/" in m.name:
                    yield m.name.split("/", 1)[1], t.extractfile(m).read()
        return
    with zipfile.ZipFile(archive) as z:
        for name in sorted(z.namelist()):
            yield name, z.read(name)


def _trees(wheel: Path, prefix: str):
    for name, data in _sources(wheel):
        if name.startswith(prefix) and name.endswith(".py"):
            try:
                yield name, ast.parse(data.decode("utf-8", "replace"))
            except SyntaxError:
                continue


def _funcs(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _hook_calls(f) -> list[str]:
    """Hook names a function hands to `_call_batch_hook(name, ...)`, in source order."""
    calls = [n for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "_call_batch_hook" and n.args and isinstance(n.args[0], ast.Constant)]
    return [c.args[0].value for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]


def _synced_logs(wheel: Path) -> dict:
    """LightningModule methods taking `sync_dist` (its value reduced over the strategy's process group): where
    the logged tensor is among their arguments (after self): {"value": i} for the parameter handed to
    `apply_to_collection` (`log(name, value)`), {"entries": i} for a dict whose items are logged one by one
    (`log_dict(dictionary)`: `for k, v in dictionary.items(): self.log(...)`)."""
    out: dict[str, dict] = {}
    for _name, tree in _trees(wheel, "lightning/pytorch/core/"):
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LightningModule"):
            for f in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                params = [a.arg for a in f.args.args][1:]
                if "sync_dist" not in params:
                    continue
                for n in ast.walk(f):
                    if isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and isinstance(n.iter.func, ast.Attribute) \
                            and n.iter.func.attr == "items" and isinstance(n.iter.func.value, ast.Name) \
                            and n.iter.func.value.id in params and any(
                                isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "log"
                                for c in ast.walk(n)):
                        out[f.name] = {"entries": params.index(n.iter.func.value.id), "param": n.iter.func.value.id}
                    elif isinstance(n, ast.Call) and ast.unparse(n.func).endswith("apply_to_collection") and n.args \
                            and isinstance(n.args[0], ast.Name) and n.args[0].id in params and f.name not in out:
                        out[f.name] = {"value": params.index(n.args[0].id), "param": n.args[0].id}
    return dict(sorted(out.items()))


def _process_group_strategies(wheel: Path, part: str = "pytorch") -> dict:
    """Lightning strategies that set up a torch.distributed process group whose backend follows the device
    (`_get_process_group_backend`, defined or inherited: NCCL for a CUDA run): the names they register in
    the strategy registry (`strategy="ddp"`) and their classes by every exported name (`DDPStrategy()`).
    `part`: the Trainer's strategies ("pytorch") or Fabric's ("fabric"). Also the strategy the connector picks
    for several devices when none is named (`Trainer(devices=2)`): its `_choose_strategy`'s final return."""
    classes: dict[str, ast.ClassDef] = {}
    for _name, tree in _trees(wheel, f"lightning/{part}/strategies/"):
        for c in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            classes[c.name] = c

    def has_group(c, seen=()) -> bool:
        own = next((f for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "_get_process_group_backend"), None)
        if own is not None:  # the backend of the device it runs on (not a fixed one: XLA's "xla")
            return "_get_default_process_group_backend_for_device" in ast.unparse(own)
        return any(isinstance(b, ast.Name) and b.id in classes and b.id not in seen and has_group(classes[b.id], (*seen, b.id))
                   for b in c.bases)

    names, owners = set(), set()
    for c in classes.values():
        if not has_group(c):
            continue
        owners.add(c.name)
        for f in (n for n in c.body if isinstance(n, ast.FunctionDef) and n.name == "register_strategies"):
            consts = {}  # `entries = (("ddp", "popen"), ...)`: the loop variable bound to each first item
            for n in ast.walk(f):
                if isinstance(n, ast.For) and isinstance(n.target, ast.Tuple) and isinstance(n.iter, ast.Name):
                    value = next((a.value for a in ast.walk(f) if isinstance(a, ast.Assign) and
                                  any(isinstance(t, ast.Name) and t.id == n.iter.id for t in a.targets)), None)
                    if isinstance(value, (ast.Tuple, ast.List)) and isinstance(n.target.elts[0], ast.Name):
                        consts[n.target.elts[0].id] = [e.elts[0].value for e in value.elts if isinstance(e, ast.Tuple)
                                                       and isinstance(e.elts[0], ast.Constant)]
            for n in ast.walk(f):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register" and n.args:
                    a = n.args[0]
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        names.add(a.value)
                    elif isinstance(a, ast.Name) and a.id in consts:
                        names.update(consts[a.id])
    exported = set()
    for owner in owners:
        exported |= {q for q in _defined_or_exported(wheel, "lightning/", owner) if q.startswith(f"lightning.{part}.")}
    standalone = "pytorch_lightning" if part == "pytorch" else "lightning_fabric"  # the same code, shipped alone
    exported |= {standalone + e[len(f"lightning.{part}"):] for e in exported}
    connector = "lightning/pytorch/trainer/connectors/accelerator_connector.py" if part == "pytorch" else "lightning/fabric/connector.py"
    several = None
    for name, tree in _trees(wheel, connector):
        for f in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_choose_strategy"):
            last = f.body[-1]
            if isinstance(last, ast.Return) and isinstance(last.value, ast.Constant) and isinstance(last.value.value, str):
                several = last.value.value
    return {"names": sorted(names), "classes": sorted(exported), "several_devices": several}


def loop_hooks(wheel: Path, package: str) -> list[str]:
    """The LightningModule hooks the Trainer's loops call (`_call_lightning_module_hook(trainer, "on_train_start")`,
    or with a name bound in the function: `hook_name = "test_epoch_end" if ... else "validation_epoch_end"`): they
    run after the strategy moved the module. Read from a release's `loops/` (Lightning 1.x still has the
    `*_epoch_end(outputs)` hooks that 2.x removed)."""
    names: set[str] = set()
    for _name, tree in _trees(wheel, f"{package}/loops/"):
        for f in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            bound: dict[str, set[str]] = {}
            for a in ast.walk(f):
                if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name):
                    bound.setdefault(a.targets[0].id, set()).update(
                        c.value for c in ast.walk(a.value) if isinstance(c, ast.Constant) and isinstance(c.value, str))
            for c in ast.walk(f):
                if not (isinstance(c, ast.Call) and isinstance(c.func, (ast.Attribute, ast.Name))
                        and (c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id) == "_call_lightning_module_hook"):
                    continue
                for a in c.args[:2]:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        names.add(a.value)
                        break
                    if isinstance(a, ast.Name) and bound.get(a.id):
                        names |= bound[a.id]
                        break
    return sorted(n for n in names if n.isidentifier())


def _fabric(wheel: Path) -> dict:
    """Lightning Fabric: its class by every exported name, the process-group strategies of its own registry, and,
    from the Fabric class:
    - `launches`: its public methods that set up the processes' environment (the process group): those reaching the
      strategy's `setup_environment` through Fabric's own methods (`launch` -> `_wrap_and_launch` -> partial of
      `_wrap_with_setup`), a method being reached when it is called or referenced;
    - `module_setups`: its public methods that move the module they are given to the Fabric's device (those reaching
      `_move_model_to_device`), each with the parameter whose False value skips the move (`move_to_device`);
    - `device`: its properties that return the strategy's `root_device`;
    - `accelerator_param`: the `__init__` parameter naming the accelerator (`"cpu"` keeps everything there)."""
    classes = {q for q in _defined_or_exported(wheel, "lightning/", "Fabric") if q.startswith("lightning.fabric.")
               or q.count(".") == 1}
    classes |= {"lightning_fabric" + e[len("lightning.fabric"):] for e in classes if e.startswith("lightning.fabric.")}
    launches: set[str] = set()
    setups: dict[str, str | None] = {}
    device: list[str] = []
    accelerator = None
    for _name, tree in _trees(wheel, "lightning/fabric/fabric.py"):
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Fabric"):
            methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
            launches = {m for m in _reaching(methods, "setup_environment") if not m.startswith("_")}
            for m in sorted(_reaching(methods, "_move_model_to_device")):
                if not m.startswith("_"):
                    setups[m] = _gate(methods[m], "_move_model_to_device")
            device = sorted(name for name, f in methods.items()
                            if any(_decorator_name(d) == "property" for d in f.decorator_list)
                            and any(isinstance(r, ast.Return) and isinstance(r.value, ast.Attribute)
                                    and r.value.attr == "root_device" for r in ast.walk(f)))
            init = methods.get("__init__")
            params = [a.arg for a in init.args.args + init.args.kwonlyargs] if init is not None else []
            accelerator = "accelerator" if "accelerator" in params else None
    return {"classes": sorted(classes), "launches": sorted(launches), "module_setups": setups, "device": device,
            "accelerator_param": accelerator, "process_group_strategies": _process_group_strategies(wheel, "fabric")}


def _reaching(methods: dict, attr: str) -> set[str]:
    """The methods that use `attr` (an attribute: a call or a reference) or a method that does, transitively."""
    reach: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, f in methods.items():
            if name in reach or name == "__init__":
                continue
            attrs = {n.attr for n in ast.walk(f) if isinstance(n, ast.Attribute)}
            if attr in attrs or attrs & reach:
                reach.add(name)
                changed = True
    return reach


def _gate(f: ast.FunctionDef, attr: str) -> str | None:
    """The parameter of `f` whose truth an `if` tests around the use of `attr` (`if move_to_device: ...`)."""
    params = {a.arg for a in f.args.args + f.args.kwonlyargs}
    for st in ast.walk(f):
        if isinstance(st, ast.If) and isinstance(st.test, ast.Name) and st.test.id in params and \
                any(isinstance(n, ast.Attribute) and n.attr == attr for b in st.body for n in ast.walk(b)):
            return st.test.id
    return None


def _decorator_name(d: ast.expr) -> str:
    return d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else ""


def _callback_hooks(wheel: Path) -> dict:
    """Callback hooks the Trainer calls with the LightningModule on its device: {hook: {"module": i, "batch": j}}
    (positions after self; "batch" when the hook gets the moved batch). The hooks `Trainer._run` calls before
    `self.strategy.setup(self)` moves the module (`setup` through `call._call_setup_hook`, `on_load_checkpoint`
    through the checkpoint connector's restore), or after its teardown moves it back (`on_fit_end`,
    `teardown`), are left out."""
    trees = dict(_trees(wheel, "lightning/pytorch/"))
    hooks: dict[str, dict] = {}
    for name, tree in trees.items():
        if name.endswith("callbacks/callback.py"):
            for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Callback"):
                for f in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                    params = [a.arg for a in f.args.args][1:]
                    if "pl_module" in params:
                        hooks[f.name] = {"module": params.index("pl_module"),
                                         **({"batch": params.index("batch")} if "batch" in params else {})}

    def named(call) -> set[str]:
        """The hook a call runs: `_call_callback_hooks(trainer, "setup", ...)`, `callback.on_load_checkpoint(...)`."""
        if not isinstance(call, ast.Call):
            return set()
        if ast.unparse(call.func).endswith("_call_callback_hooks"):
            return {a.value for a in call.args[1:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)}
        return {call.func.attr} if isinstance(call.func, ast.Attribute) and call.func.attr in hooks else set()

    def callee(call) -> str:
        return call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id if isinstance(call.func, ast.Name) else ""

    helpers: dict[str, set[str]] = {}  # the trainer package's functions and methods -> the callback hooks they run
    calls: dict[str, set[str]] = {}
    for name, tree in trees.items():
        if "/trainer/" in name:
            for f in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
                inner = [c for c in ast.walk(f) if isinstance(c, ast.Call)]
                helpers.setdefault(f.name, set()).update(h for c in inner for h in named(c))
                calls.setdefault(f.name, set()).update(callee(c) for c in inner)
    changed = True
    while changed:  # through the helpers they call (`_restore_modules_and_callbacks` -> `restore_callbacks` -> ...)
        changed = False
        for f, called in calls.items():
            more = set().union(*(helpers.get(g, set()) for g in called)) - helpers[f]
            if more:
                helpers[f] |= more
                changed = True
    unmoved: set[str] = set()
    for name, tree in trees.items():
        if not name.endswith("trainer/trainer.py"):
            continue
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer"):
            methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
            tears = {m for m, f in methods.items() if "self.strategy.teardown()" in ast.unparse(f)}
            run = methods.get("_run")
            if run is None:
                continue
            moved = False
            for st in run.body:
                text = ast.unparse(st)
                for c in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
                    called = named(c) | helpers.get(callee(c), set())
                    if not moved:
                        unmoved |= called
                if "self.strategy.setup(" in text:
                    moved = True
                elif any(f"self.{m}()" in text for m in tears):
                    moved = False
    return {h: spec for h, spec in sorted(hooks.items()) if h not in unmoved}


def lightning(wheel: Path) -> dict:
    """Which LightningModule hooks get the batch before Trainer moves it and which after.

    `LightningModule._on_before_batch_transfer` runs the hooks that see the loader's (cpu) batch;
    `_apply_batch_transfer_handler` runs the transfer hook (it takes `device`) then the hooks after
    it; the loops that call both then run the step hooks named in them: those see the moved batch.
    """
    module_methods: dict[str, list[str]] = {}
    hooks_with_batch: dict[str, int] = {}  # hook -> position of the batch among its arguments (after self)
    before, transfer, after = [], "", []
    loop_hooks, loop_names = set(), set()
    for name, tree in _trees(wheel, "lightning/pytorch/"):
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if cls.name in ("LightningModule", "ModelHooks", "DataHooks"):
                for f in cls.body:
                    if isinstance(f, ast.FunctionDef):
                        a = [x.arg for x in f.args.args]
                        module_methods.setdefault(cls.name, []).append(f.name)
                        if "batch" in a:
                            hooks_with_batch[f.name] = a.index("batch") - 1
                        elif f.name.endswith("_step") and f.args.vararg is not None:  # training_step(*args): the batch first
                            hooks_with_batch[f.name] = 0
                        if f.name == "_on_before_batch_transfer":
                            before = _hook_calls(f)
                        if f.name == "_apply_batch_transfer_handler":
                            hs = _hook_calls(f)
                            transfer, after = (hs[0], hs[1:]) if hs else ("", [])
        if name.startswith("lightning/pytorch/loops/"):
            for f in _funcs(tree):
                called = {n.func.attr for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
                consts = {n.value for n in ast.walk(f) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                loop_names |= consts
                if "_on_before_batch_transfer" in called and "batch_to_device" in consts:
                    loop_hooks |= consts
    # the step hooks run on the batch the loop moved (training_step from the optimization loop)
    steps = {h for h in hooks_with_batch if h.endswith("_step") and h in loop_names}
    after_all = sorted((set(after) | (loop_hooks & set(hooks_with_batch)) | steps) - set(before) - {transfer})
    # the classes by every name the package defines or re-exports them under
    exports = _defined_or_exported(wheel, "lightning/", "LightningModule")
    trainers = {q for q in _defined_or_exported(wheel, "lightning/", "Trainer") if q.startswith("lightning.pytorch.")
                or q.count(".") == 1}
    # the Trainer's public methods that take the LightningModule first and run its loops on it
    runs = set()
    for name, tree in _trees(wheel, "lightning/pytorch/"):
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer"):
            methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
            # `fit` hands `self._fit_impl` to a wrapper; `_fit_impl` calls `self._run(model)`
            running = {f.name for f in methods if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                                                      and c.func.attr == "_run" for c in ast.walk(f))}
            for f in methods:
                a = [x.arg for x in f.args.args]
                if not f.name.startswith("_") and a[1:2] == ["model"] and any(
                        isinstance(n, ast.Attribute) and n.attr in running | {"_run"} for n in ast.walk(f)):
                    runs.add(f.name)
    # the same code ships as the standalone `pytorch_lightning` package (lightning.pytorch.X = pytorch_lightning.X)
    exports |= {"pytorch_lightning" + e[len("lightning.pytorch"):] for e in exports if e.startswith("lightning.pytorch.")}
    trainers |= {"pytorch_lightning" + e[len("lightning.pytorch"):] for e in trainers if e.startswith("lightning.pytorch.")}
    synced, strategies, callbacks = _synced_logs(wheel), _process_group_strategies(wheel), _callback_hooks(wheel)
    return {"module_classes": sorted(set(exports)), "trainer_classes": sorted(trainers), "trainer_runs": sorted(runs),
            "synced_logs": synced, "process_group_strategies": strategies, "callback_hooks": callbacks,
            "fabric": _fabric(wheel), "resume": _resume(wheel),
            "before_transfer": before, "transfer": transfer,
            "after_transfer": after_all,
            "batch_position": {h: i for h, i in sorted(hooks_with_batch.items()) if not h.startswith("_")}}


def _defined_or_exported(wheel: Path, prefix: str, cls: str) -> set[str]:
    """`module.cls` for each module of the wheel that defines class `cls` or, in a package `__init__`,
    imports it (relative or absolute)."""
    out = set()
    for name, tree in _trees(wheel, prefix):
        mod = name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        if any(isinstance(n, ast.ClassDef) and n.name == cls for n in tree.body) or any(
                isinstance(n, ast.ImportFrom) and any(a.name == cls for a in n.names) for n in ast.walk(tree)
                if name.endswith("__init__.py")):
            out.add(f"{mod}.{cls}")
    return out


def optimizer_restorers(wheel: Path, package: str) -> dict[str, dict]:
    """A library's module-level functions that restore an optimizer they are given from a checkpoint they load
    onto the cpu (timm's `resume_checkpoint(model, path, optimizer=None)`: `checkpoint = _torch_load(path,
    map_location='cpu')`, then `optimizer.load_state_dict(checkpoint['optimizer'])`): function -> {parameter:
    position} of the arguments restored so (the engine takes those that are optimizers). By defining module and
    by package re-export (`timm.models.resume_checkpoint`)."""
    found: dict[str, dict] = {}
    by_name: dict[str, dict] = {}
    for name, tree in _trees(wheel, f"{package}/"):
        mod = name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for f in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            params = [a.arg for a in f.args.posonlyargs + f.args.args]
            on_cpu = {t.id for n in ast.walk(f) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                      and any(k.arg == "map_location" and isinstance(k.value, ast.Constant) and k.value.value == "cpu"
                              for k in n.value.keywords) for t in n.targets if isinstance(t, ast.Name)}
            for c in ast.walk(f):
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "load_state_dict" \
                        and isinstance(c.func.value, ast.Name) and c.func.value.id in params and c.args \
                        and _root_name(c.args[0]) in on_cpu and c.func.value.id not in ("self", "model"):
                    p = c.func.value.id
                    restored = found.setdefault(f"{mod}.{f.name}", {})
                    restored[p] = params.index(p)
                    by_name[f.name] = restored
    for name, tree in _trees(wheel, f"{package}/"):
        if name.endswith("__init__.py"):
            mod = name.removesuffix("/__init__.py").replace("/", ".")
            for n in (x for x in tree.body if isinstance(x, ast.ImportFrom)):
                for a in n.names:
                    if a.name in by_name and (a.asname or a.name) == a.name:
                        found[f"{mod}.{a.name}"] = by_name[a.name]
    return dict(sorted(found.items()))


def _root_name(e: ast.expr) -> str:
    """`checkpoint` of `checkpoint['optimizer']['state']`."""
    while isinstance(e, ast.Subscript):
        e = e.value
    return e.id if isinstance(e, ast.Name) else ""


def _resume(wheel: Path) -> dict:
    """How `trainer.fit(model, ckpt_path=...)` resumes: the fit parameter naming the checkpoint (and its position
    after `model`), the LightningModule hook whose return the Trainer builds its optimizers from, and where the
    default checkpoint IO loads tensors: `map_location=lambda storage, loc: storage` keeps each storage where
    torch deserialised it, the cpu. The strategy then calls each optimizer's `load_state_dict` with that state."""
    ckpt, position, hook, where = "", -1, "", ""
    for name, tree in _trees(wheel, "lightning/"):
        for f in _funcs(tree):
            if f.name == "_init_optimizers_and_lr_schedulers":
                hook = next((c.args[1].value for c in ast.walk(f) if isinstance(c, ast.Call) and len(c.args) > 1
                             and ast.unparse(c.func).endswith("_call_lightning_module_hook")
                             and isinstance(c.args[1], ast.Constant)), hook)
            if f.name == "load_checkpoint" and name.endswith("plugins/io/torch_io.py"):
                args = f.args.args
                defaults = dict(zip([a.arg for a in args[len(args) - len(f.args.defaults):]], f.args.defaults))
                ml = defaults.get("map_location")
                if isinstance(ml, ast.Lambda) and isinstance(ml.body, ast.Name) and ml.args.args \
                        and ml.body.id == ml.args.args[0].arg:
                    where = "cpu"
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer"):
            fit = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "fit"), None)
            names = [a.arg for a in fit.args.args[1:]] if fit is not None else []
            ckpt = next((a for a in names if a.endswith("ckpt_path")), ckpt)
            position = names.index(ckpt) if ckpt in names else position
    return {"ckpt_kwarg": ckpt, "ckpt_position": position, "optimizers_hook": hook, "map_location": where}


def accelerate(wheel: Path) -> dict:
    """accelerate's Accelerator: what `prepare()` does with each object it is given (the isinstance
    branches of `_prepare_one`, each with the `prepare_*` method it hands the object to; anything else
    is returned as it is), the `__init__` flag that keeps everything on the cpu, and the property that
    names its device. The DataLoader it prepares yields batches on that device; the modules it
    prepares are moved there."""
    places: dict[str, str] = {}
    restores: dict[str, str] = {}
    cpu_flag, device_attr, classes = "", "", set()
    for name, tree in _trees(wheel, "accelerate/"):
        mod = name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        if name.endswith("__init__.py") and any(isinstance(n, ast.ImportFrom) and any(a.name == "Accelerator" for a in n.names)
                                                for n in tree.body):
            classes.add(f"{mod}.Accelerator")
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Accelerator"):
            classes.add(f"{mod}.Accelerator")
            for f in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                if f.name == "_prepare_one":
                    for branch in (n for n in ast.walk(f) if isinstance(n, ast.If)):
                        t = branch.test
                        if not (isinstance(t, ast.Call) and isinstance(t.func, ast.Name) and t.func.id == "isinstance"
                                and len(t.args) == 2):
                            continue
                        called = [n.func.attr for n in ast.walk(ast.Module(body=branch.body, type_ignores=[]))
                                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                  and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"]
                        if called:
                            places[ast.unparse(t.args[1])] = called[0]
                if f.name == "__init__":
                    args = f.args.args + f.args.kwonlyargs
                    defaults = [None] * (len(f.args.args) - len(f.args.defaults)) + list(f.args.defaults) + \
                        list(f.args.kw_defaults)
                    for a, d in zip(args, defaults):
                        if a.arg == "cpu" and isinstance(d, ast.Constant) and d.value is False:
                            cpu_flag = a.arg
                if any(isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list) and f.name == "device":
                    device_attr = f.name
                mapped = _optimizer_restore_map(f)
                if mapped:
                    restores[f.name] = mapped
    return {"classes": sorted(classes), "prepare": "prepare", "places": dict(sorted(places.items())),
            "cpu_flag": cpu_flag, "device": device_attr, "restores": dict(sorted(restores.items()))}


def _optimizer_restore_map(f: ast.FunctionDef) -> str:
    """An Accelerator method that restores the prepared optimizers (reads `self._optimizers`) from files it
    loads with a `map_location` it sets itself: the one a single process uses ("cpu"; several processes on
    several devices load "on_device"). `load_state` then hands each optimizer a state loaded onto the cpu."""
    reads = any(isinstance(n, ast.Attribute) and n.attr == "_optimizers" and isinstance(n.value, ast.Name)
                and n.value.id == "self" and isinstance(n.ctx, ast.Load) for n in ast.walk(f))
    maps = {n.value.value for n in ast.walk(f) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str) and any(isinstance(t, ast.Name) and t.id == "map_location" for t in n.targets)}
    return "cpu" if reads and "cpu" in maps else ""


def torch_module_subclasses(base_of: dict[str, list[str]], alias: dict[str, str]) -> set[str]:
    """The classes deriving from a torch.nn class (Module, ModuleDict ...), directly or through one another."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for q, bases in base_of.items():
            if q not in found and any(alias.get(b, b) in found or alias.get(b, b).startswith("torch.nn.") for b in bases):
                found.add(q)
                changed = True
    return found


def module_classes(wheel: Path, package: str) -> list[str]:
    """A model library's torch.nn.Module subclasses (torchvision.models.resnet.ResNet ...), by defining
    module and by package re-export: a project class deriving from one is a module (`class CNN(ResNet)`)
    whose own forward / __init__ the engine runs. Bases are read through `from torch import nn` and
    `import torch.nn as nn` alike."""
    trees = _modules(wheel, f"{package}/")
    base_of = _class_bases(trees)
    for mod, tree in trees.items():  # `import torch.nn as nn`: the plain imports _class_bases leaves as written
        plain = {a.asname: a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names if a.asname}
        prefix = mod.removesuffix(".__init__") + "."
        for q, bases in base_of.items():
            if q.startswith(prefix) and "." not in q[len(prefix):]:
                base_of[q] = [f"{plain[b.split('.', 1)[0]]}.{b.split('.', 1)[1]}" if "." in b and b.split(".", 1)[0] in plain
                              else b for b in bases]
    alias = _reexports(trees)
    found = torch_module_subclasses(base_of, alias)
    found |= {a for a, q in alias.items() if q in found}
    # `from .resnet import *` in torchvision/models/__init__.py: torchvision.models.ResNet
    for mod, tree in trees.items():
        if mod.endswith(".__init__"):
            pkg = mod[: -len(".__init__")]
            for n in tree.body:
                if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module and any(a.name == "*" for a in n.names):
                    found |= {f"{pkg}.{q.rsplit('.', 1)[-1]}" for q in list(found)
                              if q.rsplit(".", 1)[0] == f"{pkg}.{n.module}" and not q.rsplit(".", 1)[-1].startswith("_")}
    return sorted(found)


def module_children(wheel: Path, package: str) -> dict[str, list[str]]:
    """The submodules a model library's module class builds on `self` in `__init__` (its own and its library
    bases'): `self.fc = nn.Linear(...)`, `self.layer1 = self._make_layer(...)` (a method returning a module).
    A project class deriving from it (`class CNN(ResNet)`) has them once `super().__init__()` ran, built where
    the default device is: `self.fc.to("cuda:1")` moves that Linear. By defining module and re-export."""
    import torch

    torch_modules = {f"torch.nn.{n}" for n in dir(torch.nn) if isinstance(getattr(torch.nn, n), type)
                     and issubclass(getattr(torch.nn, n), torch.nn.Module)}  # (not nn.Parameter: a tensor)
    trees = _modules(wheel, f"{package}/")
    modules = set(module_classes(wheel, package))
    base_of = _class_bases(trees)
    alias = _reexports(trees)
    own: dict[str, set[str]] = {}
    for mod, tree in trees.items():
        imported = _imports(mod, tree)
        mod_name = mod.removesuffix(".__init__")
        local = {c.name for c in tree.body if isinstance(c, ast.ClassDef)}

        def builds_module(call: ast.expr, methods: dict) -> bool:
            if isinstance(call, ast.IfExp):  # `nn.Linear(d, n) if n > 0 else nn.Identity()`
                return builds_module(call.body, methods) and builds_module(call.orelse, methods)
            if not isinstance(call, ast.Call):
                return False
            f = call.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                m = methods.get(f.attr)  # `self._make_layer(...)`: a method whose every return builds a module
                rets = [r.value for r in ast.walk(m) if isinstance(r, ast.Return) and r.value is not None] if m else []
                return bool(rets) and all(builds_module(r, {}) for r in rets)
            text = ast.unparse(f)
            head, _, rest = text.partition(".")
            q = f"{mod_name}.{head}" if head in local and not rest else \
                (f"{imported[head]}.{rest}".rstrip(".") if head in imported else text)
            q = alias.get(q, q)
            return q in torch_modules or q in modules

        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            q = f"{mod_name}.{cls.name}"
            if q not in modules:
                continue
            methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
            init = methods.get("__init__")
            names = set()
            for n in ast.walk(init) if init is not None else ():
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Attribute) \
                        and isinstance(n.targets[0].value, ast.Name) and n.targets[0].value.id == "self" \
                        and builds_module(n.value, methods):
                    names.add(n.targets[0].attr)
            own[q] = names

    def all_children(q: str, seen: frozenset = frozenset()) -> set[str]:
        if q in seen:
            return set()
        out = set(own.get(q, ()))
        for b in base_of.get(q, ()):
            out |= all_children(alias.get(b, b), seen | {q})
        return out

    result = {}
    for q in sorted(own):
        names = all_children(q)
        if names:
            result[q] = sorted(names)
    for a, q in sorted(alias.items()):
        if q in result:
            result[a] = result[q]
    for m in sorted(modules - set(result)):  # `from .resnet import *`: torchvision.models.ResNet
        pkg, _, name = m.rpartition(".")
        defined = [q for q in own if q.startswith(pkg + ".") and q.rsplit(".", 1)[-1] == name and q in result]
        if len(defined) == 1:
            result[m] = result[defined[0]]
    return dict(sorted(result.items()))


def _imports(mod: str, tree: ast.Module) -> dict[str, str]:
    """A module's imported names -> their qualified names (`from .functional import f`, `import torch.nn as nn`)."""
    imported = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            for a in n.names:
                imported[a.asname or a.name] = f"{n.module}.{a.name}"
        elif isinstance(n, ast.ImportFrom) and n.level:
            pkg = mod.rsplit(".", n.level)[0] if not mod.endswith(".__init__") else mod[: -len(".__init__")].rsplit(".", n.level - 1)[0]
            for a in n.names:
                imported[a.asname or a.name] = f"{pkg}.{n.module}.{a.name}" if n.module else f"{pkg}.{a.name}"
        elif isinstance(n, ast.Import):
            for a in n.names:
                imported[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
    return imported


def stateful_modules(wheel: Path, package: str, torch_stateful: set[str]) -> list[str]:
    """A library's torch.nn.Module classes that hold tensors from construction: their `__init__` registers a
    buffer or a parameter, or sets on self an instance of such a class (the library's own, or a torch.nn
    module with parameters or buffers), or a base class does. Built on the cpu and moved only by `.to()`,
    they meet their inputs' device (`torchaudio.transforms.MelSpectrogram`: its STFT window and mel
    filterbank are buffers of its children). A class that places itself (its `__init__` takes a `device`
    parameter, or moves self or a child with `.to()` / `.cuda()`), or derives from one, is left out: where it
    sits is decided by its arguments. By defining module and by package re-export."""
    trees = _modules(wheel, f"{package}/")
    modules = set(module_classes(wheel, package))
    base_of = _class_bases(trees)
    alias = _public_reexports(trees)
    made: dict[str, set[str]] = {}  # class -> qualified names it calls in __init__ and assigns onto self
    found: set[str] = set()
    placed: set[str] = set()
    for mod, tree in trees.items():
        imported = _imports(mod, tree)
        mod_name = mod.removesuffix(".__init__")
        local = {c.name for c in tree.body if isinstance(c, ast.ClassDef)}

        def qual(e: ast.expr) -> str:
            text = ast.unparse(e)
            head, _, rest = text.partition(".")
            if head in local and not rest:
                return f"{mod_name}.{head}"
            return f"{imported[head]}.{rest}".rstrip(".") if head in imported else text

        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            q = f"{mod_name}.{cls.name}"
            init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            if init is None:
                continue
            calls = [n for n in ast.walk(init) if isinstance(n, ast.Call)]
            if any(a.arg == "device" for a in init.args.args + init.args.kwonlyargs) or any(
                    isinstance(c.func, ast.Attribute) and c.func.attr in ("to", "cuda")
                    and ast.unparse(c.func.value).split(".", 1)[0] == "self" for c in calls):
                placed.add(q)
            if any(isinstance(c.func, ast.Attribute) and c.func.attr in ("register_buffer", "register_parameter")
                   and ast.unparse(c.func.value) == "self" for c in calls) or \
                    any(qual(c.func) in ("torch.nn.Parameter", "torch.nn.parameter.Parameter") for c in calls):
                found.add(q)
            made[q] = {qual(st.value.func) for st in ast.walk(init) if isinstance(st, ast.Assign)
                       and isinstance(st.value, ast.Call)
                       and any(isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self" for t in st.targets)}
    found &= modules
    changed = True
    while changed:
        changed = False
        for q in modules - found:
            if q not in base_of:
                continue
            if any(alias.get(b, b) in found for b in base_of[q]) or any(
                    alias.get(m, m) in found or (m.startswith("torch.nn.") and m.rsplit(".", 1)[-1] in torch_stateful)
                    for m in made.get(q, ())):
                found.add(q)
                changed = True
    changed = True
    while changed:  # placed by its arguments, itself or through a base
        changed = False
        for q in found - placed:
            if any(alias.get(b, b) in placed for b in base_of.get(q, ())):
                placed.add(q)
                changed = True
    found -= placed
    found |= {a for a, q in alias.items() if q in found}
    return sorted(found)


def module_input_methods(wheel: Path, package: str, module_methods: set[str]) -> list[str]:
    """Public methods of a library's torch.nn.Module classes that run the module's own submodules on their
    arguments (`CLIPModel.get_text_features(input_ids)` calls `self.text_model(input_ids=input_ids)`,
    `AutoencoderKL.encode(x)` calls `self._encode(x)` which calls `self.encoder(x)`): called with a tensor on
    another device than the module, they fail like `model(x)`. A method qualifies when its body calls
    `self.<attr>(...)` (an attribute its class's `__init__` builds, or `self(...)`) with an argument that
    mentions one of its parameters (or a slice of one), or calls such a method of self with one. torch.nn.Module's own
    methods (`to`, `apply`, `load_state_dict` ...) are left out. By method name over the package."""
    trees = _modules(wheel, f"{package}/")
    modules = set(module_classes(wheel, package))
    module_names = {q.rsplit(".", 1)[-1] for q in modules} | {"Module"}
    found: set[str] = set()
    for mod, tree in trees.items():
        mod_name = mod.removesuffix(".__init__")
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            if f"{mod_name}.{cls.name}" not in modules:
                continue
            methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
            init = methods.get("__init__")
            built = {t.attr for st in ast.walk(init) if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)
                     for t in st.targets if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self"} \
                if init is not None else set()
            # submodules handed to the constructor (`encoder: m.SEANetEncoder` kept as `self.encoder = encoder`)
            given = {a.arg for a in (init.args.args + init.args.kwonlyargs if init is not None else [])
                     if a.annotation is not None and ast.unparse(a.annotation).rsplit(".", 1)[-1] in module_names}
            built |= {t.attr for st in ast.walk(init) if isinstance(st, ast.Assign) and isinstance(st.value, ast.Name)
                      and st.value.id in given
                      for t in st.targets if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self"} \
                if init is not None else set()

            def runs(f, callee_ok) -> bool:
                params = {a.arg for a in f.args.args[1:] + f.args.kwonlyargs} | \
                         ({f.args.vararg.arg} if f.args.vararg else set()) | ({f.args.kwarg.arg} if f.args.kwarg else set())
                grown = True
                while grown:  # a slice of an argument is its data (`frame = x[:, :, offset:offset + n]`)
                    grown = False
                    for st in ast.walk(f):
                        if isinstance(st, ast.Assign) and isinstance(st.value, ast.Subscript) and \
                                isinstance(st.value.value, ast.Name) and st.value.value.id in params:
                            for t in st.targets:
                                if isinstance(t, ast.Name) and t.id not in params:
                                    params.add(t.id)
                                    grown = True
                for c in (n for n in ast.walk(f) if isinstance(n, ast.Call)):
                    target = None
                    if isinstance(c.func, ast.Name) and c.func.id == "self":
                        target = "self"
                    elif isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name) and c.func.value.id == "self":
                        target = c.func.attr
                    if target is None or not (target == "self" or target in built or callee_ok(target)):
                        continue
                    if any(isinstance(n, ast.Name) and n.id in params for a in [*c.args, *(k.value for k in c.keywords)]
                           for n in ast.walk(a)):
                        return True
                return False

            own: set[str] = set()
            changed = True
            while changed:
                changed = False
                for name, f in methods.items():
                    if name not in own and name != "__init__" and runs(f, lambda t: t in own):
                        own.add(name)
                        changed = True
            found |= {m for m in own if not m.startswith("_") and m != "forward" and m not in module_methods}
    return sorted(found)


def called_submodules(wheel: Path, package: str, module_methods: set[str]) -> list[str]:
    """Attribute names a library's torch.nn.Module classes set in `__init__` and then call in their own
    methods (`CLIPModel.__init__` sets `self.text_model = text_model.text_model`, `get_text_features` calls
    `self.text_model(input_ids=...)`; `self.text_projection = nn.Linear(...)`): submodules of the model, so
    user code calling `model.text_model(**inputs)` runs parameters that sit where the model is. Names that
    are methods of any module class of the package, and torch.nn.Module's own, are left out. By name over
    the package."""
    trees = _modules(wheel, f"{package}/")
    modules = set(module_classes(wheel, package))
    called: set[str] = set()
    methods: set[str] = set()
    for mod, tree in trees.items():
        mod_name = mod.removesuffix(".__init__")
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            if f"{mod_name}.{cls.name}" not in modules:
                continue
            fns = [f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
            methods |= {f.name for f in fns}
            init = next((f for f in fns if f.name == "__init__"), None)
            if init is None:
                continue
            set_in_init = {t.attr for st in ast.walk(init) if isinstance(st, ast.Assign)
                           for t in st.targets if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self"}
            for f in fns:
                for c in (n for n in ast.walk(f) if isinstance(n, ast.Call)):
                    if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name) and \
                            c.func.value.id == "self" and c.func.attr in set_in_init and (c.args or c.keywords):
                        called.add(c.func.attr)
    return sorted(n for n in called - methods - module_methods if not n.startswith("_"))


def trainer_hooks(wheel: Path) -> dict:
    """transformers' Trainer: the methods it calls with the model and a batch already on the training device.

    A Trainer method that rebinds the batch with `inputs = self._prepare_inputs(inputs)` (whose helper moves
    every tensor to `self.args.device`) and then calls `self.<hook>(model, inputs, ...)` hands
    that hook the moved batch; the Trainer moved the model to the same `args.device` (`_move_model_to_device`).
    A subclass's override of such a hook (`compute_loss`) runs with both on that device. Returns the Trainer
    classes (with transformers' own subclasses, by module and package re-export) and hook -> positions of
    its `model` / `inputs` parameters (after self)."""
    trees = _modules(wheel, "transformers/")
    hooks: dict[str, dict[str, int]] = {}
    for mod, tree in trees.items():
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer"):
            methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
            # `data.to(**{"device": self.args.device, ...})`: a `.to()` in a method that names the device
            movers = {name for name, f in methods.items()
                      if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "to"
                             for n in ast.walk(f))
                      and any(isinstance(n, ast.Attribute) and ast.unparse(n) == "self.args.device" for n in ast.walk(f))}
            prepares = {name for name, f in methods.items() if any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in movers
                for n in ast.walk(f))} | movers
            for f in methods.values():
                moved_at = [st.lineno for st in ast.walk(f) if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)
                            and isinstance(st.value.func, ast.Attribute) and st.value.func.attr in prepares
                            and [ast.unparse(t) for t in st.targets] == ["inputs"]]
                if not moved_at:
                    continue
                for c in (n for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                          and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
                          and n.lineno > min(moved_at) and n.func.attr in methods):
                    if [ast.unparse(a) for a in c.args[:2]] != ["model", "inputs"] or c.func.attr.startswith("_"):
                        continue
                    params = [a.arg for a in methods[c.func.attr].args.args][1:]
                    if params[:2] == ["model", "inputs"]:
                        hooks[c.func.attr] = {"model": 0, "inputs": 1}
    base_of = _class_bases(trees)
    alias = _reexports(trees)
    roots = {q for q in base_of if q.rsplit(".", 1)[-1] == "Trainer" and q.startswith("transformers.trainer.")}
    found = _subclasses(base_of, roots, alias)
    found |= {a for a, q in alias.items() if q in found}
    # the top-level package's lazy exports (`transformers.Trainer`): the name each defining module gives
    found |= {f"transformers.{q.rsplit('.', 1)[-1]}" for q in found}
    return {"classes": sorted(found), "after_transfer": dict(sorted(hooks.items())), "device": "args.device",
            "places_in_init": _trainer_places(trees)}


def _trainer_places(trees: dict) -> dict:
    """The `Trainer.__init__` parameter it moves onto `args.device` as it is built: `__init__` calls
    `self.<helper>(<param>, args.device)` and the helper's body calls `.to()` on its first parameter
    (`_move_model_to_device(model, args.device)`). {} when the wheel does not do that."""
    for tree in trees.values():
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer"):
            methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
            init = methods.get("__init__")
            if init is None:
                continue
            params = [a.arg for a in init.args.args][1:]
            for c in ast.walk(init):
                if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and ast.unparse(c.func.value) == "self"
                        and c.func.attr in methods and len(c.args) == 2 and isinstance(c.args[0], ast.Name)
                        and c.args[0].id in params and ast.unparse(c.args[1]).endswith("args.device")):
                    continue
                helper = methods[c.func.attr]
                first = [a.arg for a in helper.args.args][1:2]
                if first and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "to"
                                 and isinstance(n.func.value, ast.Name) and n.func.value.id == first[0]
                                 for n in ast.walk(helper)):
                    return {"param": c.args[0].id, "position": params.index(c.args[0].id)}
    return {}


def processor_modalities(wheel: Path) -> dict:
    """transformers' ProcessorMixin names each sub-processor attribute after its modality (an attribute
    whose name contains "tokenizer" is a tokenizer, "feature_extractor" a feature extractor, ...:
    `_get_modality_for_attribute`), and MODALITY_TO_BASE_CLASS_MAPPING gives each modality's base class.
    `preprocessing`: the modalities whose base is a preprocessing class (its outputs with
    return_tensors="pt" are cpu tensors); `models`: those whose base is a model (an audio tokenizer)."""
    tree = dict(_trees(wheel, "transformers/processing_utils.py")).get("transformers/processing_utils.py")
    mapping = next((n.value for n in (tree.body if tree is not None else []) if isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "MODALITY_TO_BASE_CLASS_MAPPING" for t in n.targets)), None)
    out = {"preprocessing": [], "models": []}
    if not isinstance(mapping, ast.Dict):
        return out
    for k, v in zip(mapping.keys, mapping.values):
        names = [e.value for e in ast.walk(v) if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if isinstance(k, ast.Constant) and names:
            out["models" if all(n.endswith("Model") for n in names) else "preprocessing"].append(k.value)
    return {key: sorted(v) for key, v in out.items()}


def generation_callbacks(wheel: Path) -> dict:
    """transformers generate()'s callback bases: classes of transformers/generation whose `__call__`
    is abstract (raises NotImplementedError), with the parameters generate() passes to it."""
    out = {}
    for _name, tree in _trees(wheel, "transformers/generation/"):
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            call = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__call__"), None)
            if call is None:
                continue
            abstract = any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in ast.walk(call))
            params = [a.arg for a in call.args.args][1:]
            if abstract and params[:1] == ["input_ids"]:
                out[cls.name] = {"params": params}
    return out


def generation_cpu_state(wheel: Path) -> dict:
    """transformers' own logits processors / stopping criteria that keep a tensor with dims, made in
    `__init__` on their `device` argument (default "cpu": `torch.tensor([eos_token_id], device=device)`),
    and combine it in `__call__` with the tensors they are called with without moving it there first:
    class -> {param, position, default, attrs}. (A 0-dim one, `torch.tensor(epsilon)`, mixes with any
    device and is not listed.)"""
    out = {}
    for _name, tree in _trees(wheel, "transformers/generation/"):
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            call = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__call__"), None)
            if init is None or call is None:
                continue
            params = [a.arg for a in init.args.args][1:]
            defaults = [None] * (len(init.args.args) - len(init.args.defaults)) + list(init.args.defaults)
            default = dict(zip([a.arg for a in init.args.args], defaults)).get("device")
            if "device" not in params or not (isinstance(default, ast.Constant) and default.value == "cpu"):
                continue
            assigns = [n for n in ast.walk(init) if isinstance(n, ast.Assign)]
            # names that hold a list: a list display or list(...) assigned in __init__, or a list-annotated parameter
            lists = {t.id for n in assigns for t in n.targets if isinstance(t, ast.Name) and _is_list(n.value)}
            lists |= {a.arg for a in init.args.args if a.annotation is not None and "list" in ast.unparse(a.annotation).lower()}

            def on_device(e) -> bool:  # a tensor with dims built on `device`
                for c in ast.walk(e):
                    if isinstance(c, ast.Call) and any(k.arg == "device" and isinstance(k.value, ast.Name)
                                                       and k.value.id == "device" for k in c.keywords) and c.args:
                        a0 = c.args[0]
                        return _is_list(a0) or isinstance(a0, ast.Name) and a0.id in lists or \
                            isinstance(e, ast.Subscript) and "None" in ast.unparse(e.slice)
                return False

            local = {t.id for n in assigns for t in n.targets if isinstance(t, ast.Name) and on_device(n.value)}
            attrs = {t.attr for n in assigns for t in n.targets
                     if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                     and (on_device(n.value) or isinstance(n.value, ast.Name) and n.value.id in local)}
            moved = {n.value.attr for n in ast.walk(call) if isinstance(n, ast.Attribute) and n.attr == "to"
                     and isinstance(n.value, ast.Attribute) and isinstance(n.value.value, ast.Name) and n.value.value.id == "self"}
            # an index (`scores[:, self.eos_token_id] = 0`) may be on the cpu for a tensor on any device
            as_index = {id(x) for n in ast.walk(call) if isinstance(n, ast.Subscript) for x in ast.walk(n.slice)}
            read = {n.attr for n in ast.walk(call) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                    and n.value.id == "self" and id(n) not in as_index}
            kept = sorted((attrs & read) - moved)
            if kept:
                out[cls.name] = {"param": "device", "position": params.index("device"), "default": "cpu", "attrs": kept}
    return {"classes": dict(sorted(out.items())), "lists": sorted(lists_of_callbacks(wheel))}


def lists_of_callbacks(wheel: Path) -> set[str]:
    """Classes of transformers/generation that subclass `list` and whose `__call__` calls each item."""
    out = set()
    for _name, tree in _trees(wheel, "transformers/generation/"):
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            call = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__call__"), None)
            if call is None or not any(isinstance(b, ast.Name) and b.id == "list" for b in cls.bases):
                continue
            loops = [n for n in ast.walk(call) if isinstance(n, (ast.For, ast.comprehension)) and ast.unparse(n.iter) == "self"]
            names = {n.target.id for n in loops if isinstance(n.target, ast.Name)}
            if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in names for c in ast.walk(call)):
                out.add(cls.name)
    return out


def _is_list(e) -> bool:
    return isinstance(e, (ast.List, ast.ListComp)) or isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "list"


def _modules(wheel: Path, prefix: str) -> dict[str, ast.Module]:
    """The wheel's modules under `prefix`, by dotted name (`pkg.sub.__init__` for a package)."""
    return {name.removesuffix(".py").replace("/", "."): tree for name, tree in _trees(wheel, prefix)}


def _class_bases(trees: dict[str, ast.Module]) -> dict[str, list[str]]:
    """module.Class -> its bases, qualified through the module's imports (relative ones too)."""
    base_of = {}
    for mod, tree in trees.items():
        imported = {}
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                for a in n.names:
                    imported[a.asname or a.name] = f"{n.module}.{a.name}"
            elif isinstance(n, ast.ImportFrom) and n.level:
                pkg = mod.rsplit(".", n.level)[0] if not mod.endswith(".__init__") else mod[: -len(".__init__")].rsplit(".", n.level - 1)[0]
                for a in n.names:
                    imported[a.asname or a.name] = f"{pkg}.{n.module}.{a.name}" if n.module else f"{pkg}.{a.name}"
        mod_name = mod.removesuffix(".__init__")
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            bases = []
            for b in cls.bases:
                text = ast.unparse(b)
                head, _, rest = text.partition(".")
                bases.append(f"{imported[head]}.{rest}".rstrip(".") if head in imported else
                             text if "." in text else f"{mod_name}.{text}")
            base_of[f"{mod_name}.{cls.name}"] = bases
    return base_of


def _reexports(trees: dict[str, ast.Module], absolute: bool = False) -> dict[str, str]:
    """The package re-exports (`from .dataset import Dataset` in torch_geometric/data/__init__.py): the name
    under the package -> the name where it is defined. `absolute`: also the package's imports of itself by
    its full name (`from torchmetrics.classification.accuracy import Accuracy` in
    torchmetrics/classification/__init__.py)."""
    alias = {}
    for mod, tree in trees.items():
        if mod.endswith(".__init__"):
            pkg = mod[: -len(".__init__")]
            top = pkg.split(".", 1)[0]
            for n in tree.body:
                if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module:
                    for a in n.names:
                        alias[f"{pkg}.{a.asname or a.name}"] = f"{pkg}.{n.module}.{a.name}"
                elif absolute and isinstance(n, ast.ImportFrom) and n.level == 0 and n.module \
                        and n.module.split(".", 1)[0] == top and n.module != pkg:
                    for a in n.names:
                        if a.name != "*" and f"{pkg}.{a.asname or a.name}" != f"{n.module}.{a.name}":
                            alias[f"{pkg}.{a.asname or a.name}"] = f"{n.module}.{a.name}"
    return alias


def _public_reexports(trees: dict[str, ast.Module]) -> dict[str, str]:
    """`_reexports` and the names a package's `__init__` takes with `from .conv import *` (relative or
    absolute, `from lpips.lpips import *`): `torch_geometric.nn.GCNConv` -> where GCNConv is defined, through
    any chain of re-exports. A star takes the module's `__all__` when it is a literal list, else its public
    top-level names."""
    alias = _reexports(trees)
    stars: list[tuple[str, str]] = []  # (package, module it star-imports)
    for mod, tree in trees.items():
        if mod.endswith(".__init__"):
            pkg = mod[: -len(".__init__")]
            for n in tree.body:
                if isinstance(n, ast.ImportFrom) and n.module and any(a.name == "*" for a in n.names):
                    src = f"{pkg.rsplit('.', n.level - 1)[0] if n.level > 1 else pkg}.{n.module}" if n.level else n.module
                    stars.append((pkg, src))

    def public(src: str) -> list[str]:
        tree = trees.get(src) or trees.get(f"{src}.__init__")
        if tree is None:
            return []
        for n in tree.body:
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets) \
                    and isinstance(n.value, (ast.List, ast.Tuple)):
                return [e.value for e in n.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        names = [n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))]
        names += [k.rsplit(".", 1)[-1] for k in alias if k.rsplit(".", 1)[0] == src]
        return [x for x in names if not x.startswith("_")]

    changed = True
    while changed:
        changed = False
        for pkg, src in stars:
            for name in public(src):
                if f"{pkg}.{name}" not in alias:
                    alias[f"{pkg}.{name}"] = alias.get(f"{src}.{name}", f"{src}.{name}")
                    changed = True
    while True:  # follow chains: nn.GCNConv -> nn.conv.GCNConv -> nn.conv.gcn_conv.GCNConv
        step = {a: alias.get(q, q) if alias.get(q, q) != a else q for a, q in alias.items()}  # (a cycle stops)
        if step == alias:
            return alias
        alias = step


def _subclasses(base_of: dict[str, list[str]], roots: set[str], alias: dict[str, str]) -> set[str]:
    """`roots` and every class deriving from one of them, directly or not (bases read through `alias`)."""
    found = set(roots)
    changed = True
    while changed:
        changed = False
        for q, bases in base_of.items():
            if q not in found and any(alias.get(b, b) in found for b in bases):
                found.add(q)
                changed = True
    return found


def dataset_loaders(wheel: Path, package: str) -> list[str]:
    """Classes of a library that subclass torch.utils.data.DataLoader and, like it, collate the items
    of a dataset given first (`DataLoader(dataset, ...)`): their batches are where the dataset's items
    are. Loaders over one graph / tensor (`NeighborLoader(data, ...)`) are not listed: they slice what
    they are given, on its device. Qualified by module and by the package re-exports."""
    trees = _modules(wheel, f"{package}/")
    base_of = _class_bases(trees)
    inits = {}
    for mod, tree in trees.items():
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            q = f"{mod.removesuffix('.__init__')}.{cls.name}"
            init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            inits[q] = [a.arg for a in init.args.args][1:2] if init is not None else None
            if init is not None and _uses_identity_collate(tree, init):
                inits[q] = None  # yields plain lists of items (DataListLoader): no batch
    loaders = _subclasses(base_of, {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}, {})
    found = {q for q in loaders if q in base_of and inits.get(q) == ["dataset"]}
    # `from .dataloader import DataLoader` in torch_geometric/loader/__init__.py
    found |= {a for a, q in _reexports(trees).items() if q in found}
    return sorted(found)


def graph_datasets(wheel: Path, package: str) -> dict:
    """A graph library's datasets and graph objects (torch_geometric): the dataset classes (subclasses of
    its `data.Dataset`, in its `datasets` package, qualified and by the package re-exports), whose items
    are graph objects built on the host from the files they load; the fields of its `data.Data` graph
    (the tensors its constructor takes: `x`, `edge_index`, `y` ...), which `.to()` moves in place; and
    its transforms that take a `device` (ToDevice), which move each graph as the dataset hands it out."""
    trees = _modules(wheel, f"{package}/")
    alias = _reexports(trees)
    datasets = _subclasses(_class_bases(trees), {f"{package}.data.dataset.Dataset"}, alias)
    found = {q for q in datasets if q.startswith(f"{package}.datasets.")}
    found |= {a for a, q in alias.items() if q in found}
    data = trees.get(f"{package}.data.data")
    cls = next((n for n in data.body if isinstance(n, ast.ClassDef) and n.name == "Data"), None) if data else None
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None) if cls else None
    fields = [a.arg for a in init.args.args[1:] if _annotated_tensor(a)] if init is not None else []
    # transforms that take a `device` (ToDevice): a dataset built with one hands out graphs already moved
    moving = {f"{mod.removesuffix('.__init__')}.{c.name}" for mod, tree in trees.items()
              if mod.startswith(f"{package}.transforms.") for c in tree.body if isinstance(c, ast.ClassDef)
              for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"
              and "device" in [a.arg for a in f.args.args + f.args.kwonlyargs]}
    moving |= {a for a, q in alias.items() if q in moving}
    return {"datasets": sorted(found), "graph_fields": fields, "moving_transforms": sorted(moving)}


def attribute_dicts(wheel: Path, package: str) -> list[str]:
    """A config library's attribute dicts (yacs CfgNode, EasyDict, addict's Dict): classes deriving from
    `dict` that define `__getattr__` or `__setattr__` (or inherit one), so `cfg.MODEL.DEVICE = "cuda"`
    stores a key read back as an attribute. Qualified by module and by the package re-exports."""
    trees = _modules(wheel, f"{package}/")
    alias = _reexports(trees)
    base_of = _class_bases(trees)
    # a bare `dict` base is the builtin (qualified by its module when neither defined nor imported there)
    builtin = {f"{m.removesuffix('.__init__')}.dict" for m in trees} - set(base_of)
    dicts = _subclasses(base_of, builtin, alias)
    hooks = {f"{mod.removesuffix('.__init__')}.{c.name}" for mod, tree in trees.items()
             for c in tree.body if isinstance(c, ast.ClassDef)
             and any(isinstance(f, ast.FunctionDef) and f.name in ("__getattr__", "__setattr__") for f in c.body)}
    found = {q for q in dicts & _subclasses(base_of, hooks, alias) if q in base_of and ".test" not in q}
    found |= {a for a, q in alias.items() if q in found}
    return sorted(found)


def _annotated_tensor(a: ast.arg) -> bool:
    """`x: Optional[Tensor] = None`: a parameter typed as a tensor (or a tensor or None)."""
    return a.annotation is not None and "Tensor" in ast.unparse(a.annotation)


def _uses_identity_collate(tree: ast.Module, init: ast.FunctionDef) -> bool:
    """Whether a loader's __init__ names a module-level function that returns its argument unchanged
    (`def collate_fn(data_list): return data_list`): its batches are lists of the dataset's items, each
    where it was, moved by whatever the list is handed to (torch_geometric's DataParallel scatters it)."""
    identity = {f.name for f in tree.body if isinstance(f, ast.FunctionDef) and f.args.args
                and isinstance(f.body[-1], ast.Return) and isinstance(f.body[-1].value, ast.Name)
                and f.body[-1].value.id == f.args.args[0].arg}
    return any(isinstance(n, ast.Name) and n.id in identity for n in ast.walk(init))


_HOST_FACTORIES = {"from_numpy", "as_tensor", "tensor"}
_CALL_METHODS = {"__call__", "forward", "transform", "_transform"}


def image_transforms(wheel: Path) -> dict:
    """torchvision's image transforms, from its wheel: `to_tensor` the transform classes that return a
    tensor made from the host image they are given (a PIL image or a numpy array), through a functional
    that builds it with torch.from_numpy / as_tensor (so on the cpu); `composers` those that call each
    transform they hold in turn (`for t in self.transforms: img = t(img)`). Class names, under
    torchvision.transforms."""
    trees = _modules(wheel, "torchvision/transforms/")
    functionals = set()  # (module, function)
    for mod, tree in trees.items():
        for f in tree.body:
            if not isinstance(f, ast.FunctionDef) or f.name.startswith("_") or not f.args.args:
                continue
            image = f.args.args[0].arg  # the image it is given: a tensor is made of it, with no device=
            if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in _HOST_FACTORIES
                   and ast.unparse(c.func.value) == "torch" and c.args and not any(k.arg == "device" for k in c.keywords)
                   and any(isinstance(n, ast.Name) and n.id == image for n in ast.walk(c.args[0])) for c in ast.walk(f)):
                functionals.add((mod.removesuffix(".__init__"), f.name))
    # a functional package re-exports its modules' functions (v2.functional/__init__ star-imports them)
    exported = {(m.rsplit(".", 1)[0], n) for m, n in functionals}
    functionals |= exported
    to_tensor, composers = set(), set()
    for mod, tree in trees.items():
        pkg = mod.rsplit(".", 1)[0]
        aliases = {}  # `from . import functional as F`, `from .functional import to_tensor`
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom):
                base = (pkg.rsplit(".", n.level - 1)[0] if n.level > 1 else pkg) if n.level else ""
                src = ".".join(p for p in (base, n.module or "") if p)
                for a in n.names:
                    aliases[a.asname or a.name] = (src, a.name)
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for f in (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name in _CALL_METHODS):
                for r in (n for n in ast.walk(f) if isinstance(n, ast.Return) and n.value is not None):
                    for e in ast.walk(r.value):
                        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in aliases:
                            src, name = aliases[e.value.id]
                            if (f"{src}.{name}", e.attr) in functionals:
                                to_tensor.add(cls.name)
                        elif isinstance(e, ast.Name) and e.id in aliases and aliases[e.id] in functionals:
                            to_tensor.add(cls.name)
                loops = [n for n in ast.walk(f) if isinstance(n, ast.For) and ast.unparse(n.iter) == "self.transforms"
                         and isinstance(n.target, ast.Name)]
                if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == loop.target.id
                       for loop in loops for c in ast.walk(loop)):
                    composers.add(cls.name)
    return {"to_tensor": sorted(to_tensor), "composers": sorted(composers)}


def host_package(wheel: Path, package: str) -> bool:
    """A package none of whose modules imports torch: what it returns is host data (never a tensor). (A package
    may be one module: `soundfile.py`.)"""
    for _name, tree in [*_trees(wheel, f"{package}/"), *_trees(wheel, f"{package}.py")]:
        for n in ast.walk(tree):
            if isinstance(n, ast.Import) and any(a.name.split(".")[0] == "torch" for a in n.names) or \
                    isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "torch":
                return False
    return True


def iterable_wrappers(wheel: Path, package: str) -> list[str]:
    """Classes that wrap the iterable they are given and yield its elements unchanged (tqdm's progress bars:
    `for batch in tqdm(loader)` gets the loader's batches): their `__iter__` yields from `self.iterable`, given
    to `__init__` first; their subclasses that do not override `__iter__` too. Qualified by module, by the
    package re-exports and by module-level aliases (`tqdm = tqdm_notebook`)."""
    trees = _modules(wheel, f"{package}/")
    base_of = _class_bases(trees)
    alias = _reexports(trees)
    own_iter: dict[str, bool] = {}  # class -> whether its own __iter__ passes `self.iterable` through
    for mod, tree in trees.items():
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            q = f"{mod.removesuffix('.__init__')}.{cls.name}"
            it = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__iter__"), None)
            if it is not None and not _yields_super_iter(it):  # (yielding what the base's __iter__ yields: inherited)
                own_iter[q] = _yields_self_iterable(it) and _takes_iterable_first(cls)
    roots = {q for q, ok in own_iter.items() if ok}
    found = {q for q in _subclasses(base_of, roots, alias) if own_iter.get(q, True)}
    for _ in range(3):  # names bound at module level to a found class, through chains of modules
        for mod, tree in trees.items():
            pkg = mod.removesuffix(".__init__")
            for n in ast.walk(tree):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                        and isinstance(n.value, ast.Name) and f"{pkg}.{n.value.id}" in found:
                    found.add(f"{pkg}.{n.targets[0].id}")  # `tqdm = tqdm_notebook`
                elif isinstance(n, ast.ImportFrom) and n.module:
                    src = n.module if not n.level else ".".join(pkg.split(".")[:len(pkg.split(".")) - n.level + (1 if mod.endswith(".__init__") else 0)] + [n.module])
                    for a in n.names:  # `from .notebook import tqdm as notebook_tqdm`
                        if f"{src}.{a.name}" in found:
                            found.add(f"{pkg}.{a.asname or a.name}")
        found = found | {q for q in _subclasses(base_of, found, alias) if own_iter.get(q, True)}
    found |= {a for a, q in alias.items() if q in found}
    return sorted(found)


def _yields_super_iter(f: ast.FunctionDef) -> bool:
    """`for obj in super().__iter__(): yield obj` (or through a local): the base's elements, passed on."""
    def is_super_iter(e) -> bool:
        return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "__iter__" \
            and isinstance(e.func.value, ast.Call) and isinstance(e.func.value.func, ast.Name) and e.func.value.func.id == "super"
    locals_of = {t.id for n in ast.walk(f) if isinstance(n, ast.Assign) and is_super_iter(n.value)
                 for t in n.targets if isinstance(t, ast.Name)}
    return any(isinstance(n, ast.For) and (is_super_iter(n.iter) or (isinstance(n.iter, ast.Name) and n.iter.id in locals_of))
               and any(isinstance(y, ast.Yield) for y in ast.walk(n)) for n in ast.walk(f))


def _yields_self_iterable(f: ast.FunctionDef) -> bool:
    """A generator method whose loop (or `yield from`) runs over `self.iterable` (read directly or through a local)."""
    locals_of = {t.id for n in ast.walk(f) if isinstance(n, ast.Assign) and _is_self_iterable(n.value)
                 for t in n.targets if isinstance(t, ast.Name)}

    def over_iterable(e) -> bool:
        return _is_self_iterable(e) or (isinstance(e, ast.Name) and e.id in locals_of)
    loops = any(isinstance(n, ast.For) and over_iterable(n.iter) and any(isinstance(y, ast.Yield) for y in ast.walk(n))
                for n in ast.walk(f))
    return loops or any(isinstance(n, ast.YieldFrom) and over_iterable(n.value) for n in ast.walk(f))


def _is_self_iterable(e) -> bool:
    return isinstance(e, ast.Attribute) and e.attr == "iterable" and isinstance(e.value, ast.Name) and e.value.id == "self"


def _takes_iterable_first(cls: ast.ClassDef) -> bool:
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    return init is not None and [a.arg for a in init.args.args][1:2] == ["iterable"]
