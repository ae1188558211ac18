"""Entry point of the static device-flow analysis.

Contract: `analyze(source, path=None) -> FileResult` never raises for any input string; it
returns every rule's raw diagnostics (no noqa / select / ignore filtering: `devflow.api` does
that) and the device hints for hover / inlay hints. It never imports torch or user code.

Pipeline: `ast.parse` -> Project (analysis/program.py: where imports of project files resolve,
parsed once per content) -> FileIndex (imports, classes) -> Interpreter (analysis/interp/: device
lattice, one pass per function body, calls followed to any depth into the file and the project
files it imports) + the findings runs of its importers place in it (analysis/importers.py) -> rules
(each isolated: a failing rule is recorded in `rule_errors`) -> fixes (libcst, only for findings).
"""

from __future__ import annotations

import ast
import sys
import time

from devflow.analysis.findings import Finding
from devflow.analysis.index import FileIndex
from devflow.analysis.interp import Interpreter
from devflow.lines import line_count, split_lines
from devflow.analysis.importers import findings_from_importers
from devflow.analysis.program import Project, package_of
from devflow.model import DeviceHint, Diagnostic, Edit, Fix, FileResult, Related, Span
from devflow.rules.base import Context
from devflow.rules.checks import ALL_RULES
from devflow.rules.fix_safety import statement_fix_runs
from devflow.rules.fixes import SourceText, build_fix
from devflow.rules.registry import RULES

# Top-level packages of the PyTorch ecosystem: a file that imports none of them cannot create,
# move or load a tensor or module by itself, so it is not analysed.
TORCH_ECOSYSTEM = frozenset((
    "torch", "torchvision", "torchaudio", "torchtext", "torchdata", "torchrl", "torchmetrics", "tensordict",
    "functorch", "torch_geometric", "torch_xla", "transformers", "peft", "accelerate", "diffusers", "timm",
    "lightning", "pytorch_lightning", "lightning_fabric", "trl", "bitsandbytes", "deepspeed", "optimum",
    "sentence_transformers", "safetensors", "xformers", "open_clip", "apex", "kornia", "monai", "ignite",
    "segmentation_models_pytorch", "pytorch3d", "detectron2", "mmcv", "mmdet", "mmengine", "ultralytics",
    "fairseq", "fastai", "skorch", "pyro", "gpytorch", "composer", "dgl", "nerfstudio", "einops",
))


def imports_torch_ecosystem(source: str, tree: ast.Module) -> bool:
    """Whether the file imports a package of the PyTorch ecosystem (any import statement, at any depth).
    A substring test first keeps files that mention none of the names at a few microseconds."""
    if not any(name in source for name in TORCH_ECOSYSTEM):
        return False
    stack = list(reversed(tree.body))  # imports are usually on top: found first
    while stack:
        st = stack.pop()
        if isinstance(st, ast.Import):
            if any(a.name.split(".")[0] in TORCH_ECOSYSTEM for a in st.names):
                return True
        elif isinstance(st, ast.ImportFrom):
            if st.level == 0 and st.module and st.module.split(".")[0] in TORCH_ECOSYSTEM:
                return True
        else:
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                sub = getattr(st, name, None)
                if sub:
                    stack.extend(reversed(sub))
    return "import_module" in source and _imports_by_name(tree)


def _imports_by_name(tree: ast.Module) -> bool:
    """`importlib.import_module("torch")` with a constant name: the same import as a statement."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) == "import_module" \
                and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str) \
                and n.args[0].value.split(".")[0] in TORCH_ECOSYSTEM:
            return True
    return False


def _import_statements(tree: ast.Module):
    """The file's import statements at any statement depth: an import in a function body (a test's
    `from pkg.solver import Turbo`) loads its module when the function runs, as one on top does."""
    stack = list(reversed(tree.body))
    while stack:
        st = stack.pop()
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            yield st
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(st, name, None)
            if sub:
                stack.extend(reversed(sub))


def _has_imports(tree: ast.Module) -> bool:
    return next(_import_statements(tree), None) is not None


def _imported_modules(tree: ast.Module, package: str) -> list[str]:
    """Dotted names a file's imports may load (`from pkg import sub` may load `pkg.sub`)."""
    out: list[str] = []
    for st in _import_statements(tree):
        if isinstance(st, ast.Import):
            out += [a.name for a in st.names]
        elif isinstance(st, ast.ImportFrom):
            base = st.module or ""
            if st.level:
                parts = package.split(".") if package else []
                if st.level - 1 > len(parts):
                    continue
                parts = parts[:len(parts) - (st.level - 1)]
                base = ".".join(parts + ([st.module] if st.module else []))
            if base:
                out.append(base)
            out += [f"{base}.{a.name}" if base else a.name for a in st.names if a.name != "*"]
    return out


