"""The isolation audit: does the cluster still honour its pools, and is it healthy and within capacity?"""

from pools.audit.audit import audit, fails
from pools.audit.findings import (
    FINDINGS_VERSION,
    Finding,
    Severity,
    findings_from_dict,
    findings_to_dict,
    findings_to_json,
    sort_findings,
)
from pools.audit.loads import Loads, audit_loads
from pools.audit.render import render_findings_md
from pools.audit.rules import RULES, Rule

__all__ = [
    "audit",
    "fails",
    "audit_loads",
    "Loads",
    "Finding",
    "Severity",
    "Rule",
    "RULES",
    "FINDINGS_VERSION",
    "findings_to_dict",
    "findings_to_json",
    "findings_from_dict",
    "sort_findings",
    "render_findings_md",
]
