"""Devices configured from the environment, on the same terms as a command-line option (`--device` whose
default names an accelerator is that option's symbolic accelerator, by its default's value, never its name):

- `os.getenv("CUDA_CORE", "cuda:0")`, `os.environ.get("DEV", "cuda")`, `os.getenv("DEV") or "cuda"`, and the
  statement form `core = os.getenv("CUDA_CORE"); if core is None or core == "": core = "cuda:0"`: the
  variable's symbolic accelerator (its default, the GPU it names when it names one);
- a name holding a string that is no device (`cuda_core = ""`, a placeholder) on one path and an accelerator
  on the other: wherever it serves as a device it is the accelerator (`torch.device("")` raises, so the
  placeholder never gets that far). `None` is not such a placeholder: `.to(None)` keeps a tensor where it is.

Any other environment read is unknown; a marker (`Val("unknown", const=("env", name))`) lets a later join
with its default recognise it."""

from __future__ import annotations

from devflow.analysis.lattice import Dev, concrete
from devflow.analysis.values import Origin, Val


def env_read(key: Val, default: Val | None, origin: Origin) -> Val | None:
    """`os.getenv(key[, default])`: the variable's accelerator when the default names one, else the marker of
    an unknown read of that variable. None when the key is not a known string."""
    if key.kind != "const" or not isinstance(key.const, str):
        return None
    read = Val("unknown", const=("env", key.const), origin=origin)
    if default is not None:
        return configured_join(read, default) or Val("unknown")
    return read


def is_env_read(v: Val) -> bool:
    return v.kind == "unknown" and isinstance(v.const, tuple) and len(v.const) == 2 and v.const[0] == "env"


def configured_join(a: Val, b: Val) -> Val | None:
    """The value after two paths when one is an environment read (or a placeholder string) and the other an
    accelerator: that accelerator, as the environment variable's own symbolic device. None otherwise."""
    for x, y in ((a, b), (b, a)):
        gpu = _accelerator(y)
        if gpu is None:
            continue
        if is_env_read(x):
            name = x.const[1]
            return Val("device", Dev("sym", key=("env", name), text=f"${name}", accel=True, index=gpu.index),
                       x.origin or y.origin)
        if x.kind == "const" and isinstance(x.const, str) and concrete(x.const) is None:
            return y  # a placeholder that is no device: where the name serves as one, it is the accelerator
    return None


def _accelerator(v: Val) -> Dev | None:
    """The accelerator a device string / device value names (a cuda device, a symbolic accelerator)."""
    if v.kind == "const" and isinstance(v.const, str):
        d = concrete(v.const)
    elif v.kind == "device" and v.dev is not None:
        d = v.dev
    else:
        return None
    if d is None or not (d.kind == "cuda" or d.kind == "sym" and d.accel):
        return None
    return d
