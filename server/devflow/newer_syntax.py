"""Valid code in a grammar newer than the Python running devflow.

devflow analyses `ast` trees of the running interpreter, whose parser rejects syntax added in later
versions (PEP 695 type parameters and `type` aliases, PEP 701 f-strings in 3.12, template strings in
3.14). Reporting such a file as a syntax error (E999) would be false. libcst's native parser
accepts the newest grammar regardless of the interpreter: when it parses the file and the error
lies in a construct of a newer grammar, the file gets a notice that names the limit and the way
out instead.
"""

from __future__ import annotations

import sys

CODE = "E998"  # a file devflow cannot check with this interpreter (not an error in the file)

# libcst node -> (the Python version that added it to the grammar, what to call it)
_NEWER = {
    "TypeAlias": ((3, 12), "a `type` alias statement"),
    "TypeParameters": ((3, 12), "a type parameter list"),
    "FormattedString": ((3, 12), "an f-string in the 3.12 grammar (PEP 701)"),
    "TemplatedString": ((3, 14), "a template string"),
}


def notice(source: str, error_line: int | None) -> str | None:
    """The message for `source`, which this interpreter's `ast` rejected at `error_line`, when the
    rejection comes from syntax of a newer Python; None for a genuine syntax error."""
    try:
        import libcst as cst
        from libcst.metadata import MetadataWrapper, PositionProvider

        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
    except Exception:  # noqa: BLE001 - not valid in any grammar libcst knows: a real syntax error
        return None
    best = None
    for node, pos in positions.items():
        known = _NEWER.get(type(node).__name__)
        if known is None or known[0] <= sys.version_info[:2]:
            continue
        if error_line is not None and not pos.start.line <= error_line <= pos.end.line:
            continue
        if best is None or pos.start.line < best[1]:
            best = (known, pos.start.line)
    if best is None:
        return None
    (version, what), line = best
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    need = f"{version[0]}.{version[1]}"
    return (f"this file uses Python {need}+ syntax ({what} at line {line}) that Python {running}, which runs "
            f"devflow, cannot parse; it was not checked. Run devflow on Python {need} or newer (in VS Code: "
            f"point the devflow.interpreter setting at it).")
