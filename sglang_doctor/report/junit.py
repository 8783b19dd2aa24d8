"""`--format junit`: JUnit XML for CI test-report views (GitLab, Jenkins, Azure, …).

One <testsuite> per input. In it, one <testcase> per finding (that is, per rule that fired
on that input), named "<code> <rule id>"; a finding at or above --fail-on carries a
<failure> (type = its severity, message = its title, body = explanation, fixes and
evidence), one below it passes with the same text in <system-out>. An input with no
finding gets one passing testcase, "no known problem"; an input that could not be read
gets one with an <error>. So the failures are exactly what makes the exit status 1.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, TextIO

import re

from sglang_doctor.model import Finding, Report
from sglang_doctor.model import fails
from sglang_doctor.report.common import evidence_groups, where
from sglang_doctor.report.fixes import fix_lines

# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _x(s: str) -> str:
    return _NOT_XML.sub("\ufffd", s)


def _body(report: Report, f: Finding) -> str:
    lines = [f"{f.severity} {f.code} {f.title}  [{f.rule}]"]
    names = [i.name for i in report.inputs]
    for group in evidence_groups(f.evidence):
        times = f" ({len(group)}×)" if len(group) > 1 else ""
        lines.append(f"  {where(group[0], names)}{times} | {group[0].text.strip()}")
    if f.explanation:
        lines += ["", f.explanation]
    lines += fix_lines(f.fixes)
    if f.docs:
        lines += ["", f"docs: {f.docs}"]
    return "\n".join(lines)


def _classname(name: str) -> str:
    return "sglang-doctor." + name.replace(".", "_")


def junit_tree(report: Report, fail_on: str = "error") -> ET.Element:
    root = ET.Element("testsuites", name="sglang-doctor")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    by_input: dict[int, list[Finding]] = {i: [] for i in range(len(report.inputs))}
    for f in report.findings:
        by_input.setdefault(f.evidence[0].input if f.evidence else 0, []).append(f)
    for index, info in enumerate(report.inputs):
        suite = ET.SubElement(root, "testsuite", name=_x(info.name))
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="lines", value=str(info.lines))
        if report.context.get("sglang_version"):
            ET.SubElement(props, "property", name="sglang_version", value=_x(str(report.context["sglang_version"])))
        ET.SubElement(props, "property", name="fail_on", value=fail_on)
        for key, value in (report.preflight or {}).items():  # `sglang-doctor preflight`: the predicted plan
            ET.SubElement(props, "property", name=f"preflight.{key}", value=_x("" if value is None else str(value)))
        counts = {"tests": 0, "failures": 0, "errors": 0}
        cls = _classname(info.name)
        if info.error:
            case = ET.SubElement(suite, "testcase", classname=cls, name="read input", time="0")
            ET.SubElement(case, "error", type="input", message=_x(info.error)).text = _x(info.error)
            counts["tests"] += 1
            counts["errors"] += 1
        findings = by_input.get(index, [])
        for f in findings:
            case = ET.SubElement(suite, "testcase", classname=cls, name=f"{f.code} {f.rule}", time="0")
            body = _x(_body(report, f))
            if fails(f.severity, fail_on):
                ET.SubElement(case, "failure", type=f.severity, message=_x(f.title)).text = body
                counts["failures"] += 1
            else:
                ET.SubElement(case, "system-out").text = body
            counts["tests"] += 1
        if not info.error and not findings:
            ET.SubElement(suite, "testcase", classname=cls, name="no known problem", time="0")
            counts["tests"] += 1
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", str(counts["errors"]))
        suite.set("skipped", "0")
        suite.set("time", "0")
        for k in totals:
            totals[k] += counts[k]
    for k, v in totals.items():
        root.set(k, str(v))
    return root


def write(report: Report, out: TextIO, fail_on: str = "error", **_: Any) -> None:
    root = junit_tree(report, fail_on)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
