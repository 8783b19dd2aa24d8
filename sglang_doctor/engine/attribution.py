"""Several logs of one deployment (one per node or rank) read together.

`engine.rank_findings` puts the root cause first within one input. When a rank crashes,
the other ranks and nodes usually log only the aftermath - an NCCL watchdog timeout, a
closed gloo connection, "Received sigquit from a child process" - and their own input
has nothing that explains it. Here the per-input findings are merged on the logs' clocks:

- the root cause is the earliest error, across all inputs, that is not a consequence rule
  (`consequence: true`); it is listed first;
- a consequence finding of another input that its own input did not explain, and that
  was logged at or after the root cause, is attributed to it: `consequence_of` names the
  root's rule, the explanation says which input and line, and it no longer counts as an
  error;
- the rest are ordered by severity, then by time (findings without a time after those
  with one), then by input and line.

Times are those of the log headers, to the second, compared as written: the logs of
several nodes are only comparable when the nodes' clocks agree (NTP) and use one time
zone. Without timestamps the per-input order is kept.
"""

from __future__ import annotations

from typing import Any

from sglang_doctor.model import Finding, mark_consequence
from sglang_doctor.model import SEVERITY_RANK
from sglang_doctor.engine.rules import Rule

_LATE = "~"  # sorts after any ISO timestamp: findings with no time go last


def finding_ts(f: Finding) -> str | None:
    """When the finding was first logged: the earliest time on its evidence."""
    times = [e.ts for e in f.evidence if e.ts]
    return min(times) if times else None


def attribute(findings: list[Finding], rules: list[Rule], input_names: list[str]) -> list[Finding]:
    """Cross-input root cause and consequences; returns the findings in report order."""
    inputs_with_time = {f.evidence[0].input for f in findings if f.evidence and finding_ts(f)}
    if len(inputs_with_time) < 2:
        return findings
    by_id = {r.id: r for r in rules}

    def rule_of(f: Finding) -> Any:
        return by_id.get(f.rule)

    def flag(f: Finding, name: str) -> bool:
        r = rule_of(f)
        return bool(r is not None and getattr(r, name))

    def where(f: Finding) -> tuple[int, int]:
        return (f.evidence[0].input, f.evidence[0].line) if f.evidence else (len(input_names), 0)

    def priority(f: Finding) -> int:
        r = rule_of(f)
        return r.priority if r is not None else 50

    roots = [f for f in findings if f.severity == "error" and not flag(f, "consequence")
             and not f.consequence_of and finding_ts(f)]
    root = min(roots, key=lambda f: (finding_ts(f), flag(f, "fallback"), *where(f), -priority(f)), default=None)
    if root is not None:
        root_ts = finding_ts(root)
        assert root_ts is not None
        root_input, root_line = where(root)
        name = input_names[root_input] if root_input < len(input_names) else "?"
        on = f" on {root.evidence[0].rank}" if root.evidence and root.evidence[0].rank else ""
        for f in findings:
            ts = finding_ts(f)
            # Explained in its own input by a real cause (not just by another symptom there)?
            explained = bool(f.consequence_of) and not (by_id.get(f.consequence_of) is not None
                                                        and by_id[f.consequence_of].consequence)
            if (f is root or not flag(f, "consequence") or explained or ts is None or ts < root_ts
                    or where(f)[0] == root_input):
                continue
            mark_consequence(f, root, f"{on.strip() + ', ' if on else ''}{name} line {root_line}, at "
                                      f"{root_ts.replace('T', ' ')}; the first error across these logs")

    def key(f: Finding) -> tuple[Any, ...]:
        return (f is not root, SEVERITY_RANK[f.severity], bool(f.consequence_of or flag(f, "consequence")),
                flag(f, "fallback"), finding_ts(f) or _LATE, *where(f), -priority(f))

    return sorted(findings, key=key)
