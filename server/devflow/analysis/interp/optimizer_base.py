"""What `torch.optim.Optimizer.__init__(params, defaults)` leaves on a project optimizer (`class Prodigy(Optimizer)`,
its `super().__init__(params, defaults)`), so that the optimizer's own `step()` runs over known values:

- `self.param_groups`: one group per dict given (`[{"params": ..., "lr": ...}]`), else one group of all the
  parameters; each group holds the defaults under the keys it does not set itself. `group["params"]` iterates
  the parameters on their module's device at the time of the loop (the module may move after the optimizer
  was made).
- `self.state`: per-parameter state, empty until a step fills it (`state = self.state[p]`; `if len(state) == 0:
  state["exp_avg"] = torch.zeros(p.shape)`), so a state tensor made without `device=` meets the parameters in
  the step that made it.
- `self.defaults`: the defaults given.

While the optimizer's own `__init__` runs, `group["params"]` is not known: what `__init__` makes from the
parameters (state, copies kept on `self`) is on their device of that moment, DEV304's eager state (one finding
where the optimizer is built), not a mix of its own in every later `step()`.

Parameters or defaults the analysis does not know leave these attributes unset (unknown).
"""

from __future__ import annotations

from devflow.analysis.lattice import TOP
from devflow.analysis.values import Obj, Val


def optimizer_base_init(obj: Obj, args: list, kwargs: dict) -> Val:
    params = args[0] if args else kwargs.get("params")
    defaults = args[1] if len(args) > 1 else kwargs.get("defaults")
    dflt = _dict_of(defaults)
    if params is None or dflt is None:
        return Val("const", const=None)
    groups = _groups(params, dflt)
    if groups is None:
        return Val("const", const=None)
    obj.attrs["param_groups"] = Val("obj", obj=Obj("list", items=groups))
    obj.group_params = [(g.obj, g.obj.keys.pop("params")) for g in groups]  # type: ignore[attr-defined]
    for g in groups:  # tensors on a device not known here: what `__init__` makes of them is a tensor, placed unknown
        g.obj.keys["params"] = Val("obj", obj=Obj("list"), elem=Val("tensor", TOP))
    obj.attrs["defaults"] = defaults
    state = Obj("dict")
    entry = Obj("dict")
    entry.exact = True  # type: ignore[attr-defined]  # a parameter's state before its first step
    obj.attrs["state"] = Val("obj", obj=state, elem=Val("obj", obj=entry))
    return Val("const", const=None)


def optimizer_built(obj: Obj) -> None:
    """The project optimizer's `__init__` has returned: its groups hold their parameters from now on. State its
    `__init__` made (`self.state[p]["avg"] = torch.zeros(p.shape)`) is DEV304's eager state: the step reads it
    as unknown."""
    for g, params in getattr(obj, "group_params", ()):
        g.keys["params"] = params
    obj.group_params = ()  # type: ignore[attr-defined]
    st = obj.attrs.get("state")
    if st is not None and st.elem is not None and st.elem.obj is not None and st.elem.obj.keys:
        obj.init_state = dict(st.elem.obj.keys)  # type: ignore[attr-defined]  # what a checkpoint saves of it
        obj.attrs["state"] = Val("obj", obj=Obj("dict"))


def _dict_of(v: Val | None) -> Obj | None:
    """A dict whose keys are all known."""
    if v is None or v.kind != "obj" or v.obj is None or v.obj.kind != "dict" or not getattr(v.obj, "exact", False):
        return None
    return v.obj


def _groups(params: Val, defaults: Obj) -> list | None:
    given = params.obj.items if params.kind == "obj" and params.obj is not None and params.obj.kind in ("list", "tuple") \
        and params.elem is None else None
    dicts = [_dict_of(g) for g in given or ()]
    if given and None not in dicts:
        return [_group(d.keys, defaults) for d in dicts]  # type: ignore[union-attr]
    if params.kind == "params" or given is not None and all(g.kind == "tensor" for g in given):
        return [_group({"params": params}, defaults)]
    return None


def _group(keys: dict, defaults: Obj) -> Val:
    g = Obj("dict")
    g.keys = {**defaults.keys, **keys}
    g.exact = True  # type: ignore[attr-defined]
    return Val("obj", obj=g)

