"""Tables about torch, generated from the installed torch (imported, stubs read, objects built on
the meta device). Each table records where it comes from in `sources`."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import torch
import torch.utils._device as _device

from . import pyi

NAMESPACES = ("", "fft", "nested", "sparse", "special", "linalg")
# Optimizer hyper-parameters that decide where per-parameter state lives.
PLACEMENT_FLAGS = ("capturable", "fused", "foreach", "differentiable")


def _qualify(obj) -> str | None:
    for ns in NAMESPACES:
        mod = getattr(torch, ns) if ns else torch
        for name in dir(mod):
            if not name.startswith("_") and getattr(mod, name, None) is obj:
                return f"{ns}.{name}" if ns else name
    return None


def _stubs():
    root = Path(torch.__file__).parent / "_C"
    return pyi.functions(root / "_VariableFunctions.pyi"), pyi.methods(root / "__init__.pyi", "TensorBase")


def factories(funcs) -> dict:
    """torch's own list of device constructors (what honours device= and the default device)."""
    names = sorted(q for q in (_qualify(f) for f in _device._device_constructors()) if q)
    # called with one Python number, the result is 0-dim: built from a value, not a size
    scalar = []
    for n in names:
        f = torch
        for part in n.split("."):
            f = getattr(f, part)
        try:
            with torch.device("meta"):
                if f(1).dim() == 0:
                    scalar.append(n)
        except Exception:  # noqa: BLE001
            pass
    accepts = sorted(n for n, os_ in funcs.items() if not n.startswith("_")
                     and any(p == "device" for o in os_ for p, _ in o.params))
    like = sorted(n for n in accepts if n not in names and all(
        o.params and o.params[0][0] == "input" and pyi.is_tensor_annotation(o.params[0][1]) for o in funcs[n]))
    return {"factories": names, "maybe_scalar_factories": scalar, "accepts_device": accepts, "like_factories": like}


def legacy_types() -> list[str]:
    return sorted({c.__name__ for c in torch._tensor_classes if c.__module__ == "torch"} | {"Tensor"})


def cpu_result_functions(funcs, known: set[str]) -> dict:
    """Public functions that build a tensor from non-tensor data, take no device= and are not
    device constructors: each is called under a meta default device; a cpu result means it ignores
    the default device and always returns cpu tensors."""
    import numpy as np

    samples = {"ndarray": lambda: np.zeros(2, dtype=np.float32), "buffer": lambda: bytearray(8)}
    candidates = sorted(n for n, os_ in funcs.items() if not n.startswith("_") and n not in known
                        and all(pyi.is_tensor_annotation(o.returns) for o in os_)
                        and all(not pyi.mentions_tensor(t) and p != "device" for o in os_ for p, t in o.params)
                        and all(o.params for o in os_))
    cpu, other, not_probed = [], [], []
    for n in candidates:
        first = funcs[n][0].params[0][0]
        if first not in samples:
            not_probed.append(n)
            continue
        kwargs = {"dtype": torch.float32} if any(p == "dtype" for p, _ in funcs[n][0].params) else {}
        with torch.device("meta"):
            try:
                out = getattr(torch, n)(samples[first](), **kwargs)
            except Exception:  # noqa: BLE001
                not_probed.append(n)
                continue
        (cpu if out.device.type == "cpu" else other).append(n)
    return {"cpu_result_functions": cpu, "cpu_result_not_probed": not_probed}


def loaders() -> dict:
    """Callables that restore tensors onto the device they were saved from unless map_location."""
    import torch.hub
    import torch.jit
    import torch.serialization

    out = {}
    for mod in (torch, torch.serialization, torch.jit, torch.hub):
        for name in dir(mod):
            f = getattr(mod, name, None)
            if name.startswith("_") or not callable(f) or inspect.isclass(f):
                continue
            try:
                sig = inspect.signature(f)
            except (TypeError, ValueError):
                continue
            p = sig.parameters.get("map_location")
            if p is not None:
                q = f"{mod.__name__}.{name}"
                out[q] = {"map_location_default": None if p.default is None else repr(p.default),
                          "positional_index": list(sig.parameters).index("map_location")}
    return {"map_location_loaders": dict(sorted(out.items()))}


