"""`devflow.runtime.install()`: print the placement report on cross-device errors (notebooks, sitecustomize).

Standard library only at import time; the probe looks torch up lazily.
"""

from __future__ import annotations

import sys

from . import messages
from .probe import placement_report
from .render import render_text

_installed = {"done": False}


def report_for(exc: BaseException) -> dict | None:
    """The report when `exc` is a cross-device error, else None (never raises)."""
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - an exception whose __str__ raises: not ours to explain
        return None
    try:
        if messages.parse_message(text, type(exc).__name__) is None:
            return None
        return placement_report(exc)
    except BaseException as e:  # noqa: BLE001 - a broken probe must not hide the user's traceback
        try:
            print(f"devflow: the placement probe failed: {type(e).__name__}", file=sys.stderr)
        except BaseException:  # noqa: BLE001 - a closed stderr
            pass
        return None


def install() -> None:
    """Chain a sys.excepthook (and IPython's custom exception handler when running under IPython)."""
    if _installed["done"]:
        return
    _installed["done"] = True
    previous = sys.excepthook

    def excepthook(etype, value, tb):
        rep = report_for(value) if value is not None else None
        if rep is not None:
            sys.stderr.write(render_text(rep, color=sys.stderr.isatty()))
        previous(etype, value, tb)

    sys.excepthook = excepthook
    ipython = _get_ipython()
    if ipython is not None:
        def handler(shell, etype, value, tb, tb_offset=None):
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            rep = report_for(value)
            if rep is not None:
                print(render_text(rep))
            return None

        try:
            ipython.set_custom_exc((Exception,), handler)
        except Exception:  # noqa: BLE001
            pass


def _get_ipython():
    mod = sys.modules.get("IPython")
    if mod is None:
        return None
    try:
        return mod.get_ipython()
    except Exception:  # noqa: BLE001
        return None