def reaches_torch(tree: ast.Module, project: Project | None, package: str, depth: int = 3) -> bool:
    """Whether a file without torch imports imports project modules that do (a `main.py` that only
    runs `from lm_eval.models.gpt2 import HFLM`): their classes, run from here, may mix devices."""
    if project is None:
        return False
    seen: set[str] = set()
    todo = [(m, depth) for m in _imported_modules(tree, package)]
    while todo:
        mod, left = todo.pop()
        if mod in seen or left <= 0:
            continue
        seen.add(mod)
        pf = project.load(mod) if project.find(mod) else None
        if pf is None:
            continue
        if imports_torch_ecosystem(pf.source, pf.tree):
            return True
        pkg = mod if pf.path.endswith("__init__.py") else mod.rpartition(".")[0]
        todo += [(m, left - 1) for m in _imported_modules(pf.tree, pkg)]
    return False


# Statements the interpreter may run per file line (calls followed into same-file functions).
BUDGET_PER_LINE = 30
# Seconds the rules may run past the deadline, so the interpreter's findings are not thrown away.
RULES_GRACE_S = 1.0


class _Columns:
    """ast columns are UTF-8 byte offsets; devflow's are code points."""

    def __init__(self, source: str, shift_first: int = 0):
        self.lines = split_lines(source)  # Python's line breaks only, as ast counts lines
        self.shift_first = shift_first  # a stripped BOM still counts as a code point on line 1

    def col(self, line: int, col: int) -> int:
        if line == 1 and self.shift_first:
            return self._col(line, col) + self.shift_first
        return self._col(line, col)

    def _col(self, line: int, col: int) -> int:
        if 0 < line <= len(self.lines):
            text = self.lines[line - 1]
            if not text.isascii():
                return len(text.encode("utf-8")[:col].decode("utf-8", errors="ignore"))
        return col

    def span(self, s: Span) -> Span:
        return Span(s.line, self.col(s.line, s.col), s.end_line, self.col(s.end_line, s.end_col))


def _syntax_error(result: FileResult, e: SyntaxError) -> FileResult:
    line = e.lineno or 1
    col = max((e.offset or 1) - 1, 0)
    result.error = f"Syntax error at line {line}: {e.msg}. devflow checks the file again once it parses."
    result.error_span = Span(line, col, e.end_lineno or line, max((e.end_offset or col + 1) - 1, col))
    return result


def analyze(source: str, path: str | None = None, retain: list | None = None,
            roots: list[str] | tuple[str, ...] = (), deadline: float | None = None) -> FileResult:
    """`retain`: a list that gets the run's syntax tree and interpreter, for a caller that would
    rather free them later (an editor server, after publishing) than on its latency path.
    `roots`: folders where the file's imports of project files resolve, besides the file's own
    folder and the folder above its top package (an editor passes its workspace folder).
    `deadline`: a `time.monotonic()` value; past it the interpreter stops (checked where it counts its
    statement budget) and the remaining rules are skipped; `FileResult.partial` then says so."""
    result = FileResult(path=path)
    try:
        return _analyze(source, result, retain, roots, deadline)
    except RecursionError:
        result.error = "The file is nested too deeply for the analysis."
        return result
    except Exception as e:  # noqa: BLE001 - the contract: never raise
        result.rule_errors.append(f"engine: {type(e).__name__}: {e}")
        return result


