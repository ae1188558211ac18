"""Python's line model (`\\n`, `\\r\\n`, `\\r`) across the engine, fixes, noqa and notebooks.

Property tests over every fixture and sample, with a seeded generator (reproducible; the seed is
in the failure message): characters that `str.splitlines()` breaks at but Python does not, put in
comments and docstrings, never change the findings; CRLF and CR files get the findings of the LF
file; no quick fix and no Fix All ever leaves code that does not parse, and fixes keep the file's
line ending.
"""

from __future__ import annotations

import ast
import io
import random
import re
import tokenize
from pathlib import Path

import pytest

from devflow import api, lines, noqa
from devflow.edits import apply_edits
from devflow.notebook import join_cells

ROOT = Path(__file__).resolve().parents[3]
ODD = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
SEED = 20261123
FILES = sorted(p for d in ("tests/fixtures", "samples") for p in (ROOT / d).rglob("*.py"))


def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
        return True
    except (SyntaxError, ValueError):
        return False


def _findings(source: str) -> list[tuple]:
    r = api.check_source(source, "t.py")
    return [(d.code, d.span.line, d.span.col, d.span.end_line, d.span.end_col, d.message) for d in r.diagnostics] + (
        [("error", r.error)] if r.error else [])


def _insertion_points(source: str) -> list[int]:
    """String offsets inside comments and docstrings, where any character is inert."""
    starts = lines.line_starts(source)
    tree = ast.parse(source)
    docstring_lines = {
        n.body[0].value.lineno
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
        and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
        and isinstance(n.body[0].value.value, str)
    }
    points = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        (line, col) = tok.start
        if tok.type == tokenize.COMMENT:
            points.append(starts[line - 1] + col + 1 + (len(tok.string) - 1) // 2)
        elif tok.type == tokenize.STRING and line in docstring_lines and tok.string.startswith(('"""', "'''")):
            points.append(starts[line - 1] + col + 3)
    return points


def _mutants(source: str, rng: random.Random, n: int):
    points = _insertion_points(source)
    for _ in range(n if points else 0):
        out = source
        for at in sorted(rng.sample(points, min(len(points), rng.randint(1, 3))), reverse=True):
            out = out[:at] + "".join(rng.choice(ODD) for _ in range(rng.randint(1, 3))) + out[at:]
        yield out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_odd_characters_in_comments_and_docstrings_never_change_findings(path: Path) -> None:
    source = _source(path)
    if not _parses(source):
        pytest.skip("not valid Python (a syntax-error fixture)")
    rng = random.Random(f"{SEED}:{path.name}")
    expected = _findings(source)
    for i, mutant in enumerate(_mutants(source, rng, 4)):
        assert _parses(mutant)
        assert _findings(mutant) == expected, f"seed {SEED}, mutant {i} of {path.name}: {mutant[:300]!r}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_crlf_and_cr_files_have_the_findings_of_the_lf_file(path: Path, newline: str) -> None:
    source = _source(path)
    if not _parses(source):
        pytest.skip("not valid Python")
    assert _findings(source.replace("\n", newline)) == _findings(source)


def _fixed_sources(source: str):
    """(what, text) for each quick fix applied alone and for Fix All (safe and unsafe)."""
    result = api.check_source(source, "t.py")
    for d in result.diagnostics:
        if d.fix is not None:
            yield f"quick fix of {d.code} at line {d.span.line}", apply_edits(source, d.fix.edits)
    for unsafe in (False, True):
        text, _, _ = api.fix_source(source, result.diagnostics, unsafe, path="t.py")
        yield f"fix all (unsafe={unsafe})", text


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_fix_ever_yields_code_that_does_not_parse(path: Path) -> None:
    source = _source(path)
    if not _parses(source):
        pytest.skip("not valid Python")
    rng = random.Random(f"{SEED}:fix:{path.name}")
    variants = [source, *_mutants(source, rng, 2)]
    variants += [v.replace("\n", nl) for v in variants[:2] for nl in ("\r\n", "\r")]
    for variant in variants:
        newline = lines.line_ending(variant)
        for what, text in _fixed_sources(variant):
            assert _parses(text), f"{what} in {path.name} ({newline!r} lines) does not parse:\n{text}"
            if newline != "\n":  # the fix kept the file's line ending: no bare "\n" appeared
                assert text.replace(newline, "").count("\n") == 0, f"{what} mixed line endings in {path.name}"


def test_a_form_feed_above_a_fix_keeps_the_fix_in_place() -> None:
    """The issue's case: the DEV101 quick fix produced `model.head = nn.Linear(8, 2) = nn.Seque`."""
    source = _source(ROOT / "samples/01_head_replaced_after_move.py")
    for odd in ODD:
        mutated = f"#{odd} page break\n\x0c\n" + source
        fixes = [d.fix for d in api.check_source(mutated, "t.py").diagnostics if d.fix]
        assert fixes, odd
        for fix in fixes:
            assert _parses(apply_edits(mutated, fix.edits)), repr(odd)


def test_line_helpers_follow_python() -> None:
    text = "a\x0cb\r\nc\rd\u2028e\n"
    assert lines.split_lines(text) == ["a\x0cb", "c", "d\u2028e", ""]
    assert "".join(lines.lines_with_ends(text)) == text
    assert lines.line_starts(text) == [0, 5, 7, 11]
    assert lines.line_count(text) == 4 == len(ast.parse("x=1\x0c\r\ny=2\rz=3\n").body) + 1
    assert lines.line_ending("x\r\ny\n") == "\r\n" and lines.line_ending("x") == "\n"


def test_noqa_lines_follow_python() -> None:
    source = "import torch  # \x0c\u2028 note\rx = 1  # noqa: DEV101\n"
    sup = noqa.parse(source)
    assert sup.by_line == {2: frozenset({"DEV101"})}
    broken = "x = (  # \x85\ny = 2  # noqa\n"  # tokenize gives up: the line scan
    assert 2 in noqa.parse(broken).by_line


def test_notebook_cells_map_lines_by_python() -> None:
    joined = join_cells(["a = 1  # \u2028\rb = 2", "c = 3\r\n"])
    assert joined.cell_starts == (1, 3)
    assert joined.to_cell(3) == (1, 1)


def test_line_helpers_fast_paths_agree_with_the_regex_model() -> None:
    breaks = re.compile(r"\r\n|\r|\n")
    rng = random.Random(SEED)
    alphabet = ["a", " ", "\n", "\r", "\r\n", *ODD]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert lines.split_lines(text) == breaks.split(text), repr(text)
        ends = [text[a:b] for a, b in zip(lines.line_starts(text), lines.line_starts(text)[1:] + [len(text)]) if a < b]
        assert lines.lines_with_ends(text) == ends, repr(text)
        assert lines.line_starts(text) == [0] + [m.end() for m in breaks.finditer(text)], repr(text)
        assert lines.line_count(text) == len(breaks.findall(text)) + 1