def _required_args(cls) -> list[inspect.Parameter]:
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return []
    return [p for p in list(sig.parameters.values())[1:]
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _build(cls, depth=0):
    """Instantiate an nn module class with small arguments for its required parameters (a
    parameter annotated with a module class gets one built; `*args` constructors get two ints;
    an optional None parameter is given a value when the defaults alone are refused)."""
    params = _required_args(cls)
    try:
        sig = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        sig = {}
    n = len(params) or (2 if any(p.kind == p.VAR_POSITIONAL for p in sig.values()) else 0)
    tries = [[2] * n, [(2, 2)] * n, [4] * n]
    for i, p in enumerate(params):
        ann = p.annotation
        if isinstance(ann, str):
            ann = getattr(torch.nn, ann.strip("'\""), None)
        if inspect.isclass(ann) and issubclass(ann, torch.nn.Module) and depth < 2:
            sub = _build(ann, depth + 1)
            for t in tries:
                t[i] = sub
    optional = [k for k, p in sig.items() if p.default is None]
    attempts = ([([], {})] if not params else []) + [(args, {}) for args in tries] + [(tries[0], {k: 2}) for k in optional]
    for args, kw in attempts:
        try:
            with torch.device("meta"):
                return cls(*args, **kw)
        except Exception:  # noqa: BLE001
            continue
    return None


def _holds_children(cls) -> bool:
    """A container: built from a list / dict of stateful children (or from them as *args), it owns
    their parameters."""
    try:
        varargs = any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(cls.__init__).parameters.values())
    except (TypeError, ValueError):
        varargs = False
    with torch.device("meta"):
        linear, param = torch.nn.Linear(2, 2), torch.nn.Parameter(torch.zeros(2))
    for arg in ([linear], {"a": linear}, [param], {"a": param}) + ((linear,) if varargs else ()):
        try:
            with torch.device("meta"):
                m = cls(arg)
            if any(True for _ in m.parameters()):
                return True
        except Exception:  # noqa: BLE001
            continue
    return False


