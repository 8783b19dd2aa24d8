"""The report: the one object every output format renders (JSON contract v1)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import __version__

SCHEMA_ID = "sglang-doctor/report/v1"


class _M(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class InputInfo(_M):
    name: str
    lines: int = 0
    bytes: int = 0
    error: str | None = None


class Evidence(_M):
    input: int
    line: int
    text: str
    # When the line was logged (ISO 8601, to the second, the log's own clock): the header of its
    # record; for a line without one, a PyTorch C++ (c10/glog) line's own time, or else the
    # latest header time before it. None when unknown.
    ts: str | None = None
    rank: str | None = None  # the logging process's rank tags ("TP0", "DP1 TP3"), when it has them


class FixOut(_M):
    kind: Literal["flag", "env", "docker", "package", "system", "note"]
    flag: str | None = None
    name: str | None = None
    action: Literal["set", "raise", "lower", "add", "remove"] | None = None
    from_: str | None = Field(None, alias="from")
    value: str | None = None
    text: str | None = None
    replaces: str | None = None  # a renamed flag: the old spelling this fix removes
    versions: str | None = Field(None, exclude=True)  # internal: releases the fix applies to


class Finding(_M):
    rule: str
    code: str
    severity: Literal["error", "warning", "info"]
    title: str
    explanation: str
    evidence: list[Evidence] = []
    captures: dict[str, str] = {}
    fixes: list[FixOut] = []
    occurrences: int = 1  # records the rule matched (evidence keeps the first few)
    consequence_of: str | None = None  # rule id of the root cause this finding follows from
    follows: str | None = None  # the sentence naming it ("Follows from SGD401 (…, line 34).")
    docs: str | None = None  # relative path of the rule's docs page


def mark_consequence(f: Finding, cause: Finding, where: str = "") -> None:
    """Make `f` a consequence of `cause`: info severity, and one sentence saying where the cause is.

    The sentence also leads the explanation (every format shows it); marking again (a root
    cause found across inputs) replaces the earlier sentence instead of stacking them.
    """
    at = where or (f"line {cause.evidence[0].line}" if cause.evidence else "")
    note = f"Follows from {cause.code} ({cause.rule}{', ' + at if at else ''})."
    if f.follows and f.explanation.startswith(f.follows):
        f.explanation = f.explanation[len(f.follows):].lstrip()
    f.consequence_of, f.severity, f.follows = cause.rule, "info", note
    f.explanation = f"{note} {f.explanation}".strip()


class ToolInfo(_M):
    name: str = "sglang-doctor"
    version: str = __version__


class Report(_M):
    schema_: str = Field(SCHEMA_ID, alias="schema")
    tool: ToolInfo = ToolInfo()
    inputs: list[InputInfo] = []
    context: dict[str, Any] = {}
    findings: list[Finding] = []
    summary: dict[str, int] = {"error": 0, "warning": 0, "info": 0}
    corrected_command: str | None = None
    startup: dict[str, Any] | None = None
    suppressed: int | None = None  # findings hidden by a baseline or an inline ignore (when any)

    def count(self) -> None:
        self.summary = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            self.summary[f.severity] += 1

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")
