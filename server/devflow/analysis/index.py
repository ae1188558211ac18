"""What a file declares: import aliases, classes (and which are nn.Modules), functions."""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field

from devflow.analysis.framework_api import LIBRARY_MODULES, METRIC_CLASSES
from devflow.analysis.walk import walk

MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module", "pytorch_lightning.LightningModule",
                "lightning.LightningModule", "lightning.pytorch.LightningModule", "transformers.PreTrainedModel")


@dataclass(eq=False)
class ClassInfo:
    name: str
    node: ast.ClassDef
    bases: list[str]
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)
    setters: dict[str, ast.FunctionDef] = field(default_factory=dict)  # `@name.setter` defs, by property name
    is_module: bool = False
    base_infos: list["ClassInfo"] = field(default_factory=list)
    home_ref: object = None  # weakref to the FileIndex that defines it (a strong one would be a cycle)

    @property
    def home(self) -> "FileIndex | None":
        """The file that defines the class: names in its body resolve there."""
        return self.home_ref() if self.home_ref is not None else None

    def method(self, name: str):
        if name in self.methods:
            return self.methods[name], self
        for b in self.base_infos:
            found = b.method(name)
            if found:
                return found
        return None

    def module_call(self):
        """The project `__call__` that `type(m).__call__` finds on this nn.Module subclass, or None when
        nn.Module's own (which runs forward) comes first: Python searches the bases left to right, depth first
        here, so `class M(nn.Module, Extractor)` runs nn.Module.__call__ even if `Extractor` declares one."""
        return self._module_call(set()) or None

    def _module_call(self, seen: set):
        """(def, owner) when a project class defines `__call__` first; False when a library nn.Module base
        comes first; None when neither is found."""
        if "__call__" in self.methods:
            return self.methods["__call__"], self
        if id(self) in seen:
            return None
        seen.add(id(self))
        home = self.home
        linked = {b.name: b for b in self.base_infos}
        for b in self.bases:
            info = linked.pop(b.rsplit(".", 1)[-1], None)
            if info is not None:
                found = info._module_call(seen)
            else:
                found = False if home is not None and library_module_base(home, b) else None
            if found is not None:
                return found
        for info in linked.values():  # linked under a name its `bases` entry does not end with
            found = info._module_call(seen)
            if found is not None:
                return found
        return None

    def setter(self, name: str):
        """The `@name.setter` of a property this class or a base defines (with the class that defines it)."""
        if name in self.setters:
            return self.setters[name], self
        if name in self.methods:
            return None  # redefined here without a setter
        for b in self.base_infos:
            found = b.setter(name)
            if found:
                return found
        return None


_RUNS_ON_START = ("multiprocessing.Process", "multiprocessing.context.Process", "torch.multiprocessing.Process",
                  "threading.Thread")


def started_run(info: "ClassInfo"):
    """(def, owner) of the project `run` that `start()` runs on an instance of `info`: a subclass of the
    standard library's Process / Thread (an A3C worker, a rollout actor) that defines `run` and not
    `start`; None otherwise."""
    if info.method("start") is not None or not _runs_on_start(info, set()):
        return None
    return info.method("run")


def _runs_on_start(info: "ClassInfo", seen: set) -> bool:
    if id(info) in seen:
        return False
    seen.add(id(info))
    home = info.home
    return any(home is not None and home.qualify(b) in _RUNS_ON_START for b in info.bases) or \
        any(_runs_on_start(b, seen) for b in info.base_infos)


# torch.distributions' base classes whose `sample(sample_shape)` is `with torch.no_grad(): return
# self.rsample(sample_shape)`: a subclass that only implements rsample samples through it.
_SAMPLES_BY_RSAMPLE = ("torch.distributions.Distribution", "torch.distributions.distribution.Distribution",
                       "torch.distributions.ExponentialFamily", "torch.distributions.exp_family.ExponentialFamily")


def sampled_by_rsample(info: "ClassInfo"):
    """(def, owner) of the project `rsample` that `sample()` runs on an instance of `info`: a subclass of
    torch.distributions.Distribution (an ml4gw prior, a truncated normal) that defines `rsample` and
    not `sample`; None otherwise."""
    if info.method("sample") is not None or not _library_base_in(info, _SAMPLES_BY_RSAMPLE, set()):
        return None
    return info.method("rsample")


_TYPED_DICTS = ("typing.TypedDict", "typing_extensions.TypedDict")


def is_typed_dict(info: "ClassInfo") -> bool:
    """A `class Request(TypedDict)` (or a subclass of one): calling it builds a plain dict of its keywords."""
    return _library_base_in(info, _TYPED_DICTS, set())


