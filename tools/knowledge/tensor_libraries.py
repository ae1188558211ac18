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


def _alternatives(a: ast.expr) -> list[ast.expr]:
    """`int | list[int]` and `Union[int, List[int]]` -> their alternatives; anything else -> itself."""
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitOr):
        return _alternatives(a.left) + _alternatives(a.right)
    if isinstance(a, ast.Subscript) and ast.unparse(a.value).replace("typing.", "") == "Union":
        elts = a.slice.elts if isinstance(a.slice, ast.Tuple) else [a.slice]
        return [x for e in elts for x in _alternatives(e)]
    return [a]


def hf_tokenizer_int_methods(wheel: Path) -> dict:
    """transformers' tokenizer methods that give Python ints, by their return annotations in the base tokenizer
    modules (`tokenization_utils*.py`): "list" when the result is a list of ints (`encode`,
    `get_special_tokens_mask`), "int_or_list" when an int or a list of them (`convert_tokens_to_ids`: an int
    for one token, a list for a list of tokens). A tensor made of either is on the cpu. Properties are left out."""
    found: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if not name.startswith("transformers/tokenization_utils") or not name.endswith(".py"):
                continue
            for cls in ast.parse(z.read(name).decode("utf-8", "replace")).body:
                if not isinstance(cls, ast.ClassDef):
                    continue
                for f in cls.body:
                    if not isinstance(f, ast.FunctionDef) or f.name.startswith("_") or f.returns is None or \
                            any(ast.unparse(d) == "property" or ast.unparse(d).endswith(".setter") for d in f.decorator_list):
                        continue
                    alts = _alternatives(f.returns)
                    if not all(_annotation_is_ints(x) for x in alts) or all(ast.unparse(x) == "int" for x in alts):
                        continue
                    kind = "list" if all(ast.unparse(x) != "int" for x in alts) else "int_or_list"
                    if found.get(f.name, kind) != kind:
                        kind = "int_or_list"
                    found[f.name] = kind
    return dict(sorted(found.items()))


# ---------------------------------------------------------------- batch iterators taking device=

def _uses_self_device(call: ast.Call) -> bool:
    return any(ast.unparse(a) == "self.device" for a in list(call.args) + [k.value for k in call.keywords])


def _init_stores_device(f: ast.FunctionDef) -> bool:
    """`self.device = device` (after normalising it) in __init__."""
    return any(isinstance(n, ast.Assign) and any(ast.unparse(t) == "self.device" for t in n.targets)
               and ast.unparse(n.value) == "device" for n in ast.walk(f))


def _batch_class(cls: ast.ClassDef) -> dict | None:
    """A class whose __init__(..., device) sets each field as an attribute built with device=device
    (`setattr(self, name, field.process(batch, device=device))`); its other attributes are not fields."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None or "device" not in [a.arg for a in init.args.args]:
        return None
    setters = [n for n in ast.walk(init) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr"]
    if not setters or not all(len(s.args) == 3 and isinstance(s.args[2], ast.Call) and any(
            k.arg == "device" and ast.unparse(k.value) == "device" for k in s.args[2].keywords) for s in setters):
        return None
    others = {t.attr for n in ast.walk(cls) if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in ("self", "batch")}
    others |= {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
    return {"class": cls.name, "not_fields": sorted(others)}


def device_iterators(wheel: Path) -> dict:
    """Iterator classes (torchtext's legacy Iterator / BucketIterator) that take `device=`, store it,
    and yield batch objects built with it whose every field is a tensor (or a (tensor, lengths) tuple)
    on that device. Read from the wheel's source (never imported): {qualified name: {param, position,
    default, splits, batch}}, and per batch class the attributes that are not fields."""
    trees = {}
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if name.endswith(".py") and ".dist-info/" not in name:
                try:
                    trees[name[:-3].replace("/", ".")] = ast.parse(z.read(name).decode("utf-8", "replace"))
                except SyntaxError:
                    continue
    batch_classes = {}
    for mod, tree in trees.items():
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            b = _batch_class(cls)
            if b is not None:
                batch_classes[cls.name] = b
    out = {}
    for mod, tree in trees.items():
        classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}

        def member(cls, name, seen=()):
            f = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == name), None)
            if f is not None:
                return f
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                    found = member(classes[base.id], name, seen + (cls.name,))
                    if found is not None:
                        return found
            return None

        for cls in classes.values():
            init, it = member(cls, "__init__"), member(cls, "__iter__")
            if init is None or it is None or not _init_stores_device(init):
                continue
            yields = [n.value for n in ast.walk(it) if isinstance(n, ast.Yield) and isinstance(n.value, ast.Call)]
            made = [y for y in yields if isinstance(y.func, ast.Name) and y.func.id in batch_classes and _uses_self_device(y)]
            if not yields or len(made) != len(yields):
                continue
            params = [a.arg for a in init.args.args][1:]
            if "device" not in params:
                continue
            has, default = _default(init, "device")
            normalised = any(isinstance(n, ast.Compare) and ast.unparse(n) == "device is None" for n in ast.walk(init)) \
                and any("torch.device('cpu')" in ast.unparse(n) or 'torch.device("cpu")' in ast.unparse(n) for n in ast.walk(init))
            splits = member(cls, "splits")
            forwards = splits is not None and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "cls"
                                                  and any(k.arg is None and ast.unparse(k.value) == "kwargs" for k in n.keywords)
                                                  for n in ast.walk(splits))
            entry = {"param": "device", "position": params.index("device"),
                     "default": "cpu" if default is None and normalised else default,
                     "splits": "splits" if forwards else None, "batch": made[0].func.id}
            out[f"{mod}.{cls.name}"] = entry
    # the package re-exports (`from .iterator import BucketIterator` in torchtext/legacy/data/__init__.py)
    for mod, tree in trees.items():
        if not mod.endswith(".__init__"):
            continue
        pkg = mod[: -len(".__init__")]
        for n in tree.body:
            if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module:
                for a in n.names:
                    q = f"{pkg}.{n.module}.{a.name}"
                    if q in out:
                        out[f"{pkg}.{a.asname or a.name}"] = out[q]
    used = {e["batch"] for e in out.values()}
    return {"iterators": dict(sorted(out.items())),
            "batches": {k: v["not_fields"] for k, v in sorted(batch_classes.items()) if k in used}}


def _default(f: ast.FunctionDef, name: str):
    pos = f.args.args
    defaults = [None] * (len(pos) - len(f.args.defaults)) + list(f.args.defaults)
    for p, d in zip(pos, defaults):
        if p.arg == name:
            return True, (d.value if isinstance(d, ast.Constant) else ast.unparse(d) if d is not None else "<required>")
    return False, None
