"""Rename every user-defined identifier: variables, parameters, functions, classes, methods,
attributes set on `self` and class-level fields. Library names are left alone: imported names,
builtins, dunders, `self` / `cls`, and every attribute a torch base class defines or reads
(`forward`, `training`, `step`, `weight`, ...), so overriding and protocol methods still work.
Keyword arguments are renamed only where the callee is a user function, class or method."""

from __future__ import annotations

import ast

from .project import NotApplicable, Project
from .scopes import BUILTINS, FUNCS, all_identifiers


def _library_attrs() -> set[str]:
    names = {"forward", "training", "step", "state", "param_groups", "defaults", "weight", "bias",
             "device", "dtype", "shape", "data", "grad", "dataset", "batch_size"}
    try:  # the real protocol of the base classes user code subclasses or uses
        import torch
        from torch.utils.data import DataLoader, Dataset

        for cls in (torch.nn.Module, torch.Tensor, torch.optim.Optimizer, Dataset, DataLoader,
                    torch.optim.lr_scheduler.LRScheduler, torch.autograd.Function,
                    torch.distributions.Distribution):
            names.update(dir(cls))
    except ImportError:
        pass
    return names


LIBRARY_ATTRS = _library_attrs()
KEEP = {"self", "cls", "_", "__name__", "__file__"}


