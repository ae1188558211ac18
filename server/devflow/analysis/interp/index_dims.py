"""The dimensions an indexing result is known to have."""
import ast


def added_dims(sl: ast.expr) -> int:
    """`a[:, None]` keeps one dimension per slice and adds one per None, so the result has at least that many
    (0: not known). Ints drop dimensions and an Ellipsis keeps an unknown number, which only adds to the count."""
    parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    if not any(isinstance(p, ast.Constant) and p.value is None for p in parts):
        return 0  # no dimension added: what is left depends on the shape, not known here
    return sum(1 for p in parts if isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value is None))