def _builds_cls(meth) -> bool:
    """A classmethod whose body calls its own first parameter (`cls(...)`): an alternative constructor."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(meth)))
    except (OSError, TypeError, SyntaxError):
        return False
    fn = tree.body[0]
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
        return False
    first = fn.args.args[0].arg
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == first for n in ast.walk(fn))


def module_constructors(classes: dict) -> dict:
    """torch.nn classmethods that build an instance of their class (`nn.Embedding.from_pretrained`): the
    module they return, with the tensors they are given as its state."""
    out = {}
    for n, cls in sorted(classes.items()):
        names = sorted(k for k, v in vars(cls).items() if isinstance(v, classmethod) and not k.startswith("_")
                       and _builds_cls(v.__func__))
        if names:
            out[n] = names
    return out


def nn_modules() -> dict:
    classes = {n: getattr(torch.nn, n) for n in dir(torch.nn)
               if inspect.isclass(getattr(torch.nn, n)) and issubclass(getattr(torch.nn, n), torch.nn.Module)
               and not n.startswith("_") and n != "Module"}
    with_state, free, unknown, containers = {}, [], [], []
    for n, cls in sorted(classes.items()):
        m = _build(cls)
        if m is None:
            unknown.append(n)
            continue
        ps = [k for k, _ in m.named_parameters()]
        bs = [k for k, _ in m.named_buffers()]
        if ps or bs:
            with_state[n] = {"parameters": ps, "buffers": bs}
        elif _holds_children(cls):
            containers.append(n)
        else:
            free.append(n)
    # losses whose weight-like constructor arguments become buffers
    weighted, kwargs = [], set()
    for n, cls in sorted(classes.items()):
        try:
            names = [p for p in inspect.signature(cls.__init__).parameters if p in ("weight", "pos_weight")]
        except (TypeError, ValueError):
            continue
        for p in names:
            try:
                with torch.device("meta"):
                    m = cls(**{p: torch.ones(2)})
            except Exception:  # noqa: BLE001
                continue
            if any(k == p for k, _ in m.named_buffers()):
                weighted.append(n)
                kwargs.add(p)
    wrappers = []
    for n, cls in sorted(classes.items()):
        try:
            ps = inspect.signature(cls.__init__).parameters
        except (TypeError, ValueError):
            continue
        if "module" in ps and "device_ids" in ps:
            wrappers.append(n)
    import torch.nn.parallel as par

    for n in dir(par):
        cls = getattr(par, n)
        if inspect.isclass(cls) and issubclass(cls, torch.nn.Module) and n not in wrappers:
            ps = inspect.signature(cls.__init__).parameters
            if "module" in ps and "device_ids" in ps:
                wrappers.append(n)
    free = [n for n in free if n not in wrappers]
    containers = [n for n in containers if n not in wrappers]
    return {"modules_with_state": with_state, "param_free_modules": free, "container_modules": containers,
            "modules_not_built": unknown, "module_constructors": module_constructors(classes),
            "weighted_losses": sorted(set(weighted)), "loss_weight_kwargs": sorted(kwargs), "data_parallel": wrappers}


def optimizers() -> dict:
    """Each optimizer steps once on a meta parameter: state entries on the parameter's device
    ("param") or on the cpu (0-dim step counters), with the default flags and with capturable=True."""
    out = {}
    for n in sorted(dir(torch.optim)):
        cls = getattr(torch.optim, n)
        if not (inspect.isclass(cls) and issubclass(cls, torch.optim.Optimizer)) or cls is torch.optim.Optimizer:
            continue
        sig = inspect.signature(cls.__init__).parameters
        flags = {f: sig[f].default for f in PLACEMENT_FLAGS if f in sig}
        entry: dict = {"flags": {k: v for k, v in flags.items() if v is not inspect.Parameter.empty}}
        for label, extra in (("default", {}), ("capturable", {"capturable": True})):
            if extra and "capturable" not in sig:
                continue
            kw = dict(extra)
            if "foreach" in sig:
                kw["foreach"] = False
            entry[label] = _state_devices(cls, kw)
        out[n] = entry
    return {"optimizers": out}


def lr_schedulers() -> dict:
    """The learning-rate schedulers of torch.optim.lr_scheduler: their state_dict() is their __dict__ without
    the optimizer (step counters, the lrs read from the optimizer's param groups, the schedule's settings),
    so a checkpoint of one holds no tensors when the lrs are numbers (checked on one built from an SGD)."""
    sched = torch.optim.lr_scheduler
    base = getattr(sched, "LRScheduler", sched._LRScheduler)
    names = sorted(n for n in dir(sched) if inspect.isclass(getattr(sched, n)) and not n.startswith("_")
                   and (issubclass(getattr(sched, n), base) or n == "ReduceLROnPlateau") and getattr(sched, n) is not base)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    probe = sched.LambdaLR(opt, lambda step: 1.0).state_dict()
    assert not any(isinstance(v, torch.Tensor) for v in probe.values()), probe
    return {"lr_schedulers": names}


def _allow_capturable_on_meta():
    """capturable=True asserts the parameters are on a device with graph capture; the probe lets
    meta pass that check so the placement of the state can be read."""
    import importlib
    import pkgutil

    import torch.optim as optim

    for info in pkgutil.iter_modules(optim.__path__):
        mod = importlib.import_module(f"torch.optim.{info.name}")
        f = getattr(mod, "_get_capturable_supported_devices", None)
        if f is not None and not getattr(f, "_probe", False):
            def patched(supports_xla: bool = True, _f=f):
                return [*_f(supports_xla), "meta"]
            patched._probe = True
            setattr(mod, "_get_capturable_supported_devices", patched)


def _state_devices(cls, kw) -> dict | str:
    _allow_capturable_on_meta()
    p = torch.nn.Parameter(torch.zeros(2, 2, device="meta"))
    p.grad = torch.zeros(2, 2, device="meta")
    try:
        opt = cls([p], **kw)
        opt.step(lambda: torch.zeros((), device="meta")) if cls.__name__ == "LBFGS" else opt.step()
    except Exception as e:  # noqa: BLE001
        return f"not stepped: {type(e).__name__}"
    st = opt.state.get(p, {})
    return {k: ("param" if v.device.type == "meta" else v.device.type) for k, v in st.items() if torch.is_tensor(v)}


def tensor_methods(methods) -> dict:
    """Tensor methods by what they return: non-tensors, a tensor on another device (they take
    device=, or called on a meta tensor they return one elsewhere), or a tensor on the receiver's."""
    non_tensor, moving, same = [], [], []
    t = torch.zeros(2, device="meta")
    for name, os_ in sorted(methods.items()):
        if name.startswith("__") or name.startswith("_"):
            continue
        rets = [o.returns for o in os_]
        if not any(pyi.mentions_tensor(r) or r.startswith("torch.return_types.") for r in rets):
            non_tensor.append(name)
            continue
        if any(p == "device" for o in os_ for p, _ in o.params):
            moving.append(name)
            continue
        if any(len(o.params) == 1 and pyi.is_tensor_annotation(o.params[0][1]) for o in os_):
            try:  # follows its tensor argument's device (type_as)
                r = getattr(t, name)(torch.zeros(2))
                if torch.is_tensor(r) and r.device.type == "cpu":
                    moving.append(name)
                    continue
            except Exception:  # noqa: BLE001
                pass
        if all(not o.params for o in os_) and pyi.is_tensor_annotation(rets[0]):
            try:
                r = getattr(t, name)()
                if torch.is_tensor(r) and r.device.type != "meta":
                    moving.append(name)
                    continue
            except Exception:  # noqa: BLE001
                pass
        same.append(name)
    in_place = sorted(n for n in same if re.fullmatch(r"[a-z0-9_]+[a-z0-9]_", n)
                      and any(not any(pyi.mentions_tensor(t_) for _, t_ in o.params) for o in methods[n]))
    return {"non_tensor_methods": non_tensor, "device_moving_methods": moving, "same_device_methods": same,
            "in_place_fill_methods": in_place}


