"""The report: the one object every output format renders (JSON contract v1).

Plain dataclasses, so a run never imports a validation library: the contract is pinned by
`data/report-v1.schema.json` (JSON Schema), which the tests check every format's source
against. `to_json` / `from_json` convert to and from the contract's JSON shape (its key
names, no null fields, internal fields left out).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from sglang_doctor import __version__

SCHEMA_ID = "sglang-doctor/report/v1"
Severity = Literal["error", "warning", "info"]
# The one declaration of the severities, most severe first, and of what --fail-on accepts.
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
SEVERITY_RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}
FAIL_ON: tuple[str, ...] = SEVERITIES + ("never",)
# The output formats (each a module of report/).
FORMATS: tuple[str, ...] = ("text", "json", "sarif", "github", "markdown", "junit")


def rule_page(code: str, rule_id: str) -> str:
    """Where a rule's docs page lives in the repository (docs/rules/<code>-<id>.md)."""
    return f"docs/rules/{code}-{rule_id}.md"


def fails(severity: str, fail_on: str) -> bool:
    """Whether a finding of `severity` fails a run under `--fail-on fail_on`."""
    return fail_on != "never" and SEVERITY_RANK[severity] <= SEVERITY_RANK.get(fail_on, 0)


@dataclass
class InputInfo:
    """An input of the run: its name, size, and why it could not be read."""

    name: str
    lines: int = 0
    bytes: int = 0
    error: str | None = None


# Evidence.line of a text that is no line of an input: the launch command given with --cmd /
# --cmd-file (a `# cmd:` line in the log has its own line number).
COMMAND_LINE = 0


@dataclass
class Evidence:
    """A log line a finding rests on (or the launch command given apart, at COMMAND_LINE)."""

    input: int
    line: int
    text: str
    # When the line was logged (ISO 8601, to the second, the log's own clock): the header of its
    # record; for a line without one, a PyTorch C++ (c10/glog) line's own time, or else the
    # latest header time before it. None when unknown.
    ts: str | None = None
    rank: str | None = None  # the logging process's rank tags ("TP0", "DP1 TP3"), when it has them


@dataclass
class FixOut:
    """A concrete fix: a flag, env var, docker option, package, system part or note."""

    kind: Literal["flag", "env", "docker", "package", "system", "note"]
    flag: str | None = None
    name: str | None = None
    action: Literal["set", "raise", "lower", "add", "remove"] | None = None
    from_: str | None = None  # JSON "from": the value the log shows now
    value: str | None = None
    text: str | None = None
    replaces: str | None = None  # a renamed flag: the old spelling this fix removes
    versions: str | None = None  # internal (not in the JSON): releases the fix applies to
    launcher: str | None = None  # internal: "router" for a router flag (None: an SGLang launch flag)
    # Part of the recommended change: applied together with the finding's first fix (a fraction
    # raised and the context capped, as one plan); None otherwise.
    combined: bool | None = None


@dataclass
class Finding:
    """What one rule found in the inputs, explained, with its fixes."""

    rule: str
    code: str
    severity: Severity
    title: str
    explanation: str
    evidence: list[Evidence] = field(default_factory=list)
    captures: dict[str, str] = field(default_factory=dict)
    fixes: list[FixOut] = field(default_factory=list)
    occurrences: int = 1  # records the rule matched (evidence keeps the first few)
    consequence_of: str | None = None  # rule id of the root cause this finding follows from
    follows: str | None = None  # the sentence naming it ("Follows from SGD401 (…, line 34).")
    docs: str | None = None  # relative path of the rule's docs page
    # Where the matched message comes from: {"package": "sglang", "file", "line", "function", "releases"}
    # for an SGLang message, {"package": "cuda" | "nccl", "name", "code"} for a result code.
    origin: dict[str, Any] | None = None


def line_name(line: int) -> str:
    """`line 34`, or `the launch command` for COMMAND_LINE."""
    return "the launch command" if line == COMMAND_LINE else f"line {line}"


def mark_consequence(f: Finding, cause: Finding, where: str = "") -> None:
    """Make `f` a consequence of `cause`: info severity, and one sentence saying where the cause is.

    The sentence also leads the explanation (every format shows it); marking again (a root
    cause found across inputs) replaces the earlier sentence instead of stacking them.
    """
    at = where or (line_name(cause.evidence[0].line) if cause.evidence else "")
    note = f"Follows from {cause.code} ({cause.rule}{', ' + at if at else ''})."
    if f.follows and f.explanation.startswith(f.follows):
        f.explanation = f.explanation[len(f.follows):].lstrip()
    f.consequence_of, f.severity, f.follows = cause.rule, "info", note
    f.explanation = f"{note} {f.explanation}".strip()


