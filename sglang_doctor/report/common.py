"""Small helpers the formats share."""

from __future__ import annotations

import os
from dataclasses import dataclass

from sglang_doctor.model import COMMAND_LINE, SEVERITIES, Evidence, Finding, Report, rule_page

# The project's repository; rule pages live under docs/rules/ there. DOCS_BASE_URL is what
# a finding's `docs` path (docs/rules/<code>-<id>.md) is appended to (SARIF helpUri, the text
# report's last line). The environment variable SGLANG_DOCTOR_DOCS_URL replaces it (a fork, a
# mirror, a tag).
REPO_URL = "https://github.com/sglang-doctor/sglang-doctor"
DOCS_BASE_URL = REPO_URL + "/blob/main/"
DOCS_URL_ENV = "SGLANG_DOCTOR_DOCS_URL"


def docs_base_url() -> str:
    base = os.environ.get(DOCS_URL_ENV) or DOCS_BASE_URL
    return base if base.endswith("/") else base + "/"


def docs_path(f: Finding) -> str:
    return f.docs or rule_page(f.code, f.rule)



def input_name(report: Report, index: int) -> str:
    return report.inputs[index].name if 0 <= index < len(report.inputs) else "<input>"


def is_file_input(name: str) -> bool:
    """Inputs read from a file (not stdin, pasted text or another pseudo-input)."""
    return not (name.startswith("<") and name.endswith(">")) and name != "-"


def first_location(report: Report, f: Finding) -> tuple[str, int | None]:
    """The input and line of a finding's first evidence (no line: none, or the launch command)."""
    if not f.evidence:
        return input_name(report, 0), None
    ev = f.evidence[0]
    return input_name(report, ev.input), (None if ev.line == COMMAND_LINE else ev.line)


def where(ev: Evidence, names: list[str], multi: bool = True) -> str:
    """`launch.log:34` (`line 34` for stdin alone), or `--cmd` for the launch command given apart."""
    if ev.line == COMMAND_LINE:
        return "--cmd"
    name = names[ev.input] if 0 <= ev.input < len(names) else "?"
    return f"{name}:{ev.line}" if multi or name != "<stdin>" else f"line {ev.line}"


def evidence_groups(evidence: list[Evidence]) -> list[list[Evidence]]:
    """Evidence lines with the same text (every rank logging the same error) as one group each,
    in order of first appearance: a report quotes each text once."""
    groups: dict[str, list[Evidence]] = {}
    for ev in evidence:
        groups.setdefault(ev.text.strip(), []).append(ev)
    return list(groups.values())


def counts(summary: dict[str, int]) -> str:
    """`1 error, 2 warnings, 3 info`: the severities that occur, most severe first."""
    parts = []
    for sev in SEVERITIES:
        n = summary.get(sev, 0)
        if n:
            parts.append(f"{n} {sev}" + ("s" if n != 1 and sev != "info" else ""))
    return ", ".join(parts) or "no findings"


def root_cause(report: Report) -> Finding | None:
    """The finding the report leads with: the first error that follows from nothing (findings
    are ranked root cause first)."""
    return next((f for f in report.findings if f.severity == "error" and not f.consequence_of), None)


@dataclass
class InputTally:
    """One input's share of a report: its findings by severity and their codes."""

    name: str
    summary: dict[str, int]
    codes: list[str]
    error: str | None = None  # why it could not be read


def input_tallies(report: Report) -> list[InputTally]:
    """Per input, in input order: a finding belongs to the input of its first evidence line."""
    out = [InputTally(i.name, {s: 0 for s in SEVERITIES}, [], i.error) for i in report.inputs]
    for f in report.findings:
        idx = f.evidence[0].input if f.evidence else 0
        if 0 <= idx < len(out):
            out[idx].summary[f.severity] += 1
            if f.code not in out[idx].codes:
                out[idx].codes.append(f.code)
    return out


def tally_line(t: InputTally) -> str:
    """`1 error, 2 info  SGD401 SGD730`, `no known problem` or `unreadable: …`."""
    if t.error:
        return f"unreadable: {t.error.replace(t.name + ': ', '')}"
    if not any(t.summary.values()):
        return "no known problem"
    return f"{counts(t.summary)}  {' '.join(t.codes)}"


def summary_line(report: Report) -> str:
    line = counts(report.summary)
    if report.suppressed:
        line += f", {report.suppressed} suppressed"
    return line
