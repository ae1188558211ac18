"""What the CLI and the language server call.

- `check_source(source, path=None, config=None, retain=None) -> FileResult`: the engine's findings less
  `# noqa` suppressions and rules not selected for `path` (select / ignore / per-file-ignores),
  with `severity` overrides applied. Never raises: an internal failure becomes
  `FileResult.error` (code E000).
- `check_path(path, config=None) -> FileResult`: reads a `.py` file (encoding detected like
  Python's own: BOM or PEP 263 cookie, else UTF-8) or an `.ipynb` notebook (code cells joined;
  the result's lines are those of the joined program, see `devflow.notebook`). A file that cannot
  be read, decoded or parsed as a notebook becomes `FileResult.error` (code E902).
- `apply_fixes(source, diagnostics, unsafe=False) -> (new_source, fixes_applied)`: applies the
  safe fixes (and the unsafe ones with `unsafe=True`), skipping a fix that overlaps one already
  taken, then re-checks and repeats (a few rounds, as ruff does). A round whose result no longer
  parses is undone fix by fix.
- `error_code(result)`: the pseudo-code of a file-level error: E902 (cannot read / decode /
  not a notebook), E999 (syntax error), E000 (internal error), or None.

`check_file` / `fix_file` do the same for the CLI with what it needs to print and write back.
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import os
import tempfile
import tokenize
from dataclasses import dataclass, replace
from pathlib import Path

from devflow import engine, noqa
from devflow.config import Config
from devflow.edits import apply_edits, overlaps
from devflow.lines import lines_with_ends, normalize
from devflow.model import Diagnostic, Edit, FileResult, Fix, Span
from devflow.notebook import JoinedCells, cell_error_diagnostics, join_cells, parse_ipynb

E_INTERNAL, E_IO, E_SYNTAX = "E000", "E902", "E999"
PSEUDO_CODES = {
    E_INTERNAL: "internal error in devflow while checking this file",
    E_IO: "the file could not be read, decoded, or parsed as a notebook",
    E_SYNTAX: "the file is not valid Python",
    "E998": "the file uses syntax of a newer Python than the one running devflow",
}
MAX_FIX_ROUNDS = 4


def error_code(result: FileResult) -> str | None:
    if result.error is None:
        return None
    return getattr(result, "error_code", None) or E_SYNTAX


def _failed(path: str | None, code: str, message: str, span: Span | None = None) -> FileResult:
    result = FileResult(path=path, error=message, error_span=span)
    result.error_code = code  # type: ignore[attr-defined]  # read back by error_code()
    return result


# -- checking -------------------------------------------------------------------------------------

def _filter(result: FileResult, source: str, path: str | None, config: Config | None) -> FileResult:
    config = config or Config()
    kept = []
    for d in noqa.filter_diagnostics(source, result.diagnostics):
        if not config.is_enabled(d.code, path):
            continue
        level = config.severity_for(d.code, d.severity)
        kept.append(d if level == d.severity else replace(d, severity=level))
    result.diagnostics = kept
    return result


def check_source(source: str, path: str | None = None, config: Config | None = None,
                 retain: list | None = None, deadline: float | None = None,
                 roots: list[str] | tuple[str, ...] = ()) -> FileResult:
    """`deadline` (a `time.monotonic()` value): stop early and say so in `partial` (editors).
    `roots`: folders where imports of project files resolve (an editor's workspace folders)."""
    try:
        result = engine.analyze(source, path, retain, roots=tuple(roots), deadline=deadline)
        if result.error is not None:
            if result.error_span is not None and getattr(result, "error_code", None) is None:
                _newer_syntax(result, source)
            result.error_code = getattr(result, "error_code", None) or E_SYNTAX  # type: ignore[attr-defined]
            result.diagnostics = []
            return result
        return _filter(result, source, path, config)
    except RecursionError:
        return _failed(path, E_INTERNAL, "internal error: the code is nested too deeply to analyse")
    except Exception as e:  # noqa: BLE001 - the contract: never raise, say what happened
        return _failed(path, E_INTERNAL, f"internal error: {type(e).__name__}: {e}")


def _newer_syntax(result: FileResult, source: str) -> None:
    """A syntax error that is valid code for a newer Python becomes a notice, not E999."""
    from devflow import newer_syntax

    message = newer_syntax.notice(source.lstrip("\ufeff"), result.error_span.line)
    if message is not None:
        result.error = message[0].upper() + message[1:]
        result.error_code = newer_syntax.CODE  # type: ignore[attr-defined]


@dataclass
class SourceFile:
    """A file as read from disk: its text, how to write it back, and its cells for a notebook."""

    path: str
    text: str  # the Python program (for a notebook: the joined code cells)
    encoding: str = "utf-8"
    notebook: dict | None = None
    cell_indices: tuple[int, ...] = ()  # index in notebook["cells"] of each joined code cell
    cells: JoinedCells | None = None
    raw_json: str = ""


class FileProblem(Exception):
    """A file that cannot be checked; the message is one clear line for the user."""


def _describe_os_error(e: OSError) -> str:
    return f"cannot read file: {e.strerror or e}"


def _decode_python(data: bytes) -> tuple[str, str]:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        raise FileProblem(f"cannot decode file: {e.msg if hasattr(e, 'msg') else e}") from None
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        hint = "" if encoding != "utf-8" else " (declare the encoding with a `# -*- coding: ... -*-` line)"
        raise FileProblem(f"cannot decode file as {encoding}: invalid byte 0x{data[e.start]:02x} at line {line}, "
                          f"column {col}{hint}") from None
    except LookupError:
        raise FileProblem(f"cannot decode file: unknown encoding {encoding!r}") from None


def _notebook(path: str, data: bytes) -> SourceFile:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FileProblem(f"not a valid notebook: not UTF-8 (invalid byte at offset {e.start})") from None
    try:
        parsed = parse_ipynb(text)
    except ValueError as e:
        raise FileProblem(str(e)) from None
    joined = join_cells(list(parsed.sources))
    return SourceFile(path, joined.source, "utf-8", parsed.document, parsed.indices, joined, text)


def read_source(path: str) -> SourceFile:
    """Raises FileProblem with a one-line reason when the file cannot be checked."""
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise FileProblem("cannot read file: is a directory") from None
    except FileNotFoundError:
        raise FileProblem("no such file or directory") from None
    except OSError as e:
        raise FileProblem(_describe_os_error(e)) from None
    if path.endswith(".ipynb"):
        return _notebook(path, data)
    text, encoding = _decode_python(data)
    return SourceFile(path, text, encoding)


def check_path(path: str, config: Config | None = None) -> FileResult:
    try:
        src = read_source(str(path))
    except FileProblem as e:
        return _failed(str(path), E_IO, str(e))
    except Exception as e:  # noqa: BLE001
        return _failed(str(path), E_INTERNAL, f"internal error: {type(e).__name__}: {e}")
    return with_cell_errors(check_source(src.text, str(path), config), src.cells)


def with_cell_errors(result: FileResult, cells: JoinedCells | None, severity: str = "error") -> FileResult:
    """A notebook's cells that do not parse on their own (left out of the analysis) as E999 findings."""
    if cells is not None and cells.errors and result.error is None:
        result.diagnostics = cell_error_diagnostics(cells.errors, severity) + list(result.diagnostics)  # type: ignore[arg-type]
    return result


# -- fixing ---------------------------------------------------------------------------------------

def _fix_identity(d: Diagnostic) -> tuple:
    """A fix as the same remedy wherever its finding moves (positions change between rounds)."""
    assert d.fix is not None
    return d.code, d.fix.title, tuple(e.new_text for e in d.fix.edits)


def _fixes_to_apply(diagnostics: list[Diagnostic], unsafe: bool,
                    stuck: frozenset | set = frozenset()) -> list[tuple[Fix, list[Diagnostic]]]:
    """Non-overlapping fixes in source order, each with the findings it resolves."""
    ordered = sorted((d for d in diagnostics if d.fix is not None and (unsafe or d.fix.applicability == "safe")
                      and _fix_identity(d) not in stuck),
                     key=lambda d: (d.span.line, d.span.col))
    taken: list[tuple[Fix, list[Diagnostic]]] = []
    for d in ordered:
        fix = d.fix
        assert fix is not None
        same = next((i for i, (f, _) in enumerate(taken) if f.edits == fix.edits), None)
        if same is not None:  # two findings with one remedy: applied once, both resolved
            taken[same][1].append(d)
            continue
        clash = any(overlaps(a.span, b.span) or a.span == b.span for f, _ in taken for a in f.edits for b in fix.edits)
        if not clash and fix.edits:
            taken.append((fix, [d]))
    return taken


def _line_after(line: int, col: int, edits: list[Edit]) -> int:
    """Where a position's line is once `edits` are applied."""
    shift = 0
    for e in edits:
        if (e.span.end_line, e.span.end_col) <= (line, col) and (e.span.line, e.span.col) != (line, col):
            shift += e.new_text.count("\n") - (e.span.end_line - e.span.line)
    return line + shift


def _unresolved(applied: list[tuple[Fix, list[Diagnostic]]], after: list[Diagnostic]) -> list[tuple[Fix, list[Diagnostic]]]:
    """The applied fixes whose finding is still reported, same rule at the same place, once applied
    (a fix that does not resolve its finding would be applied again by every later --fix)."""
    edits = [e for f, _ in applied for e in f.edits]
    now = {(d.code, d.span.line, _no_digits(d.message)) for d in after}
    return [(f, ds) for f, ds in applied
            if any((d.code, _line_after(d.span.line, d.span.col, edits), _no_digits(d.message)) in now for d in ds)]


def _no_digits(text: str) -> str:
    return "".join(c for c in text if not c.isdigit())


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


class _Program:
    """A Python file's text, edited as a whole."""

    def __init__(self, text: str) -> None:
        self.text = text

    def edited(self, edits: list[Edit]) -> _Program:
        return _Program(apply_edits(self.text, edits))


class CellSpanError(ValueError):
    pass


class _Cells:
    """A notebook's code cells: analysed joined, edited cell by cell (an edit may not span cells)."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.joined = join_cells(texts)
        self.text = self.joined.source

    def edited(self, edits: list[Edit]) -> _Cells:
        per_cell: dict[int, list[Edit]] = {}
        for e in edits:
            c0, l0 = self.joined.to_cell(e.span.line)
            c1, l1 = self.joined.to_cell(e.span.end_line)
            if c1 == c0 + 1 and e.span.end_col == 0 and l1 == 1:  # ends where the next cell starts
                c1, l1 = c0, e.span.end_line - self.joined.cell_starts[c0] + 1
            if c1 != c0:
                raise CellSpanError(f"a fix spans cells {c0 + 1} and {c1 + 1}; not applied")
            per_cell.setdefault(c0, []).append(Edit(Span(l0, e.span.col, l1, e.span.end_col), e.new_text))
        texts = list(self.texts)
        for c, cell_edits in per_cell.items():
            texts[c] = apply_edits(texts[c], cell_edits)
        return _Cells(texts)


def _apply_round(doc, fixes: list[tuple[Fix, list[Diagnostic]]], notes: list[str]):
    """All fixes at once; if that breaks the syntax, the first fix alone that keeps it valid
    (later fixes' positions refer to the old text: the next round re-checks and takes them).
    Returns the new document and the fixes applied."""
    try:
        out = doc.edited([e for f, _ in fixes for e in f.edits])
        if _parses(out.text):
            return out, list(fixes)
    except CellSpanError:
        pass
    except ValueError:
        pass
    for fix, ds in fixes:
        try:
            candidate = doc.edited(list(fix.edits))
        except CellSpanError as e:
            notes.append(f"{fix.title}: {e}")
            continue
        except ValueError:
            continue
        if _parses(candidate.text):
            return candidate, [(fix, ds)]
        notes.append(f"{fix.title}: the fix would make the file invalid Python; not applied")
    return doc, []


def _key(d: Diagnostic) -> tuple:
    return d.code, d.span.line, d.span.col, d.message


def _fix_loop(doc, diagnostics: list[Diagnostic], unsafe: bool, recheck, notes: list[str]):
    """Rounds of fixes, each re-checked (as ruff does). A fix whose finding survives it is undone and
    never offered again in this run, so that `--fix` twice changes nothing the second time."""
    fixed: list[str] = []
    seen, tried, stuck = {doc.text}, set(), set()
    for _ in range(MAX_FIX_ROUNDS):
        pending = [d for d in diagnostics if _key(d) not in tried]
        fixes = _fixes_to_apply(pending, unsafe, stuck)
        if not fixes:
            break
        new, applied = _apply_round(doc, fixes, notes)
        if not applied:
            tried.update(_key(d) for _, ds in fixes for d in ds)
            continue
        after = recheck(new.text)
        unresolved = _unresolved(applied, after)
        if unresolved:
            for fix, ds in unresolved:
                stuck.update(_fix_identity(d) for d in ds)
                notes.append(f"{fix.title}: the fix does not resolve the finding; not applied")
            applied = [a for a in applied if a not in unresolved]
            if not applied:
                continue
            new, applied = _apply_round(doc, applied, notes)
            if not applied:
                continue
            after = recheck(new.text)
        if new.text in seen:  # fixes undoing each other: stop
            break
        seen.add(new.text)
        tried.update(_key(d) for _, ds in applied for d in ds)
        doc = new
        fixed.extend(d.code for _, ds in applied for d in ds)
        diagnostics = after
    return doc, fixed


def fix_source(source: str, diagnostics: list[Diagnostic], unsafe: bool = False, *, path: str | None = None,
               config: Config | None = None, roots: tuple[str, ...] = ()) -> tuple[str, list[str], list[str]]:
    """apply_fixes with the details: (new source, code of each finding fixed, notes on fixes
    not applied)."""
    notes: list[str] = []

    def recheck(text: str) -> list[Diagnostic]:
        return check_source(text, path, config, roots=roots).diagnostics

    doc, fixed = _fix_loop(_Program(source), diagnostics, unsafe, recheck, notes)
    return doc.text, fixed, list(dict.fromkeys(notes))


def apply_fixes(source: str, diagnostics: list[Diagnostic], unsafe: bool = False, *,
                path: str | None = None, config: Config | None = None) -> tuple[str, int]:
    text, fixed, _ = fix_source(source, diagnostics, unsafe, path=path, config=config)
    return text, len(fixed)


def _cell_texts(src: SourceFile) -> list[str]:
    assert src.notebook is not None
    out = []
    for i in src.cell_indices:
        s = src.notebook["cells"][i].get("source", "")
        out.append(normalize("".join(s) if isinstance(s, list) else s))
    return out


def _fix_notebook(src: SourceFile, result: FileResult, unsafe: bool,
                  config: Config | None, roots: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Fix the code cells in `src.notebook` (in memory); (codes fixed, notes)."""
    notes: list[str] = []
    original = _cell_texts(src)

    def recheck(text: str) -> list[Diagnostic]:
        return check_source(text, src.path, config, roots=roots).diagnostics

    doc, fixed = _fix_loop(_Cells(original), result.diagnostics, unsafe, recheck, notes)
    for before, after, i in zip(original, doc.texts, src.cell_indices):
        if before != after:
            cell = src.notebook["cells"][i]  # type: ignore[index]
            cell["source"] = lines_with_ends(after) if isinstance(cell.get("source"), list) else after
    return fixed, list(dict.fromkeys(notes))


# -- files on disk (the CLI) ----------------------------------------------------------------------

@dataclass
class CheckedFile:
    path: str
    result: FileResult
    cells: JoinedCells | None = None
    fixed_codes: tuple[str, ...] = ()  # one code per finding resolved by --fix
    notes: tuple[str, ...] = ()  # fixes not applied and why, write errors, ...

    diff: str = ""  # --diff: what --fix would change (the file is not written)

    @property
    def fixed(self) -> int:
        return len(self.fixed_codes)

    @property
    def error_code(self) -> str | None:
        return error_code(self.result)


def _notebook_json(src: SourceFile) -> str:
    # Keep Jupyter's layout: the indent the file used (1 by default), non-ASCII kept, final newline.
    raw = src.raw_json
    second = raw.split("\n", 2)[1] if raw.count("\n") >= 1 else ""
    indent = len(second) - len(second.lstrip(" ")) or 1
    return json.dumps(src.notebook, indent=indent, ensure_ascii=False) + ("\n" if raw.endswith("\n") else "")


def write_atomically(path: str, text: str, encoding: str) -> None:
    """Replace `path`'s contents in one step (a crash leaves the old or the new file, never half),
    keeping its permissions."""
    target = Path(path)
    mode = target.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".devflow-tmp", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def check_file(path: str, config: Config | None = None, fix: bool = False, unsafe: bool = False,
               diff_only: bool = False, roots: tuple[str, ...] = ()) -> CheckedFile:
    """Check one file on disk (fixing it first when `fix`); never raises. With `diff_only` the
    file is left alone and `CheckedFile.diff` holds the unified diff the fixes would make. `roots`:
    folders where imports of project files resolve (the folders `devflow check` was given, as an
    editor's workspace folders)."""
    try:
        src = read_source(path)
    except FileProblem as e:
        return CheckedFile(path, _failed(path, E_IO, str(e)))
    except Exception as e:  # noqa: BLE001
        return CheckedFile(path, _failed(path, E_INTERNAL, f"internal error: {type(e).__name__}: {e}"))
    result = with_cell_errors(check_source(src.text, path, config, roots=roots), src.cells)
    if not fix or result.error is not None or not any(d.fix for d in result.diagnostics):
        return CheckedFile(path, result, src.cells)
    notes: list[str] = []
    try:
        if src.notebook is not None:
            fixed, notes = _fix_notebook(src, result, unsafe, config, roots)
            new_text = _notebook_json(src) if fixed else None
        else:
            new_source, fixed, notes = fix_source(src.text, result.diagnostics, unsafe, path=path, config=config,
                                                  roots=roots)
            new_text = new_source if fixed else None
        if new_text is not None and diff_only:
            old_text = src.raw_json if src.notebook is not None else src.text
            diff = "".join(difflib.unified_diff(lines_with_ends(old_text), lines_with_ends(new_text),
                                                fromfile=path, tofile=path))
            return CheckedFile(path, result, src.cells, tuple(fixed), tuple(notes), diff)
        if new_text is not None:
            write_atomically(path, new_text, src.encoding)
    except OSError as e:
        return CheckedFile(path, result, src.cells, (), (f"could not write the fixes: {e.strerror or e}",))
    except Exception as e:  # noqa: BLE001 - a broken fix must not lose the report
        return CheckedFile(path, result, src.cells, (), (f"fixing failed: {type(e).__name__}: {e}",))
    if not fixed:
        return CheckedFile(path, result, src.cells, (), tuple(notes))
    after = check_file(path, config, roots=roots)
    return CheckedFile(path, after.result, after.cells, tuple(fixed), tuple(notes))


def fix_file(path: str, config: Config | None = None, unsafe: bool = False) -> CheckedFile:
    return check_file(path, config, fix=True, unsafe=unsafe)


__all__ = [
    "CheckedFile", "FileProblem", "PSEUDO_CODES", "SourceFile", "apply_fixes", "check_file", "check_path",
    "check_source", "error_code", "with_cell_errors", "fix_file", "fix_source", "read_source", "write_atomically",
]
