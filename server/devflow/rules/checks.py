"""Every rule implementation, in code order."""

from __future__ import annotations

from devflow.rules import defaults, frameworks, hf, placement, resume, tensors

ALL_RULES = sorted(placement.RULES + tensors.RULES + frameworks.RULES + resume.RULES + hf.RULES + defaults.RULES, key=lambda r: r.code)
