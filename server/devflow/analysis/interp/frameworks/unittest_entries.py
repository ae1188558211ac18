"""unittest as the framework that runs a test class: the loader collects every method of a
`unittest.TestCase` subclass whose name starts with its method prefix, and the runner calls `setUp()`
on a fresh instance before each of them. Such a method is an entry point whose calls are followed,
with `self` as setUp left it (`self.model_tester = CTRLModelTester(self)`), like a top-level `main()`.

Class-level fixtures are not modelled (what `setUpClass` stores on `cls`, class-body attributes): a test
class that has them (itself or a project base) keeps its tests on their own, calls not followed, since the
state they read (`self.a_cpu_device`) would be unknown and an unknown device passed down reads as "the
device" of the program.

The facts come from the running interpreter's own unittest (the names TestCase is exported under,
the loader's prefix), not from a list written here.
"""

from __future__ import annotations

import ast
import unittest

from devflow.analysis.values import UNKNOWN
from devflow.analysis.interp.frames import FuncRef
from devflow.analysis.interp.frameworks.entries import class_bases


def _exported_names(cls) -> frozenset[str]:
    """The qualified names a program may write for `cls`: `unittest.TestCase`, `unittest.case.TestCase`."""
    names = {f"{cls.__module__}.{cls.__qualname__}"}
    names.update(f"unittest.{n}" for n in dir(unittest) if getattr(unittest, n, None) is cls)
    return frozenset(names)


TEST_CASE_CLASSES = _exported_names(unittest.TestCase)
TEST_METHOD_PREFIX = unittest.TestLoader.testMethodPrefix  # "test"
SET_UP = unittest.TestCase.setUp.__name__  # "setUp"
SET_UP_CLASS = unittest.TestCase.setUpClass.__name__  # "setUpClass"
# `with self.assertRaises(E):` / `assertRaisesRegex`: the context manager expects its body to raise and
# swallows the error, so what fails in the body is what the test asserts, not a bug
EXPECTS_RAISE = frozenset(n for n in dir(unittest.TestCase) if n.startswith("assertRaises"))


def _has_class_state(info, seen=None) -> bool:
    """Whether the class or a project base defines setUpClass or assigns class attributes in its body."""
    seen = seen if seen is not None else set()
    if id(info) in seen:
        return False
    seen.add(id(info))
    if SET_UP_CLASS in info.methods or any(isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) for st in info.node.body):
        return True
    return any(_has_class_state(b, seen) for b in info.base_infos)


class UnittestEntries:
    def is_test_method(self, fn, owner) -> bool:
        """A method the unittest runner calls on its own (`def test_ctrl_model(self)` of a TestCase)."""
        return fn.name.startswith(TEST_METHOD_PREFIX) and not owner.is_module \
            and any(q in TEST_CASE_CLASSES for q in class_bases(owner)) and not _has_class_state(owner)

    def test_method_args(self, owner, self_val, fn) -> list:
        """Run the class's setUp() on `self` (what it stores is what the test sees); the test takes no
        other argument from the runner."""
        found = owner.method(SET_UP)
        if found is not None:
            setup, cls = found
            n = len(setup.args.posonlyargs + setup.args.args) - 1
            saved, self.standalone = self.standalone, False
            try:
                self.call_function(FuncRef(setup, None, cls, "method"), [UNKNOWN] * n, {}, self_val, None)
            finally:
                self.standalone = saved
        return [UNKNOWN] * (len(fn.args.posonlyargs + fn.args.args) - 1)

    def expects_raise(self, ctx, frame) -> bool:
        """`with self.assertRaises(RuntimeError):` in a method of a TestCase: its body is meant to fail."""
        owner = frame.owner
        return isinstance(ctx, ast.Call) and isinstance(ctx.func, ast.Attribute) and ctx.func.attr in EXPECTS_RAISE \
            and isinstance(ctx.func.value, ast.Name) and ctx.func.value.id == "self" \
            and owner is not None and any(q in TEST_CASE_CLASSES for q in class_bases(owner))
