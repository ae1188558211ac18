"""Tables about small libraries that sit between the user's tensors (-> devflow/knowledge/frameworks.json):

- shape libraries (einops): the public functions whose tensor results stay on their tensor
  arguments' device. einops is pure Python, so its pinned wheel is imported from the zip (never
  installed) and every function is called on meta tensors; a function is listed only when the probe
  shows every tensor it returns on the input's device;
- tokenizers (tiktoken): the constructors that return an `Encoding`, and the `Encoding` methods that
  return Python ints (`-> list[int]` / `-> int` in the wheel's own annotations, an ast scan: tiktoken
  has a compiled core and is never imported). `torch.tensor()` of such ids is a cpu tensor.
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path

# How each einops function is called in the probe (its documented calling convention); a function
# of einops.__all__ without an entry here is not listed, so it stays unknown to the engine.
EINOPS_PROBES = {
    "rearrange": lambda e, x: e.rearrange(x, "b c h w -> b (h w) c"),
    "repeat": lambda e, x: e.repeat(x, "b c h w -> b c h w r", r=2),
    "reduce": lambda e, x: e.reduce(x, "b c h w -> b c", "mean"),
    "einsum": lambda e, x: e.einsum(x, x, "b c h w, b c h w -> b c"),
    "pack": lambda e, x: e.pack([x, x], "b * w"),
    "unpack": lambda e, x: e.unpack(x, [(3, 4), (1, 4)], "b * w"),
}


def _tensors(value):
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def einops(wheel: Path) -> dict:
    """{"version": ..., "same_device": {qualified name: what it returns (Tensor / tuple / list)}}"""
    import torch

    sys.path.insert(0, str(wheel))
    try:
        import einops as e
    finally:
        sys.path.remove(str(wheel))
    shapes = {"unpack": (2, 16, 4)}
    same = {}
    for name in sorted(e.__all__):
        probe = EINOPS_PROBES.get(name)
        if probe is None:
            continue
        x = torch.empty(*shapes.get(name, (2, 3, 4, 5)), device="meta")
        result = probe(e, x)
        out = _tensors(result)
        if out and all(t.device == x.device for t in out):
            same[f"einops.{name}"] = type(result).__name__
    return {"version": e.__version__, "same_device": same, "probed_on": "meta"}


def _annotation_is_ints(a: ast.expr | None) -> bool:
    """`int`, `list[int]`, `list[list[int]]` (also typing's List / Sequence spellings)."""
    if a is None:
        return False
    text = ast.unparse(a).replace("typing.", "").replace(" ", "")
    while "[" in text and text.split("[", 1)[0] in ("list", "List", "Sequence") and text.endswith("]"):
        text = text.split("[", 1)[1][:-1]
    return text == "int"


def tiktoken(wheel: Path) -> dict:
    """{"constructors": [...], "class": "tiktoken.Encoding", "int_methods": [...]}"""
    constructors, int_methods = set(), set()
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if not (name.startswith("tiktoken/") and name.endswith(".py")) or "/_" in name:
                continue
            tree = ast.parse(z.read(name).decode("utf-8", "replace"))
            for n in tree.body:
                if isinstance(n, ast.FunctionDef) and not n.name.startswith("_") and n.returns is not None \
                        and ast.unparse(n.returns).strip("'\"").endswith("Encoding"):
                    constructors.add(f"tiktoken.{n.name}")
                if isinstance(n, ast.ClassDef) and n.name == "Encoding":
                    for f in n.body:
                        if isinstance(f, ast.FunctionDef) and not f.name.startswith("_") and _annotation_is_ints(f.returns):
                            int_methods.add(f.name)
    return {"constructors": sorted(constructors), "class": "tiktoken.Encoding", "int_methods": sorted(int_methods)}
