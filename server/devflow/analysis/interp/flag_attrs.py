"""A boolean attribute an `if` sets on one path only holds either value after the `if`.

Attribute writes on a branch otherwise keep the value written last (a module or tensor set on one branch is
what the rest of the program uses, so its bugs are still found). For a flag that rule invents a fact:
`self.cpu = cpu` then `if cuda and not self.cpu: ... else: self.cpu = True` would leave `self.cpu` the
constant True, and every later `x if self.cpu else self.device` would take its cpu side on every run. After
the `if` the flag is True on one path and whatever it was on the other: not known, unless both paths agree.
"""

from __future__ import annotations

from devflow.analysis.values import UNKNOWN, Val


def _is_flag(v: Val | None) -> bool:
    return v is not None and v.kind == "const" and isinstance(v.const, bool)


def blur_flags_set_on_one_path(body_writes: list, else_writes: list, first_new: int) -> None:
    """After an `if` whose branches both go on: a bool attribute whose value differs between the two paths
    (written on one only, or to different values) is unknown. `*_writes` hold (obj, name, value, prior)
    in the order the branch wrote them; the else branch runs on what the body wrote. Objects made inside
    the `if` (`seq` after `first_new`) exist on their own path only: their attributes are as written."""
    before: dict = {}
    for obj, name, _v, prior in [*body_writes, *else_writes]:
        if obj.seq <= first_new:
            before.setdefault((id(obj), name), (obj, prior))  # the value before the `if`: the first write's prior
    last_body = {(id(o), n): v for o, n, v, _ in body_writes}
    last_else = {(id(o), n): v for o, n, v, _ in else_writes}
    for key, (obj, prior) in before.items():
        on_body = last_body.get(key, prior)
        on_else = last_else.get(key, prior)
        if not (_is_flag(on_body) or _is_flag(on_else)):
            continue
        if _is_flag(on_body) and _is_flag(on_else) and on_body.const == on_else.const:
            continue
        current = obj.attrs.get(key[1])
        if current is not None and _is_flag(current) and current in (on_body, on_else):
            obj.attrs[key[1]] = UNKNOWN
