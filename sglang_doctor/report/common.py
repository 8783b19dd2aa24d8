"""Small helpers the machine and Markdown formats share."""

from __future__ import annotations

from sglang_doctor.model import Finding, Report



def input_name(report: Report, index: int) -> str:
    return report.inputs[index].name if 0 <= index < len(report.inputs) else "<input>"


def is_file_input(name: str) -> bool:
    """Inputs read from a file (not stdin, pasted text or another pseudo-input)."""
    return not (name.startswith("<") and name.endswith(">")) and name != "-"


def first_location(report: Report, f: Finding) -> tuple[str, int | None]:
    if not f.evidence:
        return input_name(report, 0), None
    ev = f.evidence[0]
    return input_name(report, ev.input), ev.line


def summary_line(report: Report) -> str:
    s = report.summary
    line = f"{s.get('error', 0)} error(s), {s.get('warning', 0)} warning(s), {s.get('info', 0)} info"
    if report.suppressed:
        line += f", {report.suppressed} suppressed"
    return line
