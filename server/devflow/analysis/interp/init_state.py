"""A method checked on its own runs on an instance its class's `__init__` made.

Every instance of a plain class has been through `__init__`: a method nobody in the file calls
(a library's `TransformerTokenEmbedder._get_char_level_embeddings`, reached only through another
service) can be called right after construction, so it sees what `__init__` stored on `self`
whatever the caller passed. `__init__` runs on the method's own `self` first, with unknown arguments and
its calls not followed (as any standalone body): `self.model = AutoModel.from_pretrained(name)
.to(self.device)` with `self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` is on
the accelerator, while an attribute built from a parameter (`self.device = device`) stays unknown.

Only classes that are not nn.Modules (a module's `forward` on its own has "the module's device"), nor may be one (a base
this run cannot read: a library model's subclass), and only
methods that read an attribute `__init__` assigns: other methods need no state, and the pass costs one
`__init__` run per such method. Not when a program that imports the file sets the process-wide default
device (`torch.set_default_tensor_type('torch.cuda.FloatTensor')` in NeuS's exp_runner.py): a tensor the method
makes without device= is then on that default, which the method alone cannot know.
"""

from __future__ import annotations

import ast
import re

from devflow.analysis.index import ClassInfo
from devflow.analysis.interp.class_bases import unresolved_base
from devflow.analysis.values import Val
from devflow.analysis.walk import walk
from devflow.analysis.interp.frames import FuncRef


_SETS_DEFAULT = re.compile(r"\bset_default_(?:tensor_type|device)\s*\(")


def _sets_default(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return bool(_SETS_DEFAULT.search(fh.read()))
    except OSError:
        return True  # unreadable: it may


def _self_attrs(fn, stores: bool) -> set[str]:
    """Names of `self.<name>` stored (`stores`) or read in `fn`'s body."""
    want = ast.Store if stores else ast.Load
    return {n.attr for n in walk(fn) if isinstance(n, ast.Attribute) and isinstance(n.ctx, want)
            and isinstance(n.value, ast.Name) and n.value.id == "self"}


class InitState:
    """Part of the Interpreter: a standalone method's `self` holds what its class's `__init__` stores."""

    def init_standalone_self(self, fn, owner: ClassInfo, self_val: Val, site) -> None:
        if owner.is_module or fn.name == "__init__" or self_val.kind != "obj" or self_val.obj is None:
            return
        if unresolved_base(owner, self.index):
            return  # a base this run cannot read may make it an nn.Module (a library model's subclass)
        found = owner.method("__init__")
        if found is None:
            return
        init, defined_in = found
        cache = self.__dict__.setdefault("_init_stores", {})  # per run: __init__ node id -> its stores
        stores = cache.get(id(init))
        if stores is None:
            stores = cache[id(init)] = _self_attrs(init, stores=True)
        if not stores & _self_attrs(fn, stores=False) or self._importers_set_default():
            return
        self.call_function(FuncRef(init, None, defined_in, "method"), [], {}, self_val, site, standalone=True)

    def _importers_set_default(self) -> bool:
        """Whether a program importing the checked file sets the process-wide default device (once per run)."""
        known = self.__dict__.get("_importer_default")
        if known is None:
            known = False
            if self.path and self.project is not None:
                from devflow.analysis.importers import importers_of  # it imports the interpreter lazily
                try:
                    known = any(_sets_default(p) for p in importers_of(self.path, self.project))
                except Exception:  # noqa: BLE001 - importers that cannot be listed: nothing known
                    known = True
            self.__dict__["_importer_default"] = known
        return known