@dataclass
class ToolInfo:
    """Which tool and release wrote the report."""

    name: str = "sglang-doctor"
    version: str = __version__


@dataclass
class LaunchInfo:
    """One launch of the report: where it is, its own corrected command, which findings are its."""

    input: int
    first_line: int
    last_line: int
    findings: list[int] = field(default_factory=list)  # indices into Report.findings
    inputs: list[int] | None = None  # a deployment's inputs read together, when more than one
    sglang_version: str | None = None
    corrected_command: str | None = None
    command_source: str | None = None  # cmd | cmd-file | log-comment | server_args
    # a command rebuilt from server_args: the flags it leaves out, the log showing them at their default
    command_defaults_omitted: list[str] | None = None
    # the releases the corrected command is written for, when fewer than the log's range ("0.5.10-0.5.23")
    command_releases: str | None = None
    # "corrected": the command carries the root cause's fix; "suggested": only other findings' changes
    command_kind: str | None = None
    node_commands: list[str] | None = None  # a multi-node launch: the corrected command of each node, by rank
    command_notes: list[str] | None = None  # fixes the command leaves out, and why (a combination SGLang refuses)
    startup: dict[str, Any] | None = None


@dataclass
class Report:
    """The whole answer of a run (JSON contract v1)."""

    schema_: str = SCHEMA_ID  # JSON "schema"
    tool: ToolInfo = field(default_factory=ToolInfo)
    inputs: list[InputInfo] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    summary: dict[str, int] = field(default_factory=lambda: {"error": 0, "warning": 0, "info": 0})
    corrected_command: str | None = None
    startup: dict[str, Any] | None = None
    suppressed: int | None = None  # findings hidden by a baseline or an inline ignore (when any)
    launches: list[LaunchInfo] = field(default_factory=list)
    preflight: dict[str, Any] | None = None  # `sglang-doctor preflight` only: the predicted memory plan

    def count(self) -> None:
        self.summary = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            self.summary[f.severity] += 1

    def to_json_dict(self) -> dict[str, Any]:
        return to_json(self)  # type: ignore[no-any-return]


# --- the contract's JSON shape --------------------------------------------------------------

_JSON_NAME = {"from_": "from", "schema_": "schema"}  # Python-safe field name -> JSON key
_FIELD_NAME = {v: k for k, v in _JSON_NAME.items()}
_INTERNAL = {(FixOut, "versions"), (FixOut, "launcher")}
# Fields holding contract objects, by class: how from_json rebuilds them.
_NESTED: dict[type, dict[str, type]] = {
    Report: {"tool": ToolInfo, "inputs": InputInfo, "findings": Finding, "launches": LaunchInfo},
    Finding: {"evidence": Evidence, "fixes": FixOut},
}
T = TypeVar("T")


def to_json(obj: Any) -> Any:
    """The JSON value of a contract object: contract key names, None fields left out.

    Free-form mappings (context, startup, captures) keep their None values: null is a fact there.
    """
    keys = _json_keys(type(obj))
    if keys is not None:
        out: dict[str, Any] = {}
        for name, key in keys:
            value = getattr(obj, name)
            if value is not None:
                out[key] = to_json(value)
        return out
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj


_KEYS: dict[type, list[tuple[str, str]] | None] = {}


def _json_keys(cls: type) -> list[tuple[str, str]] | None:
    """(field name, JSON key) of a contract class's JSON fields; None for other types."""
    try:
        return _KEYS[cls]
    except KeyError:
        keys = ([(f.name, _JSON_NAME.get(f.name, f.name)) for f in dataclasses.fields(cls)
                 if (cls, f.name) not in _INTERNAL] if dataclasses.is_dataclass(cls) else None)
        _KEYS[cls] = keys
        return keys


def from_json(cls: type[T], data: dict[str, Any]) -> T:
    """Rebuild a contract object from its JSON value (after redaction, or read back by a test)."""
    nested = _NESTED.get(cls, {})
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = _FIELD_NAME.get(key, key)
        if name not in known:
            continue  # a newer producer's field: the contract allows additions
        sub = nested.get(name)
        if sub is not None and isinstance(value, list):
            value = [from_json(sub, v) for v in value]
        elif sub is not None and isinstance(value, dict):
            value = from_json(sub, value)
        kwargs[name] = value
    return cls(**kwargs)
