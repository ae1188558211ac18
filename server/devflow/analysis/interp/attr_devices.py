"""A device attribute chosen by an `if`: `if args.disable_cuda: args.device = "cpu"`.

The statement form of `"cpu" if args.disable_cuda else args.device`, on an attribute: on the path where the
test is false the attribute keeps the accelerator it held (the command line's `--device` default "cuda",
a config's device), on the other it is the cpu. After the `if` it is the accelerator that test picks,
never the cpu on a GPU run, as for a name (`_device_chosen_on_branches`): one device for everything placed
on it. Attributes live on shared objects, so the interpreter keeps the value written last; without this
the cpu written on the opt-out branch would stand for both paths.
"""

from __future__ import annotations

from devflow.analysis.lattice import Dev
from devflow.analysis.values import Origin, Val
from devflow.analysis.interp.expressions import _chosen_device
from devflow.analysis.interp.frames import span_of


def _path_values(writes: list) -> dict:
    """(id(obj), attr) -> (obj, attr, value before the branch, value the branch leaves)."""
    out: dict = {}
    for obj, name, val, prior in writes:
        key = (id(obj), name)
        first = out.get(key)
        out[key] = (obj, name, prior if first is None else first[2], val)
    return out


def _accelerator(d: Dev) -> bool:
    return d.kind == "cuda" or d.kind == "sym" and d.accel


def device_attrs_chosen_on_branches(st, body_writes: list, else_writes: list, test_text: str) -> None:
    """After an `if` whose branches both go on: a device attribute that is the cpu on one path and an
    accelerator on the other holds the accelerator the test picks."""
    body, other = _path_values(body_writes), _path_values(else_writes)
    for key in {*body, *other}:
        b, e = body.get(key), other.get(key)
        obj, name = (b or e)[0], (b or e)[1]
        prior = (b or e)[2]
        on_body, on_else = (b[3] if b else prior), (e[3] if e else prior)
        if on_body is None or on_else is None or obj.attrs.get(name) is not (on_else if e else on_body):
            continue  # something else wrote it since (or it never held a value before)
        da, db = _chosen_device(on_body), _chosen_device(on_else)
        if da is None or db is None:
            continue
        gpu = db if da.is_cpu else da if db.is_cpu else None
        if gpu is None or not _accelerator(gpu):
            continue
        text = gpu.text if gpu.kind == "sym" and gpu.text else name
        chosen = Dev("sym", key=("if-device", id(st), name), text=text, accel=True)
        obj.attrs[name] = Val("device", chosen, Origin(span_of(st.test), f"chosen by `{test_text}` at line {st.lineno}"))
