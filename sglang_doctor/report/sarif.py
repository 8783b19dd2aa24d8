"""`--format sarif`: SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

- `tool.driver.rules` holds one reportingDescriptor per rule that produced a result in
  this report (not the whole rule set: the file stays small and every descriptor is
  referenced). `id` is the rule's code (SGD401), `name` its id; short description = the
  title, full description and help = the rule's docs (what / why / fix), `helpUri` = its
  page, DOCS_BASE_URL + `docs/rules/<code>-<id>.md`.
- One result per finding: `ruleId` = code, `level` error / warning / note (for info),
  message = title, explanation and the fixes as text, the first evidence line as the
  physical location (further evidence lines as relatedLocations), the JSON fixes in
  `properties.fixes` (SARIF `fixes[]` describe file edits, which a launch-flag change is
  not), and `partialFingerprints` from the same fingerprint the baseline uses.
- Input files are artifacts: a path under the current directory is relative with
  `uriBaseId` SRCROOT (defined in `originalUriBaseIds`), any other path an absolute file
  URI; stdin is `stdin`.
- Inputs that could not be read are error notifications of the invocation, which is then
  not `executionSuccessful`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from sglang_doctor.model import COMMAND_LINE, Finding, Report, to_json
from sglang_doctor.policy.suppress import finding_fingerprint
from sglang_doctor.report.common import (DOCS_BASE_URL, DOCS_URL_ENV, REPO_URL, docs_base_url,  # noqa: F401
                                         docs_path, is_file_input)  # (DOCS_*: part of this module's interface)
from sglang_doctor.report.fixes import describe_fix, fix_label

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "sglangDoctorEvidence/v1"


def _artifact_location(name: str, cwd: Path) -> dict[str, Any]:
    if not is_file_input(name):
        return {"uri": "stdin"}
    p = Path(name)
    if not p.is_absolute():
        return {"uri": quote(p.as_posix()), "uriBaseId": "SRCROOT"}
    try:
        return {"uri": quote(p.resolve().relative_to(cwd).as_posix()), "uriBaseId": "SRCROOT"}
    except ValueError:
        return {"uri": p.resolve().as_uri()}


def _descriptor(f: Finding, rule: Any, base: str) -> dict[str, Any]:
    d: dict[str, Any] = {"id": f.code, "name": f.rule, "shortDescription": {"text": f.title},
                         "helpUri": base + docs_path(f)}
    sev = rule.severity if rule is not None else f.severity
    d["defaultConfiguration"] = {"level": LEVEL[sev]}
    if rule is not None:
        docs = rule.docs
        d["fullDescription"] = {"text": " ".join(docs.what.split())}
        text = [docs.what.strip(), "", "Why: " + docs.why.strip(), "", "Fix: " + docs.fix.strip()]
        md = [f"**{rule.title}**", "", docs.what.strip(), "", "### Why it happens", "", docs.why.strip(), "",
              "### How to fix it", "", docs.fix.strip()]
        if docs.wrong_when:
            text += ["", "When the fix is wrong: " + docs.wrong_when.strip()]
            md += ["", "### When the fix is wrong", "", docs.wrong_when.strip()]
        md += ["", f"[Rule page]({base + docs_path(f)})"]
        d["help"] = {"text": "\n".join(text), "markdown": "\n".join(md)}
        d["properties"] = {"tags": ["sglang", rule.family], "sglang_versions": rule.versions}
    else:
        d["fullDescription"] = {"text": f.title}
        d["help"] = {"text": f"{f.title}. See {base + docs_path(f)}"}
    return d


def _message(f: Finding) -> str:
    title = f.title if f.title.endswith((".", "!", "?")) else f.title + "."
    blocks = [title]
    if f.explanation:
        blocks.append(f.explanation)
    if f.fixes:
        blocks.append("\n".join(f"{fix_label(i, fx).capitalize()}: " + describe_fix(fx) for i, fx in enumerate(f.fixes)))
    return "\n\n".join(blocks)


def sarif_log(report: Report, rules: list[Any] | None = None, cwd: Path | None = None) -> dict[str, Any]:
    cwd = (cwd or Path.cwd()).resolve()
    base = docs_base_url()
    by_id = {r.id: r for r in rules or []}
    artifacts = []
    locations = []
    for info in report.inputs:
        loc = _artifact_location(info.name, cwd)
        locations.append(loc)
        art: dict[str, Any] = {"location": dict(loc)}
        if not info.error:
            art["length"] = info.bytes
        if not is_file_input(info.name):
            art["description"] = {"text": f"standard input ({info.name})"}
        artifacts.append(art)

    descriptors: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results = []
    for f in report.findings:
        if f.code not in index:
            index[f.code] = len(descriptors)
            descriptors.append(_descriptor(f, by_id.get(f.rule), base))
        res: dict[str, Any] = {"ruleId": f.code, "ruleIndex": index[f.code], "level": LEVEL[f.severity],
                               "message": {"text": _message(f)}}
        locs = []
        for ev in f.evidence:
            art_loc = dict(locations[ev.input]) if ev.input < len(locations) else {"uri": "stdin"}
            if ev.input < len(locations):
                art_loc["index"] = ev.input
            phys: dict[str, Any] = {"artifactLocation": art_loc}
            if ev.line != COMMAND_LINE:  # (the launch command given with --cmd is no line of the log)
                phys["region"] = {"startLine": ev.line, "snippet": {"text": ev.text}}
            locs.append({"physicalLocation": phys})
        if locs:
            res["locations"] = locs[:1]
            if len(locs) > 1:
                res["relatedLocations"] = [dict(loc, id=i, message={"text": "also matched here"})
                                           for i, loc in enumerate(locs[1:], 1)]
        res["partialFingerprints"] = {FINGERPRINT_KEY: finding_fingerprint(f)}
        props: dict[str, Any] = {"rule": f.rule, "severity": f.severity, "occurrences": f.occurrences,
                                 "fixes": [to_json(fx) for fx in f.fixes]}
        if f.captures:
            props["captures"] = f.captures
        if f.consequence_of:
            props["consequence_of"] = f.consequence_of
        res["properties"] = props
        results.append(res)

    notes = [{"level": "error", "message": {"text": f"{info.name}: {info.error}" if info.name not in info.error
                                            else info.error}}
             for info in report.inputs if info.error]
    invocation: dict[str, Any] = {"executionSuccessful": not notes}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    run_props: dict[str, Any] = {"summary": report.summary}
    if report.suppressed:
        run_props["suppressed"] = report.suppressed
    if report.corrected_command:
        run_props["corrected_command"] = report.corrected_command
    if report.context.get("sglang_version"):
        run_props["sglang_version"] = report.context["sglang_version"]
    if report.preflight is not None:  # `sglang-doctor preflight`: the predicted memory plan
        run_props["preflight"] = report.preflight
    run: dict[str, Any] = {
        "tool": {"driver": {"name": report.tool.name, "version": report.tool.version,
                            "semanticVersion": report.tool.version, "informationUri": REPO_URL,
                            "rules": descriptors}},
        "originalUriBaseIds": {"SRCROOT": {"uri": cwd.as_uri().rstrip("/") + "/"},
                               "DOCSROOT": {"uri": base}},
        "invocations": [invocation],
        "artifacts": artifacts,
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": run_props,
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def write(report: Report, out: TextIO, rules: list[Any] | None = None, **_: Any) -> None:
    json.dump(sarif_log(report, rules), out, indent=2, ensure_ascii=False)
    out.write("\n")
