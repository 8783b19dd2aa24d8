"""`--format markdown`: a report ready to paste into a GitHub issue.

Findings with code, title, explanation and fixes; the corrected command in a code block;
a collapsed `<details>` block with the facts read off the log and the first evidence
lines. The report is redacted before any reporter sees it; every string is passed through
`redact_text` once more here, since this output is meant to be published.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TextIO

import re

from sglang_doctor.model import Finding, FixOut, Report
from sglang_doctor.policy.redact import redact_text
from sglang_doctor.report.common import evidence_groups, first_location, summary_line, where
from sglang_doctor.report.fixes import describe_fix, fix_label

MAX_CONTEXT_ROWS = 40
MAX_VALUE_CHARS = 160
MAX_EVIDENCE_LINES = 3
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#])")
_TICKS = re.compile(r"`+")


def text(s: str) -> str:
    """Plain text safe in Markdown: redacted, HTML-escaped, Markdown punctuation escaped."""
    s = redact_text(s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s).replace("\n", " ")


def code(s: str) -> str:
    """Inline code whose delimiter is longer than any backtick run inside it."""
    s = redact_text(s).replace("\n", " ")
    run = max((len(m) for m in _TICKS.findall(s)), default=0)
    tick = "`" * (run + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or run else ""
    return f"{tick}{pad}{s}{pad}{tick}"


def block(s: str, lang: str = "text") -> list[str]:
    """A fenced code block whose fence no line inside can close."""
    s = redact_text(s)
    run = max((len(m) for m in _TICKS.findall(s)), default=0)
    fence = "`" * max(3, run + 1)
    return [f"{fence}{lang}", s, fence]


def _fix(fx: FixOut) -> str:
    if fx.kind == "note":
        return text(fx.text or "")
    line = code(describe_fix(replace(fx, text=None)))
    return line + (f" — {text(fx.text)}" if fx.text else "")


def _finding(report: Report, f: Finding, multi: bool) -> list[str]:
    name, line = first_location(report, f)
    out = [f"### {f.severity} {f.code}: {text(f.title)}", ""]
    where = f"{name}:{line}" if line is not None else name
    meta = [f"rule {code(f.rule)}", f"at {code(where)}"]
    if f.occurrences > 1:
        meta.append(f"{f.occurrences} occurrences")
    if f.consequence_of:
        meta.append(f"follows from {code(f.consequence_of)}")
    out += [" · ".join(meta), ""]
    if f.evidence:
        out += block(f.evidence[0].text.strip()) + [""]
    if f.explanation:
        out += [text(f.explanation), ""]
    for i, fx in enumerate(f.fixes):
        out.append(f"**{fix_label(i, fx).capitalize()}:** " + _fix(fx) + "  ")
    if f.fixes:
        out.append("")
    return out


def _flatten(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            rows.extend(_flatten(v, key + "."))
        else:
            rows.append((key, v))
    return rows


def _context_rows(ctx: dict[str, Any]) -> list[tuple[str, str]]:
    # `lines` maps facts to line numbers and `server_args` repeats every flag: both are in --format json.
    skip = {"lines", "server_args", "command", "sglang_version"}  # the version is in the header
    rows = []
    for k, v in _flatten({k: v for k, v in ctx.items() if k not in skip}):
        if v is None or v == "" or v == [] or v == {}:
            continue
        s = redact_text(str(v))  # before cutting, so a cut can never split a secret past recognition
        rows.append((k, s if len(s) <= MAX_VALUE_CHARS else s[:MAX_VALUE_CHARS] + "…"))
    return rows


_PLAN_ROWS = (("outcome", "outcome"), ("failure", "failure"), ("mem_fraction_static", "--mem-fraction-static"),
              ("weights_gb", "weights per GPU (GB)"), ("kv_tokens", "KV pool (tokens)"), ("mamba_slots", "mamba slots"),
              ("max_running_requests", "max running requests"), ("context_len", "context length"))


def _preflight(p: dict[str, Any]) -> list[str]:
    """`sglang-doctor preflight`'s prediction as a table."""
    rows = [f"| {label} | {text(str(p[key]))} |" for key, label in _PLAN_ROWS if p.get(key) is not None]
    return ["### Predicted memory plan", "", "| | |", "|---|---|", *rows, ""]


def render(report: Report, heading: str = "##") -> str:
    names = [i.name for i in report.inputs]
    multi = len(names) > 1
    out = [f"{heading} sglang-doctor: {summary_line(report)}", ""]
    inputs = ", ".join(f"{code(i.name)} ({i.lines} lines)" if not i.error else f"{code(i.name)} (unreadable: {text(i.error)})"
                       for i in report.inputs)
    facts = [f"Input: {inputs or 'none'}"]
    if report.context.get("sglang_version"):
        facts.append(f"SGLang {code(str(report.context['sglang_version']))}")
    out += [" · ".join(facts), ""]
    if report.preflight is not None:
        out += _preflight(report.preflight)
    if not report.findings:
        out += ["No known problem found." + (f" ({report.suppressed} suppressed.)" if report.suppressed else ""), ""]
    for f in report.findings:
        out += _finding(report, f, multi)
    if report.corrected_command:
        head = "Command with the suggested changes" if report.context.get("corrected_command_kind") == "suggested" else "Corrected command"
        out += [f"### {head}", ""] + block(report.corrected_command, "shell") + [""]
    rows = _context_rows(report.context)
    names = [i.name for i in report.inputs]
    evidence = [(where(g[0], names), g[0].text.strip()) for f in report.findings
                for g in evidence_groups(f.evidence)[:MAX_EVIDENCE_LINES]]
    if rows or evidence or report.context.get("command"):
        out += ["<details>", "<summary>Context read from the log, and the evidence lines</summary>", ""]
        if report.context.get("command"):
            out += ["Launch command:", ""] + block(str(report.context["command"]), "shell") + [""]
        if rows:
            out += ["| fact | value |", "|---|---|"]
            out += [f"| {code(k)} | {text(v)} |" for k, v in rows[:MAX_CONTEXT_ROWS]]
            if len(rows) > MAX_CONTEXT_ROWS:
                out.append(f"| … | {len(rows) - MAX_CONTEXT_ROWS} more in `--format json` |")
            out.append("")
        if evidence:
            out += ["Evidence:", ""] + block("\n".join(f"{loc}: {t}" for loc, t in evidence)) + [""]
        out += ["</details>", ""]
    out += [f"<sub>{text(report.tool.name)} {text(report.tool.version)}</sub>", ""]
    return "\n".join(out)


def write(report: Report, out: TextIO, **_: Any) -> None:
    out.write(render(report))