def _library_base_in(info: "ClassInfo", quals: tuple, seen: set) -> bool:
    if id(info) in seen:
        return False
    seen.add(id(info))
    home = info.home
    return any(home is not None and home.qualify(b) in quals for b in info.bases) or \
        any(_library_base_in(b, quals, seen) for b in info.base_infos)


def library_module_base(index: "FileIndex", base: str) -> bool:
    """A base class, as `index`'s file names it, that is a library's nn.Module."""
    return library_module_qual(index.qualify(base)) or base.endswith(("PreTrainedModel", "ModelMixin"))


def library_module_qual(q: str) -> bool:
    """A qualified library class name that is an nn.Module."""
    return q.startswith(("torch.nn.", "pytorch_lightning.", "lightning.")) or q in MODULE_BASES or \
        q in LIBRARY_MODULES or q in METRIC_CLASSES


class FileIndex:
    def __init__(self, tree: ast.Module, package: str | None = None):
        # `package`: the dotted package of the file ("" for a script's folder), for relative imports;
        # None when the file's place is unknown (relative imports are then left unresolved).
        self.package = package
        self.aliases: dict[str, str] = {}
        self.star_imports: list[str] = []  # `from X import *`: modules whose names this file sees
        self.classes: dict[str, ClassInfo] = {}
        self.all_classes: list[ClassInfo] = []
        self.functions: list[ast.FunctionDef] = []
        self.parent_class: dict[int, ClassInfo] = {}
        # Facts the interpreter derives from this file's text alone, by node id (the tree lives as
        # long as the index): a project file's index is shared by every run while its text is unchanged.
        self.facts: dict = {}
        self._collect(tree)
        self._resolve_bases()

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node (one full walk, made on first use and shared by the rules that need it)."""
        if self._nodes is None:
            self._nodes = walk(self.tree)
        return self._nodes

    def _statements(self, tree: ast.Module):
        """Statements only (no expressions): enough for imports, classes and functions, and far cheaper."""
        stack = list(reversed(tree.body))
        while stack:
            st = stack.pop()
            yield st
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                sub = getattr(st, name, None)
                if sub:
                    stack.extend(reversed(sub))

    def _collect(self, tree: ast.Module) -> None:
        self.tree = tree
        self._nodes = None
        for node in self._statements(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.aliases.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                    else:
                        self.star_imports.append(node.module)
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                base = self._relative_base(node.level)
                if base is None:
                    continue
                mod = ".".join(p for p in (base, node.module or "") if p)
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{mod}.{a.name}" if mod else a.name
                    elif mod:
                        self.star_imports.append(mod)
            elif isinstance(node, ast.ClassDef):
                info = ClassInfo(node.name, node, [self.dotted(b) or "" for b in node.bases],
                                 home_ref=weakref.ref(self))
                for st in node.body:
                    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        accessor = _property_accessor(st)
                        if accessor == "setter":
                            info.setters[st.name] = st  # the getter stays the method: reads call it
                        elif accessor is None:
                            info.methods[st.name] = st
                        self.parent_class[id(st)] = info
                self.classes.setdefault(node.name, info)
                self.all_classes.append(info)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.append(node)

    def _resolve_bases(self) -> None:
        for info in self.all_classes:
            info.base_infos = [self.classes[b] for b in info.bases if b in self.classes and self.classes[b] is not info]
        changed = True
        for info in self.all_classes:
            info.is_module = any(library_module_base(self, b) for b in info.bases)
        while changed:
            changed = False
            for info in self.all_classes:
                if not info.is_module and any(b.is_module for b in info.base_infos):
                    info.is_module = changed = True

    def _relative_base(self, level: int) -> str | None:
        """The package `from .` (level 1), `from ..` (level 2) ... names, "" for a script's folder."""
        if self.package is None:
            return None
        parts = self.package.split(".") if self.package else []
        if level - 1 > len(parts) or (not parts and level > 1):
            return None
        return ".".join(parts[:len(parts) - (level - 1)])

    @staticmethod
    def dotted(node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return None

    def qualify(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return dotted
        return f"{full}.{rest}" if rest else full


def _property_accessor(fn) -> str | None:
    """'setter' / 'deleter' for a def decorated `@<its own name>.setter` / `.deleter` (a property's other
    accessors, which share the getter's name), else None."""
    for d in fn.decorator_list:
        if isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") and isinstance(d.value, ast.Name) \
                and d.value.id == fn.name:
            return d.attr
    return None


def derives_from_builtin_sequence(info: "ClassInfo") -> bool:
    """A project class whose own bases (or a project base's) include the builtin `list` or `tuple`: its
    instances hold items as those do."""
    seen = set()
    todo = [info]
    while todo:
        c = todo.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        own = {b.name for b in c.base_infos}
        if any(b in ("list", "tuple", "builtins.list", "builtins.tuple") and b not in own for b in c.bases):
            return True
        todo.extend(c.base_infos)
    return False
