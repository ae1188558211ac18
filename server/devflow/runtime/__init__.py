"""Runtime half of devflow: explain a cross-device error when it happens.

probe.py (placement report) and messages.py (message parser) are stdlib + torch only and are
injected by source into debuggees; cli.py is `devflow run`; hook.py is `install()`.
"""

from __future__ import annotations


def install() -> None:
    """Print a device placement report before the traceback of any cross-device error."""
    from .hook import install as _install

    _install()


def placement_report(exc=None, **kwargs) -> dict:
    from .probe import placement_report as _report

    return _report(exc, **kwargs)


__all__ = ["install", "placement_report"]
