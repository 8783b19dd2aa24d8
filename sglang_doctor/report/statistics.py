"""`--statistics`: how many findings each rule gave and what each input holds, instead of the
findings themselves (like `ruff --statistics`) - for a directory of saved logs.

Text: one line per rule (findings, code, severity, id, title; errors first, then by count), one
line per input, the totals. JSON: the same as `{"rules": […], "inputs": […], "summary": {…}}`.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from sglang_doctor.model import SEVERITY_RANK, Report
from sglang_doctor.report.common import counts, input_tallies, summary_line, tally_line

# The formats --statistics writes (the others render findings, which it leaves out).
FORMATS = ("text", "json")


def rule_counts(report: Report) -> list[dict[str, Any]]:
    """Per rule: how many findings (at most one per input) and in how many inputs; the most severe
    rules first, then the most frequent."""
    rows: dict[str, dict[str, Any]] = {}
    for f in report.findings:
        row = rows.setdefault(f.rule, {"code": f.code, "rule": f.rule, "severity": f.severity, "title": f.title,
                                       "findings": 0, "occurrences": 0, "inputs": set()})
        row["findings"] += 1
        row["occurrences"] += max(f.occurrences, len(f.evidence))
        row["inputs"].add(f.evidence[0].input if f.evidence else 0)
        if SEVERITY_RANK[f.severity] < SEVERITY_RANK[row["severity"]]:
            row["severity"] = f.severity  # (a consequence elsewhere is info: the rule's worst shows)
    out = sorted(rows.values(), key=lambda r: (SEVERITY_RANK[r["severity"]], -r["findings"], r["code"]))
    for r in out:
        r["inputs"] = len(r["inputs"])
    return out


def write(report: Report, out: TextIO, fmt: str = "text") -> None:
    rules = rule_counts(report)
    tallies = input_tallies(report)
    if fmt == "json":
        data = {"rules": rules,
                "inputs": [{"name": t.name, "summary": t.summary, "codes": t.codes, **({"error": t.error} if t.error else {})}
                           for t in tallies],
                "summary": report.summary}
        if report.suppressed:
            data["suppressed"] = report.suppressed
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    width = max((len(str(r["findings"])) for r in rules), default=1)
    ids = max((len(r["rule"]) for r in rules), default=0)
    for r in rules:
        out.write(f"{r['findings']:>{width}}  {r['code']:<7} {r['severity']:<7}  {r['rule']:<{ids}}  {r['title']}\n")
    if rules:
        out.write("\n")
    names = max((len(t.name) for t in tallies), default=0)
    for t in tallies:
        out.write(f"{t.name:<{names}}  {tally_line(t)}\n")
    with_findings = sum(1 for t in tallies if any(t.summary.values()))
    total = summary_line(report) if report.findings else counts(report.summary)
    out.write(f"\n{len(tallies)} input{'s' if len(tallies) != 1 else ''}, {with_findings} with findings: {total}\n")