def _analyze(source: str, result: FileResult, retain: list | None = None, roots=(),
             deadline: float | None = None) -> FileResult:
    if not isinstance(source, str):
        result.error = "The file is not text."
        return result
    bom = 1 if source.startswith("\ufeff") else 0
    source = source[bom:]
    if "\x00" in source:
        result.error = "The file contains NUL bytes; it is not Python source."
        return result
    try:
        tree = ast.parse(source, type_comments=False)
    except SyntaxError as e:
        return _syntax_error(result, e)
    except (ValueError, MemoryError) as e:
        result.error = f"The file cannot be parsed: {e}."
        return result
    torch_file = imports_torch_ecosystem(source, tree)
    project = Project.for_file(result.path, roots) if torch_file or _has_imports(tree) else None
    if not torch_file and not reaches_torch(tree, project, package_of(result.path)[0] if result.path else ""):
        return result  # nothing device-related can happen here
    index = FileIndex(tree, package=package_of(result.path)[0] if project is not None and result.path else None)
    n_lines = line_count(source)
    interp = Interpreter(tree, source, index, budget=BUDGET_PER_LINE * n_lines + 5000, project=project,
                         deadline=deadline, path=result.path)
    old_limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(old_limit, 6000))
        interp.run()
    except Exception as e:  # noqa: BLE001
        result.rule_errors.append(f"interpreter: {type(e).__name__}: {e}")
    finally:
        sys.setrecursionlimit(old_limit)
    result.depends_on = tuple(project.files) if project is not None else ()
    by_code: dict[str, list[Finding]] = {}
    for f in interp.findings.values():
        by_code.setdefault(f.code, []).append(f)
    saved_inputs: list[str] = []
    for f in findings_from_importers(result.path, source, project, saved_inputs):
        if (f.code, f.span) not in interp.findings:
            by_code.setdefault(f.code, []).append(f)
    result.depends_on_saved = tuple(dict.fromkeys(saved_inputs))
    ctx = Context(tree, source, index, interp, by_code)
    cols = _Columns(source, bom)
    text = SourceText(source)
    seen: set = set()
    for rule in ALL_RULES:
        # The rules get a grace period past the interpreter's deadline: what it found is kept.
        if deadline is not None and time.monotonic() > deadline + RULES_GRACE_S:
            result.partial = True
            break
        try:
            for f in rule.check(ctx):
                key = (f.code, f.span)
                if key in seen or f.cancelled:
                    continue
                seen.add(key)
                result.diagnostics.append(_diagnostic(f, cols, text, tree, ctx))
        except Exception as e:  # noqa: BLE001 - one rule's failure must not hide the others
            result.rule_errors.append(f"{rule.code}: {type(e).__name__}: {e}")
    result.partial = result.partial or interp.out_of_time
    result.diagnostics.sort(key=lambda d: (d.span.line, d.span.col, d.code))
    result.hints = _hints(interp.hints, cols)
    interp.release()
    if retain is not None:
        retain.append((tree, index, interp, ctx))
    return result


def _hints(raw: dict, cols: _Columns) -> list[DeviceHint]:
    col = cols.col
    return [DeviceHint(Span(line, col(line, c), end_line, col(end_line, end_c)), name, dev.render(), reason, kind, is_assign)
            for (line, c, end_line, end_c), h in sorted(raw.items(), key=lambda kv: kv[0][:2]) if h is not None
            for name, dev, reason, kind, is_assign in (h,)]


def _convert_plan(plan, cols: _Columns):
    from dataclasses import replace
    return replace(plan, span=cols.span(plan.span), anchor=cols.span(plan.anchor) if plan.anchor else None)


def _diagnostic(f: Finding, cols: _Columns, text: SourceText, tree: ast.Module, ctx: Context) -> Diagnostic:
    fix = None
    if f.fix is not None:
        try:
            fix = build_fix(text, _convert_plan(f.fix, cols))
            fix = statement_fix_runs(fix, tree, f.fix.kind)
            if fix is not None and f.fix.name.startswith("import:"):
                fix = _with_import(fix, f.fix.name[len("import:"):], tree, text)
        except Exception:  # noqa: BLE001 - a finding without a fix beats no finding
            fix = None
    return Diagnostic(
        code=f.code,
        message=f.message,
        span=cols.span(f.span),
        severity=RULES[f.code].severity if f.code in RULES else "error",
        related=tuple(Related(cols.span(s), m) for s, m in f.related),
        fix=fix,
    )


def _with_import(fix: Fix, line: str, tree: ast.Module, text: SourceText) -> Fix:
    if line in text.source:
        return fix
    last = None
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            last = st
        elif last is not None:
            break
    at = (last.end_lineno + 1) if last is not None else 1
    return Fix(fix.title, fix.applicability, fix.edits + (Edit(Span(at, 0, at, 0), line + text.newline),))
