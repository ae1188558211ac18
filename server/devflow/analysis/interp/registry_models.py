"""Models built through a registry whose key is known only at run time (`load_model[args.model_name](...)`).

Two entries alike (project modules on the same device) stand for each other (`join_paths`). Entries placed
differently leave unknown where the model is and which one runs, so nothing is said about what the caller hands
the model. But each entry is a model the program may run: its own forward, with its own state, is still the
project's code. They stay a choice whose call runs each entry on inputs blurred to unknown: only a mix between
a model's own parts (graphprompter's `GraphLLM` embedding its pad token id, a cpu `torch.tensor(id)`, with the
input embeddings of a `device_map` LLaMA) is reported."""
from __future__ import annotations

from devflow.analysis.interp.frames import MAX_CHOICES
from devflow.analysis.values import UNKNOWN, Obj, Val


def _project_module(v: Val) -> bool:
    return v.kind == "module" and v.obj is not None and v.obj.cls is not None and not v.obj.dispatched


def registry_models(a: Val, b: Val, join_paths) -> Val:
    """The join of two registry entries' results: `join_paths`, unless it would blur two unlike project
    models into one, then a choice of them whose calls see unknown inputs."""
    joined = join_paths(a, b)
    items = [i for v in (a, b) for i in (v.obj.items if blind_choice(v) else [v])]
    if joined.kind == "module" and any(joined.obj is i.obj for i in items):
        return joined  # alike: one stands for the others
    if not all(_project_module(i) for i in items):
        return joined
    uniq = [v for n, v in enumerate(items) if not any(v.obj is u.obj for u in items[:n])]
    if not 1 < len(uniq) <= MAX_CHOICES:
        return joined
    choice = Obj("choice", items=uniq)
    choice.blind_inputs = True  # type: ignore[attr-defined]
    return Val("obj", obj=choice)


def blind_choice(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind == "choice" and getattr(v.obj, "blind_inputs", False)


def blurred(args: list, kwargs: dict) -> tuple[list, dict]:
    """What a model of a blind choice is called with: inputs whose placement says nothing."""
    return [UNKNOWN for _ in args], {k: UNKNOWN for k in kwargs}
