"""The bases of a project class, walked through its project bases (a class read by the index)."""

from __future__ import annotations


def any_base(info, index, holds, seen=None) -> bool:
    """Whether `holds(qualified_name, resolved)` is true of a base of the project class `info` or of its project
    bases; `resolved`: the base is a project class the index found."""
    seen = seen if seen is not None else set()
    if id(info) in seen:
        return False
    seen.add(id(info))
    resolved = {b.name for b in info.base_infos}
    if any(holds((info.home or index).qualify(b), b.rsplit(".", 1)[-1] in resolved) for b in info.bases):
        return True
    return any(any_base(b, index, holds, seen) for b in info.base_infos)


def unresolved_base(info, index) -> bool:
    """A project class with a base class that is neither a project class nor a builtin / torch one."""
    return any_base(info, index, lambda q, resolved: not resolved and
                    not q.startswith(("builtins.", "torch.", "object", "typing.", "abc.")))
