"""The language server's pure helpers: position encodings, the noqa edit, settings, the garbage policy."""

from __future__ import annotations

import asyncio
import gc

import pytest

from devflow.lsp.gc_policy import MAX_DEFERRED, MAX_RETAINED_LINES, Collector
from devflow.lsp.noqa import noqa_edit
from devflow.lsp.positions import from_units, to_units
from devflow.lsp.settings import Settings, from_client, parse_args
from devflow.model import Edit, Span

LINE = 'x = "é€🔥" + y'  # 2-byte, 3-byte and astral characters before `y`


@pytest.mark.parametrize("encoding,expected", [("utf-8", 16), ("utf-16", 11), ("utf-32", 10)])
def test_column_round_trip(encoding, expected):
    col = LINE.index("+")
    assert to_units(LINE, col, encoding) == expected
    assert from_units(LINE, expected, encoding) == col
    for c in range(len(LINE) + 1):
        assert from_units(LINE, to_units(LINE, c, encoding), encoding) == c


def test_positions_clamp_and_round_down():
    assert to_units("abc", 10, "utf-16") == 3
    assert from_units("abc", 10, "utf-8") == 3
    # Inside the surrogate pair of 🔥 (utf-16) or inside € (utf-8): the character itself.
    fire = LINE.index("🔥")
    assert from_units(LINE, to_units(LINE, fire, "utf-16") + 1, "utf-16") == fire
    euro = LINE.index("€")
    assert from_units(LINE, to_units(LINE, euro, "utf-8") + 2, "utf-8") == euro


@pytest.mark.parametrize("line,expected", [
    ("model.head = nn.Linear(8, 2)", Edit(Span(3, 28, 3, 28), "  # noqa: DEV101")),
    ("model.head = nn.Linear(8, 2)   ", Edit(Span(3, 28, 3, 31), "  # noqa: DEV101")),
    ("x = 1  # keep this", Edit(Span(3, 18, 3, 18), "  # noqa: DEV101")),
    ("x = 1  # noqa: DEV102", Edit(Span(3, 21, 3, 21), ", DEV101")),
    ("x = 1  # NOQA:DEV102,DEV201 why", Edit(Span(3, 27, 3, 27), ", DEV101")),
])
def test_noqa_edit(line, expected):
    assert noqa_edit(line, 3, "DEV101") == expected


@pytest.mark.parametrize("line", ["x = 1  # noqa", "x = 1  # noqa: DEV101", "x = 1  # noqa: dev102, DEV101"])
def test_noqa_edit_not_needed(line):
    assert noqa_edit(line, 1, "DEV101") is None


def test_select_ignore_longest_match_wins():
    s = parse_args(["--select", "DEV1,DEV301", "--ignore", "DEV10"])
    assert s.selects("DEV111") and s.selects("DEV301")
    assert not s.selects("DEV101") and not s.selects("DEV201")
    s = parse_args(["--ignore", "DEV1", "--select", "DEV101"])
    assert s.selects("DEV101") and not s.selects("DEV102") and not s.selects("DEV201")
    assert Settings().selects("DEV601")


def test_client_settings_are_validated():
    cli = parse_args(["--ignore", "DEV6"])
    s = from_client({"settings": {"enable": "yes", "severity": {"dev1": "warning", "DEV2": "loud"},
                                  "debounceMs": -5, "inlayHints": {"enable": True},
                                  "args": ["--select", "DEV1", "--bogus"]}}, cli)
    assert s.enable is True  # a non-bool is ignored
    assert s.severity == {"DEV1": "warning"}  # bad values dropped, codes upper-cased
    assert s.debounce_ms == 150 and s.inlay_hints is True
    assert s.select == ("DEV1",) and s.ignore == ("DEV6",) and s.unknown_args == ("--bogus",)
    assert s.severity_of("DEV101", "error") == "warning" and s.severity_of("DEV201", "error") == "error"
    assert from_client(None, cli) == cli and from_client(["x"], cli) == cli


def test_held_analyses_are_freed_at_the_line_cap_or_the_result_cap():
    """What analyses leave is held for a quiet moment, but never past 50,000 lines or 25 results."""
    loop, was_enabled = asyncio.new_event_loop(), gc.isenabled()
    try:
        c = Collector()
        c.install(loop)  # turns automatic collection off, as in the server
        c.keep(MAX_RETAINED_LINES // 2, ["tree"])
        c.after_result()
        assert len(c.retained) == 1  # held until the editor is quiet
        c.keep(MAX_RETAINED_LINES // 2, ["tree"])
        c.after_result()
        assert c.retained == []  # two 25,000-line analyses: freed at once
        for _ in range(MAX_DEFERRED - 1):
            c.keep(10, ["tree"])
            c.after_result()
        assert len(c.retained) == MAX_DEFERRED - 1
        c.keep(10, ["tree"])
        c.after_result()
        assert c.retained == []
    finally:
        if was_enabled:
            gc.enable()
        loop.close()


def test_a_grown_program_cache_is_frozen_out_of_later_collections(tmp_path, monkeypatch):
    import gc

    from devflow.analysis import program
    from devflow.lsp import gc_policy

    monkeypatch.setattr(gc_policy, "FREEZE_CHARS", 1000)
    program.clear_cache()
    c = Collector()
    c.frozen_at = program.cache_stats()["parsed_total"]
    c._collect()
    frozen = gc.get_freeze_count()
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("import torch\n" + "x = torch.zeros(3)\n" * 100)
        program.load_file(str(tmp_path / f"m{i}.py"), f"m{i}")
    c._collect()
    assert gc.get_freeze_count() > frozen  # the parsed files are out of the collector's sight
    assert c.frozen_at == program.cache_stats()["parsed_total"]
    again = gc.get_freeze_count()
    c._collect()
    assert gc.get_freeze_count() == again  # nothing new parsed: no freeze
    gc.unfreeze()
    program.clear_cache()
