"""Suppressions kept outside the report: a baseline file and inline `# sglang-doctor:` lines.

Baseline (`--baseline FILE`, `--write-baseline FILE`): a JSON file listing findings to hide.
An entry is keyed by the rule id, the input's file name (no directory) and a fingerprint of
the finding's first evidence line, so moving the log or shifting its line numbers keeps the
entry valid while a different message does not. Entries may carry `reason` (free text) and
`expires` (an ISO date, the last day the entry suppresses; after it the finding shows again
and a warning says so).

Inline: a line `# sglang-doctor: ignore SGD401,SGD402` (codes or rule ids) or
`# sglang-doctor: ignore-all` within the first INLINE_LINES lines of a saved log file
(plain or gzip; not stdin) hides those findings for that log only.

Suppression runs once, in `Suppressor.apply`, on the finished report and before any
reporter sees it (the command line then recomputes the corrected command from what is
left). Suppressed findings are hidden from every format, do not count towards the exit
status, and their number is in the report's `suppressed` field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import re

from sglang_doctor.model import Finding
from sglang_doctor.policy.redact import redact_text

if TYPE_CHECKING:
    import datetime as _dt

BASELINE_SCHEMA = "sglang-doctor/baseline/v1"
DEFAULT_BASELINE = ".sglang-doctor-baseline.json"
INLINE_LINES = 20
HEAD_BYTES = 64 * 1024  # inline directives are looked for in this much of a log's start

_INLINE = re.compile(r"#\s*sglang-doctor:\s*(?:(?P<all>ignore-all)\b|ignore\s+(?P<names>[A-Za-z0-9_-]+(?:\s*,\s*[A-Za-z0-9_-]+)*))")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")


class BaselineError(Exception):
    """A baseline file that cannot be read or written; the message is one line."""


def fingerprint(text: str) -> str:
    """A stable hash of an evidence line: secrets and hosts masked, numbers and spacing normalized.

    Masking first makes the fingerprint the same whether it is computed on the raw log line
    or on the (already redacted) report, with or without --redact-hosts.
    """
    norm = redact_text(text, hosts=True)
    norm = _DIGITS.sub("0", _HEX.sub("0x0", norm))
    norm = _SPACE.sub(" ", norm).strip()
    import hashlib

    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def input_key(name: str) -> str:
    """The part of an input's name a baseline keys on: the file name without directories."""
    return PurePath(name.replace("\\", "/")).name or name


def finding_fingerprint(f: Finding) -> str:
    return fingerprint(f.evidence[0].text if f.evidence else f.title)


@dataclass
class Entry:
    """A baseline entry: a finding to hide (rule, input, fingerprint), with its reason."""

    rule: str
    input: str
    fingerprint: str
    code: str | None = None
    title: str | None = None
    reason: str | None = None
    expires: _dt.date | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.rule, self.input, self.fingerprint)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "code": self.code, "input": self.input,
                               "fingerprint": self.fingerprint, "title": self.title}
        if self.reason:
            out["reason"] = self.reason
        if self.expires:
            out["expires"] = self.expires.isoformat()
        return {k: v for k, v in out.items() if v is not None}