def sequence_ops(funcs) -> list[str]:
    """Public functions whose first argument is a sequence of tensors (or *tensors): every tensor in
    it must be on one device."""
    import torch.functional as tf

    native = _native_returns()

    out = {n for n, os_ in funcs.items() if not n.startswith("_") and any(
        pyi.is_tensor_annotation(o.returns) and (any(pyi.tensor_sequence(t) for _, t in o.params)
                                                 or (o.varargs and pyi.mentions_tensor(o.varargs[1])))
        for o in os_)}
    for n in getattr(tf, "__all__", []):  # python-level ops taking *tensors
        f = getattr(tf, n, None)
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):
            continue
        ps = list(sig.parameters.values())
        ret = sig.return_annotation
        if ps and ps[0].kind == ps[0].VAR_POSITIONAL and (ret is torch.Tensor or ret == "Tensor"
                                                           or (ret is sig.empty and native.get(n) == "Tensor")):
            out.add(n)
    return sorted(out)


def _native_returns() -> dict[str, str]:
    """Return type of each native function's overloads that take a `Tensor[]`, from torchgen's
    packaged native_functions.yaml ("Tensor" only when every such overload returns one tensor)."""
    import torchgen

    path = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    out: dict[str, str] = {}
    for m in re.finditer(r"^- func: ([A-Za-z0-9_]+)(?:\.[A-Za-z0-9_]+)?\((.*)\) -> (.+)$", path.read_text(), re.M):
        name, args, ret = m.group(1), m.group(2), m.group(3).strip()
        if "Tensor[]" in args:
            out[name] = ret if out.get(name, ret) == ret else "mixed"
    return out


