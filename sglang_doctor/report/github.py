"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

    ::error file=logs/launch.log,line=34,title=SGD401 Model runs in float16 …::A float16 tensor …

error → `::error`, warning → `::warning`, info → `::notice`. Properties escape `%`, CR,
LF, `:` and `,`; the message escapes `%`, CR and LF (GitHub's rules for workflow
commands). A path under $GITHUB_WORKSPACE is made relative to it so the annotation lands
on the file in the diff view.

GitHub shows at most 10 annotations of each kind per step. When GITHUB_STEP_SUMMARY is set
the whole report is also appended to the job summary as Markdown, and a notice says so
when annotations were cut.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from sglang_doctor.model import Finding, Report
from sglang_doctor.report.common import first_location, is_file_input, summary_line
from sglang_doctor.report.fixes import describe_fix

KIND = {"error": "error", "warning": "warning", "info": "notice"}
GITHUB_LIMIT = 10  # annotations of one kind GitHub keeps per step


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **props: Any) -> str:
    """One workflow command line: ::kind k=v,k=v::message"""
    p = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items() if v is not None)
    return f"::{kind}{' ' + p if p else ''}::{escape_data(message)}"


def _path(name: str) -> str:
    ws = os.environ.get("GITHUB_WORKSPACE")
    p = Path(name)
    if ws and p.is_absolute():
        try:
            return p.resolve().relative_to(Path(ws).resolve()).as_posix()
        except ValueError:
            pass
    return p.as_posix()


def _message(f: Finding) -> str:
    lines = [f.explanation or f.title]
    for i, fx in enumerate(f.fixes):
        lines.append(("fix: " if i == 0 else "or: ") + describe_fix(fx))
    lines.append(f"rule {f.rule}" + (f" ({f.docs})" if f.docs else ""))
    return "\n".join(lines)


def _annotation(report: Report, f: Finding) -> str:
    name, line = first_location(report, f)
    props: dict[str, Any] = {}
    if is_file_input(name):
        props["file"] = _path(name)
        props["line"] = line
    props["title"] = f"{f.code} {f.title}"
    return command(KIND[f.severity], _message(f), **props)


def _append_summary(report: Report, path: str, cut: dict[str, int]) -> bool:
    from sglang_doctor.report.markdown import render

    md = render(report, heading="##")
    if cut:
        md += "\n" + " ".join(f"GitHub kept the first {GITHUB_LIMIT} {k} annotations of this step and dropped {n}; "
                               "every finding is listed above." for k, n in cut.items()) + "\n"
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(md + "\n")
    except OSError as e:
        sys.stderr.write(f"sglang-doctor: warning: cannot append the job summary to {path}: {e.strerror or e}\n")
        return False
    return True


def write(report: Report, out: TextIO, **_: Any) -> None:
    lines: list[str] = []
    for info in report.inputs:
        if info.error:
            msg = info.error if info.name in info.error else f"{info.name}: {info.error}"
            lines.append(command("error", msg, title="sglang-doctor: cannot read input"))
    per_kind: Counter[str] = Counter()
    for f in report.findings:
        per_kind[KIND[f.severity]] += 1
        lines.append(_annotation(report, f))
    if report.corrected_command:
        lines.append(f"corrected command: {report.corrected_command}")
    lines.append(f"sglang-doctor: {summary_line(report)}")
    cut = {k: n - GITHUB_LIMIT for k, n in per_kind.items() if n > GITHUB_LIMIT}
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    wrote = bool(summary) and _append_summary(report, summary, cut)  # type: ignore[arg-type]
    if cut:
        where = "the job summary" if wrote else "--format text or --format markdown"
        lines.append(command("notice", f"GitHub shows only {GITHUB_LIMIT} annotations of each kind per step; "
                                       f"the full report is in {where}.", title="sglang-doctor"))
    out.write("\n".join(lines) + "\n")
