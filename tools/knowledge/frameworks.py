"""Tables about the frameworks users run around torch (-> devflow/knowledge/frameworks.json):

- torch.distributions: which classes exist, which constructor arguments are their parameters, and
  which methods take a value / a sample shape (read from the installed torch, probed on meta);
- functions taking `generator=` (torch's stubs) and the device a fresh `torch.Generator()` is on;
- functions whose `lengths` must be a cpu tensor (probed: meta lengths are refused naming the CPU);
- torch.jit.trace: whether a device computed at trace time is baked into the graph (probed);
- Lightning: LightningModule hooks that see the batch before / after Trainer's transfer to the
  module's device (ast scan of the released `lightning` wheel, never imported);
- transformers generate(): the callback bases it calls with the input's tensors (`__call__`
  signatures of LogitsProcessor / StoppingCriteria ..., ast scan of the wheel).
"""

from __future__ import annotations

import ast
import inspect
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

    samplers = []
    for n in sorted(getattr(data, "__all__", [])):
        try:
            if "generator" in inspect.signature(getattr(data, n)).parameters:
                samplers.append(f"utils.data.{n}")
        except (TypeError, ValueError):
            continue
    return {"functions": fn, "tensor_methods": meth, "default_device_draws": samplers,
            "default_device": torch.Generator().device.type}


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
    return {"functions": ["jit.trace", "jit.trace_module"], "bakes_devices": baked}


def torch_tables() -> dict:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"distributions": _distributions(), "generators": _generators(), "cpu_lengths": _cpu_lengths(),
                "trace": _trace()}


# ---------------------------------------------------------------- from released wheels

def _trees(wheel: Path, prefix: str):
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if name.startswith(prefix) and name.endswith(".py"):
                try:
                    yield name, ast.parse(z.read(name).decode("utf-8", "replace"))
                except SyntaxError:
                    continue


def _funcs(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _hook_calls(f) -> list[str]:
    """Hook names a function hands to `_call_batch_hook(name, ...)`, in source order."""
    calls = [n for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "_call_batch_hook" and n.args and isinstance(n.args[0], ast.Constant)]
    return [c.args[0].value for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]


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
    exports = set()
    for name, tree in _trees(wheel, "lightning/"):
        mod = name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        if any(isinstance(n, ast.ClassDef) and n.name == "LightningModule" for n in tree.body) or any(
                isinstance(n, ast.ImportFrom) and any(a.name == "LightningModule" for a in n.names) for n in ast.walk(tree)
                if name.endswith("__init__.py")):
            exports.add(f"{mod}.LightningModule")
    # the same code ships as the standalone `pytorch_lightning` package (lightning.pytorch.X = pytorch_lightning.X)
    exports |= {"pytorch_lightning" + e[len("lightning.pytorch"):] for e in exports if e.startswith("lightning.pytorch.")}
    return {"module_classes": sorted(set(exports)), "before_transfer": before, "transfer": transfer,
            "after_transfer": after_all,
            "batch_position": {h: i for h, i in sorted(hooks_with_batch.items()) if not h.startswith("_")}}


def accelerate(wheel: Path) -> dict:
    """accelerate's Accelerator: what `prepare()` does with each object it is given (the isinstance
    branches of `_prepare_one`, each with the `prepare_*` method it hands the object to; anything else
    is returned as it is), the `__init__` flag that keeps everything on the cpu, and the property that
    names its device. The DataLoader it prepares yields batches on that device; the modules it
    prepares are moved there."""
    places: dict[str, str] = {}
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
    return {"classes": sorted(classes), "prepare": "prepare", "places": dict(sorted(places.items())),
            "cpu_flag": cpu_flag, "device": device_attr}


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
