"""`--fix`: the `--cmd-file` rewritten in place to run the corrected command, the original kept beside it.

The pipeline computes the rewritten text from the unredacted correction (launch/rewrite.py), so
the user's tokens stay in the file; only the redacted diff is ever printed. The file is written
only when the command is a corrected one (it carries the root cause's fix), and the backup is
written before the file is touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

BACKUP_SUFFIX = ".bak"  # serve.sh -> serve.sh.bak (replaced when it exists)


@dataclass
class FileText:
    """A --cmd-file as read for --fix: its bytes, and its text with `\\n` line ends."""

    raw: bytes
    text: str
    crlf: bool


def read_for_fix(path: str) -> FileText | str:
    """The file, or why --fix will not rewrite it (a one-line reason)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"{path}: not UTF-8 text, so --fix cannot write it back as it was"
    return FileText(raw, text.replace("\r\n", "\n"), "\r\n" in text)


def outcome(run: Any, path: str, original: FileText) -> tuple[str, bool]:
    """Write the fix when there is one: (the message for the user, whether it is an error)."""
    report = run.report
    launch = report.launches[0] if len(report.launches) == 1 else None
    if launch is None:
        why = (f"the logs hold {len(report.launches)} launches, and the file runs one: give the log of its own launch"
               if report.launches else "the input holds no launch")
        return f"--fix: nothing written to {path}: {why}", False
    if not launch.corrected_command:
        return f"--fix: nothing written to {path}: {_why_none(report)}", False
    if launch.command_kind == "suggested":
        return (f"--fix: nothing written to {path}: the command only carries other findings' changes, not the "
                "root cause's fix", False)
    new = run.rewritten
    if new is None:
        return f"--fix: nothing written to {path}: {run.rewrite_refused or 'the change cannot be written into it'}", True
    if new == original.text:
        return f"--fix: nothing written to {path}: it already runs the corrected command", False
    backup = path + BACKUP_SUFFIX
    import os

    if not os.access(path, os.W_OK):
        return f"--fix: {path}: not writable", True
    try:
        Path(backup).write_bytes(original.raw)
        Path(path).write_text(new.replace("\n", "\r\n") if original.crlf else new, encoding="utf-8", newline="")
    except OSError as e:
        return f"--fix: {getattr(e, 'filename', None) or path}: {e.strerror or e}", True
    return f"fixed {path} (the original is in {backup})", False


_NOT_COMMAND = {"package": "a package to install or change", "system": "a driver or system change",
                "note": "advice, not a change of the command"}


def _why_none(report: Any) -> str:
    """Why a run has no corrected command, in a few words."""
    findings = [f for f in report.findings if f.severity != "info" and not f.consequence_of]
    if not findings:
        return "no problem found"
    root = next((f for f in findings if f.severity == "error"), findings[0])
    first = root.fixes[0].kind if root.fixes else None
    if first in _NOT_COMMAND:
        return f"the fix of {root.code} is not in the command ({_NOT_COMMAND[first]})"
    if not root.fixes:
        return f"{root.code} has no fix to write"
    return "no fix can be written into the command"
