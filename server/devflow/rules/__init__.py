"""devflow's rules: the registry (`RULES`, `doc_url`) and the rule implementations.

`RULES` maps a code ("DEV101") to its `RuleInfo` (code, name, family, summary, fix
applicability or None, doc path). Rule implementations live in one module per family and are
collected by `devflow.rules.checks.ALL_RULES`.
"""

from devflow.rules.registry import DYNAMIC_RULES, FAMILIES, RULES, RuleInfo, doc_url

__all__ = ["DYNAMIC_RULES", "FAMILIES", "RULES", "RuleInfo", "doc_url"]
