"""unittest as the framework that runs a test class: the loader collects every method of a
`unittest.TestCase` subclass whose name starts with its method prefix, and the runner calls `setUp()`
on a fresh instance before each of them. Such a method is an entry point whose calls are followed,
with `self` as setUp left it (`self.model_tester = CTRLModelTester(self)`), like a top-level `main()`.

The facts come from the running interpreter's own unittest (the names TestCase is exported under,
the loader's prefix), not from a list written here.
"""

from __future__ import annotations

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


class UnittestEntries:
    def is_test_method(self, fn, owner) -> bool:
        """A method the unittest runner calls on its own (`def test_ctrl_model(self)` of a TestCase)."""
        return fn.name.startswith(TEST_METHOD_PREFIX) and not owner.is_module \
            and any(q in TEST_CASE_CLASSES for q in class_bases(owner))

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
