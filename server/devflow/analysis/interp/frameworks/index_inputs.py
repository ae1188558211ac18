"""Inputs used only as indices. Advanced indexing accepts index tensors on the cpu for a tensor on any
device (ATen: "indices should be either on cpu or on the same device as the indexed tensor"), reading
(`h[idx]`) and writing (`h[idx] = v`) alike; so a module input that forward() only uses to index other
tensors, directly or through a basic slice of it bound to a local (`i = idx[a:b]`), never meets the
module's device as a cpu tensor. Used by the device-free input analysis (frameworks/rnn.py)."""

from __future__ import annotations

import ast


def indexes_a_tensor(u: ast.Name, parents: dict) -> bool:
    """`t[u]`, `t[u, :]` (read or write): `u` is the index, not the indexed value."""
    p = parents.get(id(u))
    if isinstance(p, ast.Tuple) and isinstance(parents.get(id(p)), ast.Subscript) and parents[id(p)].slice is p:
        return True
    return isinstance(p, ast.Subscript) and p.slice is u and p.value is not u


def sliced_into_local(u: ast.Name, parents: dict) -> str | None:
    """`i = u[a:b]`: a basic slice (a view on the same device) bound to a plain local; its name."""
    p = parents.get(id(u))
    if not (isinstance(p, ast.Subscript) and p.value is u and isinstance(p.slice, ast.Slice)):
        return None
    st = parents.get(id(p))
    if isinstance(st, ast.Assign) and st.value is p and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        return st.targets[0].id
    return None


def only_indexes(name: str, fn: ast.AST, parents: dict, depth: int = 0) -> bool:
    """Every read of the local `name` in `fn` indexes a tensor (or slices it into another such local)."""
    loads = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    if not loads or depth > 2:
        return False
    for u in loads:
        if indexes_a_tensor(u, parents):
            continue
        alias = sliced_into_local(u, parents)
        if alias is None or alias == name or not only_indexes(alias, fn, parents, depth + 1):
            return False
    return True
