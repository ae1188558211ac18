"""Parameters declared as numpy arrays.

A parameter annotated `np.ndarray` (or `np.array`, as code often writes it, or `numpy.typing.NDArray[...]`),
alone or `Optional` / `| None`, is declared to receive numpy data: host memory, never a device tensor. When
the argument a call gives it is not known (an array from pandas or scikit-learn, or no caller at all), the
parameter is taken for host data, so `torch.tensor(arr)` / `torch.from_numpy(arr)` of it is a cpu tensor
(`def create_datasets(train_data: np.array): return TensorDataset(torch.tensor(train_data).float(), ...)`).
A known argument keeps its own value, and a union with any other type (`np.ndarray | torch.Tensor`) says
nothing."""

from __future__ import annotations

import ast

NUMPY_ARRAY_TYPES = frozenset({"numpy.ndarray", "numpy.array", "numpy.typing.NDArray"})


def _declared(ann: ast.expr | None) -> ast.expr | None:
    """The annotation without its `Optional[...]` / `| None` wrapper; a string annotation parsed."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        sides = [s for s in (ann.left, ann.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        return _declared(sides[0]) if len(sides) == 1 else None
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, (ast.Name, ast.Attribute)) \
            and (ann.value.id if isinstance(ann.value, ast.Name) else ann.value.attr) == "Optional":
        return _declared(ann.slice)
    if isinstance(ann, ast.Subscript):  # `NDArray[np.float32]`: the generic alias itself
        return ann.value
    return ann


def numpy_declared(interp, arg: ast.arg, frame) -> bool:
    """Whether `arg` is annotated as a numpy array, its names resolved in `frame` (the function's module)."""
    ann = _declared(arg.annotation)
    return isinstance(ann, (ast.Name, ast.Attribute)) and interp.qualname(ann, frame) in NUMPY_ARRAY_TYPES