class _Collector(ast.NodeVisitor):
    def __init__(self, project_modules: set[str], top_modules: set[str] | None = None):
        self.top_modules = project_modules if top_modules is None else top_modules
        self.names: set[str] = set()  # bare names the user binds
        self.callables: set[str] = set()  # user functions, classes, methods
        self.attrs: set[str] = set()  # attributes the user defines
        self.params: set[str] = set()
        self.imported: set[str] = set()
        self.argparse_dests: set[str] = set()
        self.strings: set[str] = set()  # identifier-like string constants ({'hidden_dim': 64} passed as **kwargs)
        self.getattr_prefixes: set[str] = set()  # getattr(self, '_' + mode): '_' + any such string is a name
        self.module_aliases: set[str] = set()  # names bound to a project module by an import
        self.project_imported: set[str] = set()  # names a relative import binds: the project's, not a library's
        self.project_modules = project_modules
        self.class_stack: list[ast.ClassDef] = []

    def visit_Import(self, node):
        for a in node.names:
            self.imported.add((a.asname or a.name).split(".")[0])
            if a.name.split(".")[0] in self.top_modules:
                self.module_aliases.add((a.asname or a.name).split(".")[0])

    def visit_ImportFrom(self, node):
        if node.module and node.module.split(".")[0] in self.top_modules and not node.level:
            self.module_aliases.update(a.asname or a.name for a in node.names if a.name in self.project_modules)
            return  # names of the project's own modules are renamed with their definitions
        if node.level:  # from . import sibling
            self.module_aliases.update(a.asname or a.name for a in node.names if a.name in self.project_modules)
            # `from .defaults import _C as cfg`: relative imports are not rewritten, so the sibling's
            # definition keeps its name too
            self.imported.update(a.name for a in node.names)
            self.project_imported.update(a.asname or a.name for a in node.names)
        for a in node.names:
            self.imported.add(a.asname or a.name)

    def _def(self, node):
        self.callables.add(node.name)
        if self.class_stack and any(node is s for s in self.class_stack[-1].body):
            self.attrs.add(node.name)  # a method: renamed as an attribute (protocol names are kept)
        else:
            self.names.add(node.name)

    def visit_FunctionDef(self, node):
        self._def(node)
        a = node.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
            if arg is not None:
                self.names.add(arg.arg)
                self.params.add(arg.arg)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        for arg in node.args.args:
            self.names.add(arg.arg)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        self._def(node)
        for stmt in node.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.attrs.add(n.id)
                        self.params.add(n.id)  # dataclass fields are constructor keywords
        self.class_stack.append(node)
        self.generic_visit(node)
        self.class_stack.pop()

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.names.add(node.id)

    def visit_Global(self, node):
        self.names.update(node.names)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.value.isidentifier():
            self.strings.add(node.value)

    def visit_ExceptHandler(self, node):
        if node.name:
            self.names.add(node.name)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id == "self":
            self.attrs.add(node.attr)
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1:
            key = node.args[1]
            if (isinstance(key, ast.BinOp) and isinstance(key.op, ast.Add) and isinstance(key.left, ast.Constant)
                    and isinstance(key.left.value, str)):
                self.getattr_prefixes.add(key.left.value)
        if isinstance(f, ast.Attribute) and f.attr == "add_argument":
            for a in node.args:
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-"):
                    self.argparse_dests.add(a.value.lstrip("-").replace("-", "_"))
            for k in node.keywords:
                if k.arg == "dest" and isinstance(k.value, ast.Constant):
                    self.argparse_dests.add(str(k.value.value))
        self.generic_visit(node)


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping, names, attrs, callables, params, project_modules, user_classes, imported=(),
                 instances=(set(), set())):
        self.m, self.names, self.attrs = mapping, names, attrs
        self.callables, self.params = callables, params
        self.project_modules, self.user_classes = project_modules, user_classes
        self.imported = set(imported) - set(project_modules)
        self.instance_names, self.instance_attrs = instances
        self.module_aliases = set(project_modules)
        self.all_modules: set[str] = set(project_modules)
        self.class_stack: list[ast.ClassDef] = []

    def visit_Name(self, node):
        if getattr(node, "_mm_field", False):
            return node  # a class-level field: renamed (or kept) as the attribute it is
        if node.id in self.names:
            node.id = self.m[node.id]
        return node

    def _def(self, node):
        in_class = self.class_stack and any(node is s for s in self.class_stack[-1].body)
        if node.name in (self.attrs if in_class else self.names):
            node.name = self.m[node.name]

    def visit_FunctionDef(self, node):
        self._def(node)
        for arg in ast.walk(node.args):
            if isinstance(arg, ast.arg) and arg.arg in self.names:
                arg.arg = self.m[arg.arg]
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        for arg in node.args.args:
            if arg.arg in self.names:
                arg.arg = self.m[arg.arg]
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node):
        self._def(node)
        for stmt in node.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        n._mm_field = True
                        if n.id in self.attrs:
                            n.id = self.m[n.id]
        # `@value.setter` in a class body names the method `value` defined above it: a class-level name,
        # renamed (or kept) as the attribute it is, not as a local of the same spelling
        methods = {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for stmt in node.body:
            for dec in stmt.decorator_list if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else []:
                for n in ast.walk(dec):
                    if isinstance(n, ast.Name) and n.id in methods and not getattr(n, "_mm_field", False):
                        n._mm_field = True
                        if n.id in self.attrs:
                            n.id = self.m[n.id]
        self.class_stack.append(node)
        self.generic_visit(node)
        self.class_stack.pop()
        return node

    def visit_Global(self, node):
        node.names = [self.m.get(n, n) if n in self.names else n for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node):
        if node.name in self.names:
            node.name = self.m[node.name]
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node):
        v = node.value
        root = v
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in self.imported:
            self.generic_visit(node)  # an attribute of a library module (`nn.utils.rnn`), not the user's `self.rnn`
            return node
        if node.attr in self.attrs or (self._module_path(v) and node.attr in self.names):
            node.attr = self.m[node.attr]
        self.generic_visit(node)
        return node

    def _module_path(self, v) -> bool:
        """`spk` or `spk.train` where `spk` is bound to a project package: what follows is a name that
        module defines (`spk.train.Trainer`), renamed with its definition."""
        while isinstance(v, ast.Attribute) and v.attr in self.all_modules:
            v = v.value
        return isinstance(v, ast.Name) and v.id in self.module_aliases

    def visit_ImportFrom(self, node):
        if node.module and node.module.split(".")[0] in self.project_modules and not node.level:
            for a in node.names:
                if a.name in self.names:
                    a.name = self.m[a.name]
                if a.asname in self.names:
                    a.asname = self.m[a.asname]
        return node

    def _user_callee(self, f) -> bool:
        if isinstance(f, ast.Name):
            return f.id in self.callables or f.id in self.instance_names or (f.id == "cls" and bool(self.class_stack))
        if isinstance(f, ast.Attribute):
            if f.attr in self.instance_attrs and isinstance(f.value, ast.Name) and f.value.id == "self":
                return True
            if (isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Name) and f.value.func.id == "super"
                    and self.class_stack):
                classes = self.user_classes | {self.m[c] for c in self.user_classes if c in self.m}  # bases may be renamed
                return any(isinstance(b, ast.Name) and b.id in classes for b in self.class_stack[-1].bases)
            return f.attr in self.callables and f.attr in self.attrs or f.attr in self.user_classes
        return False

    def visit_Call(self, node):
        # `functools.partial(f, sde=sde)`: the keywords are f's parameters
        partial = (isinstance(node.func, ast.Attribute) and node.func.attr == "partial"
                   and isinstance(node.func.value, ast.Name) and node.func.value.id == "functools") or \
            (isinstance(node.func, ast.Name) and node.func.id == "partial")
        if self._user_callee(node.func) or (partial and node.args and self._user_callee(node.args[0])):
            for k in node.keywords:
                if k.arg in self.params and k.arg in self.names | self.attrs:
                    k.arg = self.m[k.arg]
        self.generic_visit(node)
        return node


