"""unittest as the framework that runs a test class: the loader collects every method of a
`unittest.TestCase` subclass whose name starts with its method prefix, and the runner calls `setUp()`
on a fresh instance before each of them. Such a method is an entry point whose calls are followed,
with `self` as setUp left it (`self.model_tester = CTRLModelTester(self)`), like a top-level `main()`.

Class-level fixtures are not modelled (what `setUpClass` stores on `cls`, class-body attributes): a test
that may read them (its class or a project base has setUpClass, or the test reads a class-body attribute
as `self.name`) stays on its own, calls not followed, since that state would be unknown and an unknown
device passed down reads as "the device" of the program.

The facts come from the running interpreter's own unittest (the names TestCase is exported under,
the loader's prefix), not from a list written here.
"""

from __future__ import annotations

import ast
import unittest

from devflow.analysis.values import UNKNOWN
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


def _class_state(info, seen=None) -> tuple[bool, set[str]]:
    """Whether the class or a project base defines setUpClass, and the attribute names their bodies assign."""
    seen = seen if seen is not None else set()
    if id(info) in seen:
        return False, set()
    seen.add(id(info))
    names: set[str] = set()
    for st in info.node.body:
        targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, (ast.AnnAssign, ast.AugAssign)) else []
        names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    set_up_class = SET_UP_CLASS in info.methods
    for b in info.base_infos:
        b_set_up, b_names = _class_state(b, seen)
        set_up_class, names = set_up_class or b_set_up, names | b_names
    return set_up_class, names


def _reads_class_state(fn, owner) -> bool:
    """A test that may read class-level fixtures: the class has setUpClass, or the test reads `self.<name>`
    of a class-body attribute (`self.a_cpu_device`; not `self.model_tester`, which setUp sets)."""
    set_up_class, names = _class_state(owner)
    return set_up_class or any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
                               and n.attr in names for n in ast.walk(fn))


class UnittestEntries:
    def is_test_method(self, fn, owner) -> bool:
        """A method the unittest runner calls on its own (`def test_ctrl_model(self)` of a TestCase)."""
        return fn.name.startswith(TEST_METHOD_PREFIX) and not owner.is_module \
            and any(q in TEST_CASE_CLASSES for q in class_bases(owner)) and not _reads_class_state(fn, owner)

    def test_method_args(self, owner, self_val, fn) -> list:
        """Run the class's setUp() on `self` (what it stores is what the test sees); the test takes no
        other argument from the runner."""
        self.run_own_method(owner, self_val, SET_UP)
        return [UNKNOWN] * (len(fn.args.posonlyargs + fn.args.args) - 1)

    def expects_raise(self, ctx, frame) -> bool:
        """`with self.assertRaises(RuntimeError):` in a method of a TestCase: its body is meant to fail."""
        owner = frame.owner
        return isinstance(ctx, ast.Call) and isinstance(ctx.func, ast.Attribute) and ctx.func.attr in EXPECTS_RAISE \
            and isinstance(ctx.func.value, ast.Name) and ctx.func.value.id == "self" \
            and owner is not None and any(q in TEST_CASE_CLASSES for q in class_bases(owner))