def non_tensor_functions(funcs) -> list[str]:
    """Public torch callables that never return a tensor (classes, submodules, functions whose
    every overload returns something else): not tensor ops, so never checked for mixing."""
    out = set()
    for n in dir(torch):
        if n.startswith("_"):
            continue
        obj = getattr(torch, n)
        if inspect.ismodule(obj) or inspect.isclass(obj):
            out.add(n)
        elif n in funcs and not any(pyi.mentions_tensor(o.returns) or o.returns.startswith("torch.return_types.")
                                    for o in funcs[n]):
            out.add(n)
    import torch.nn.utils.rnn as rnn

    for mod in (torch, torch.serialization, rnn):  # python-level functions, by their annotations
        for n in getattr(mod, "__all__", dir(mod)):
            f = getattr(mod, n, None)
            if n.startswith("_") or not inspect.isfunction(f) or n in funcs:
                continue
            ret = inspect.signature(f).return_annotation
            text = ret if isinstance(ret, str) else repr(ret)  # tuple[torch.Tensor, ...] keeps its args
            predicate = str(text).split("[")[0].rsplit(".", 1)[-1] in ("TypeIs", "TypeGuard")  # -> bool
            if ret is not inspect.Signature.empty and ("Tensor" not in str(text) or predicate):
                out.add(n)
    return sorted(out)


def mixed_device_ops(funcs, methods) -> dict:
    """Ops that take tensors on different devices without a check, probed with a fake cuda tensor
    next to a real-shaped cpu one (FakeTensorMode applies CUDA's device rules): methods whose tensor
    argument gives only its shape (`a.expand_as(b)`), and functions on several tensors that return
    one per input, each left where it was (`torch.broadcast_tensors`)."""
    import logging

    from torch._subclasses.fake_tensor import FakeTensorMode

    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    shape_args, per_input = [], []
    with FakeTensorMode():
        for name, os_ in sorted(methods.items()):
            if name.startswith("_") or not any(len(o.params) == 1 and pyi.is_tensor_annotation(o.params[0][1])
                                               for o in os_):
                continue
            try:
                r = getattr(torch.zeros(2, 3, device="cuda"), name)(torch.zeros(2, 3))
            except Exception:  # noqa: BLE001
                continue
            if torch.is_tensor(r) and r.device.type == "cuda":
                shape_args.append(name)
        import torch.functional as tf

        for name in sorted(set(sequence_ops(funcs)) | set(getattr(tf, "__all__", []))):
            f = getattr(torch, name, None)
            if not callable(f):
                continue
            try:
                r = f(torch.zeros(2, 3, device="cuda"), torch.zeros(2, 3))
            except Exception:  # noqa: BLE001
                continue
            if isinstance(r, (tuple, list)) and len(r) == 2 and all(torch.is_tensor(x) for x in r) \
                    and (r[0].device.type, r[1].device.type) == ("cuda", "cpu"):
                per_input.append(name)
    return {"shape_argument_methods": shape_args, "per_input_functions": per_input}


def generate() -> dict:
    funcs, methods = _stubs()
    tables: dict = {}
    tables.update(factories(funcs))
    tables["legacy_cpu_types"] = legacy_types()
    tables.update(cpu_result_functions(funcs, set(tables["factories"])))
    tables.update(loaders())
    tables.update(nn_modules())
    tables.update(optimizers())
    tables.update(lr_schedulers())
    tables.update(tensor_methods(methods))
    tables["sequence_ops"] = sequence_ops(funcs)
    tables["non_tensor_functions"] = non_tensor_functions(funcs)
    tables.update(mixed_device_ops(funcs, methods))
    return tables