def rename(proj: Project) -> Project:
    modules = proj.module_names() | {"buggy", "fixed"}
    extras = {name: ast.parse(text) for name, text in proj.extras.items()}  # fixtures share the names
    trees = [*proj.trees.values(), *extras.values()]
    tops = proj.top_level_modules() | {"buggy", "fixed"}
    col = _Collector(modules, tops)
    for tree in trees:
        col.visit(tree)
    drop = (BUILTINS | KEEP | col.imported | modules | col.strings
            | {p + t for p in col.getattr_prefixes for t in col.strings})
    names = {n for n in col.names if not (n.startswith("__") and n.endswith("__"))} - drop
    attrs = ({a for a in col.attrs if not a.startswith("__")} - LIBRARY_ATTRS - col.argparse_dests - drop
             - _foreign_protocol(trees, tops))  # (a base named from a library whose name a project folder also has)
    if not names:
        raise NotApplicable("no user-defined names")
    taken = all_identifiers(trees)
    mapping, i = {}, 0
    for n in sorted(names | attrs):
        i += 1
        new = f"{'K' if n[:1].isupper() else 'n'}{i}_"
        while new in taken:
            i += 1
            new = f"{'K' if n[:1].isupper() else 'n'}{i}_"
        mapping[n] = new
    user_classes = {n.name for t in trees for n in ast.walk(t) if isinstance(n, ast.ClassDef)}
    r = _Renamer(mapping, names, attrs, col.callables, col.params, tops, user_classes, col.imported,
                 _instances(trees, user_classes))
    r.module_aliases = col.module_aliases
    r.all_modules = modules
    r.imported -= col.module_aliases  # `from . import sibling`: its attributes are the user's names
    r.imported -= col.project_imported  # `from .common import DEBERTA`: a project object, its attributes the user's
    # a keyword passed to a callee that is neither the user's (known) nor a library's (rooted at an import)
    # may name a user parameter: that parameter keeps its name
    while True:
        kept = _unresolved_keywords(trees, r, (col.imported - col.project_imported) | BUILTINS) & (names | attrs)
        if not kept:
            break
        names -= kept
        attrs -= kept
        r.names, r.attrs = names, attrs
    for tree in trees:
        r.visit(tree)
    proj.extras = {name: ast.unparse(tree) + "\n" for name, tree in extras.items()}
    return proj


def _instances(trees, user_classes: set[str]) -> tuple[set[str], set[str]]:
    """Names and `self` attributes bound to an instance of a user class (`net = Net(...).cuda()`): calling
    them calls the user's `forward` / `__call__`, so their keyword arguments are the user's parameters."""
    names, attrs = set(), set()
    for tree in trees:
        for n in ast.walk(tree):
            if not isinstance(n, ast.Assign):
                continue
            v = n.value
            while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and isinstance(v.func.value, ast.Call):
                v = v.func.value  # Net(...).to(device).eval()
            f = v.func if isinstance(v, ast.Call) else None
            cls = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if cls not in user_classes:
                continue
            for t in n.targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    attrs.add(t.attr)
    return names, attrs


def _foreign_protocol(trees, project_modules: set[str]) -> set[str]:
    """Methods, class fields and `self` attributes of classes that derive (directly or through user classes)
    from a library class other than torch's (a LightningModule's `training_step`, a gym Env's `step`): the
    library calls or reads them by name, and its protocol is not introspected here, so they keep their names."""
    from .split_module import _dotted, _import_table

    classes = []
    for tree in trees:
        imports = _import_table(tree)
        classes += [(c, imports) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]
    user = {c.name for c, _ in classes}
    foreign: set[str] = set()
    changed = True
    while changed:
        changed = False
        for c, imports in classes:
            if c.name in foreign:
                continue
            for b in c.bases:
                d = _dotted(b, imports) or ""
                root = d.split(".")[0]
                if (d and not d.startswith("torch.") and root != "object" and (d not in user or d in foreign)
                        and root not in project_modules):
                    foreign.add(c.name)
                    changed = True
                    break
    out: set[str] = set()
    for c, _ in classes:
        if c.name not in foreign:
            continue
        for n in ast.walk(c):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.add(n.name)
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                out.add(n.attr)
        for stmt in c.body:
            for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []:
                out.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return out


def _unresolved_keywords(trees, r: "_Renamer", library_roots: set[str]) -> set[str]:
    out: set[str] = set()

    def visit(node, classes):
        if isinstance(node, ast.ClassDef):
            classes = classes + [node]
        if isinstance(node, ast.Call) and node.keywords:
            r.class_stack = classes
            root = node.func
            while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
                root = root.func if isinstance(root, ast.Call) else root.value
            library = isinstance(root, ast.Name) and root.id in library_roots - r.module_aliases
            if not library and not r._user_callee(node.func):
                out.update(k.arg for k in node.keywords if k.arg)
        for child in ast.iter_child_nodes(node):
            visit(child, classes)

    for tree in trees:
        visit(tree, [])
    r.class_stack = []
    return out