def load_baseline(path: Path) -> list[Entry]:
    import json

    from sglang_doctor.read.reader import read_small_text

    raw = read_small_text(path, "baseline", BaselineError)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise BaselineError(f"{path}: invalid JSON at line {e.lineno}: {e.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("suppressions"), list):
        raise BaselineError(f"{path}: a baseline is an object with a 'suppressions' list "
                            "(write one with --write-baseline)")
    entries: list[Entry] = []
    for i, item in enumerate(data["suppressions"], 1):
        where = f"{path}: suppressions[{i}]"
        if not isinstance(item, dict):
            raise BaselineError(f"{where}: must be an object")
        for k in ("rule", "input", "fingerprint"):
            if not isinstance(item.get(k), str) or not item[k]:
                raise BaselineError(f"{where}: missing or empty '{k}'")
        expires = None
        if item.get("expires") is not None:
            try:
                import datetime

                expires = datetime.date.fromisoformat(str(item["expires"]))
            except ValueError:
                raise BaselineError(f"{where}: expires {item['expires']!r} is not an ISO date (YYYY-MM-DD)") from None
        reason = item.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise BaselineError(f"{where}: reason must be a string")
        entries.append(Entry(rule=item["rule"], input=item["input"], fingerprint=item["fingerprint"],
                             code=item.get("code"), title=item.get("title"), reason=reason, expires=expires))
    return entries


def write_baseline(path: Path, entries: list[Entry]) -> None:
    import json

    data = {"schema": BASELINE_SCHEMA,
            "suppressions": [e.to_json() for e in sorted(entries, key=lambda e: (e.input, e.code or "", e.rule))]}
    try:
        if path.parent and not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise BaselineError(f"{path}: cannot write baseline: {e.strerror or e}") from None


def read_head(path: str, lines: int = INLINE_LINES) -> list[str]:
    """The first lines of a saved log (plain or gzip); [] for stdin, pasted text or unreadable files."""
    if path == "-" or path.startswith("<"):
        return []
    import os
    import stat

    try:
        # A pipe (a FIFO, `<(docker logs …)`) was consumed by the analysis, and opening it
        # again would wait for a writer: only a regular file has a first line to read again.
        if not stat.S_ISREG(os.stat(path).st_mode):
            return []
        with open(path, "rb") as fh:
            raw = fh.read(HEAD_BYTES)
            if raw[:2] == b"\x1f\x8b":
                import gzip

                fh.seek(0)
                with gzip.GzipFile(fileobj=fh) as gz:
                    raw = gz.read(HEAD_BYTES)
    except (OSError, EOFError):
        return []
    return raw.decode("utf-8", errors="replace").splitlines()[:lines]


def inline_ignores(head: list[str]) -> set[str] | None:
    """Rule ids/codes an input's first lines ignore; {'*'} for ignore-all, None for none."""
    out: set[str] = set()
    for text in head[:INLINE_LINES]:
        m = _INLINE.search(text)
        if not m:
            continue
        if m["all"]:
            return {"*"}
        out.update(n.strip() for n in m["names"].split(",") if n.strip())
    return out or None


@dataclass
class Suppressed:
    """A finding hidden by a baseline or an inline ignore."""

    finding: Finding
    input: str
    by: str  # "inline" or "baseline"
    reason: str | None = None


@dataclass
class Suppressor:
    """Hides baselined and inline-ignored findings of a report; see the module docstring."""

    baseline: list[Entry] = field(default_factory=list)
    baseline_path: Path | None = None
    write_path: Path | None = None  # --write-baseline: record the report's findings there first
    today: _dt.date | None = None  # None: today's date, read when a baseline entry has an expiry

    suppressed: list[Suppressed] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    written: int | None = None  # entries written to write_path
    known: set[str] = field(default_factory=set)  # every rule id and code (empty: names are not checked)

    def _today(self) -> _dt.date:
        if self.today is None:
            import datetime

            self.today = datetime.date.today()
        return self.today

    def hides(self, f: Finding, name: str, path: str) -> bool:
        """Whether `filter` would take this finding out (no record kept): what --follow streams."""
        ign = inline_ignores(read_head(path))
        if ign and ("*" in ign or f.code in ign or f.rule in ign):
            return True
        if self.write_path is not None:  # the report is written as the new baseline: all of it is hidden
            return True
        key = (f.rule, input_key(name), finding_fingerprint(f))
        return any(e.key == key and (e.expires is None or e.expires >= self._today()) for e in self.baseline)

    def filter(self, findings: list[Finding], names: list[str], paths: list[str]) -> list[Finding]:
        """The findings left once baselined and inline-ignored ones are taken out (recorded in
        `suppressed`); names[i] / paths[i]: how input i is shown / where it was read from."""
        ignores = {i: inline_ignores(read_head(p)) for i, p in enumerate(paths)}
        for i, ign in ignores.items():
            self._check_names(paths[i], ign)

        def input_of(f: Finding) -> tuple[int, str]:
            idx = f.evidence[0].input if f.evidence else 0
            return idx, names[idx] if idx < len(names) else "?"

        kept: list[Finding] = []
        for f in findings:
            idx, name = input_of(f)
            ign = ignores.get(idx)
            if ign and ("*" in ign or f.code in ign or f.rule in ign):
                self.suppressed.append(Suppressed(f, name, "inline"))
            else:
                kept.append(f)
        if self.write_path is not None:
            self._write([(input_key(input_of(f)[1]), f) for f in kept])
        active: dict[tuple[str, str, str], Entry] = {}
        expired: dict[tuple[str, str, str], Entry] = {}
        for e in self.baseline:
            (expired if e.expires is not None and e.expires < self._today() else active)[e.key] = e
        remaining: list[Finding] = []
        for f in kept:
            if not self.baseline:
                remaining.append(f)
                continue
            _, name = input_of(f)
            key = (f.rule, input_key(name), finding_fingerprint(f))
            entry = active.get(key)
            if entry is not None:
                self.suppressed.append(Suppressed(f, name, "baseline", entry.reason))
                continue
            old = expired.get(key)
            if old is not None:
                self.warnings.append(f"baseline {self.baseline_path}: the entry for {f.code} {f.rule} in "
                                     f"{input_key(name)} expired on {old.expires}; the finding is reported again")
            remaining.append(f)
        return remaining

    def _check_names(self, path: str, ignored: set[str] | None) -> None:
        """An inline ignore naming no rule (a typo, a code cut short) hides nothing: say so."""
        unknown = sorted((ignored or set()) - self.known - {"*"}) if self.known else []
        for name in unknown:
            import difflib

            near = difflib.get_close_matches(name, sorted(self.known), n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            self.warnings.append(f"{path}: `# sglang-doctor: ignore {name}` names no rule id or code, so it hides "
                                 f"nothing{hint} (see `sglang-doctor rules list`)")

    def _write(self, findings: list[tuple[str, Finding]]) -> None:
        assert self.write_path is not None
        previous = {e.key: e for e in self.baseline}
        if self.write_path.exists():
            try:
                previous.update({e.key: e for e in load_baseline(self.write_path)})
            except BaselineError:
                pass  # a broken file is replaced
        entries: dict[tuple[str, str, str], Entry] = {}
        for name, f in findings:
            e = Entry(rule=f.rule, code=f.code, input=name, fingerprint=finding_fingerprint(f), title=f.title)
            old = previous.get(e.key)
            if old is not None:  # keep what a person wrote
                e.reason, e.expires = old.reason, old.expires
            entries[e.key] = e
        write_baseline(self.write_path, list(entries.values()))
        self.written = len(entries)
        self.baseline = list(entries.values())
        self.baseline_path = self.write_path
