"""`--diff`: the corrected command as a unified diff of the command the user gave."""

from __future__ import annotations

import difflib

from sglang_doctor.model import Report


def command_diffs(report: Report) -> list[str]:
    """The diff lines (none without a corrected command, or with several launches, whose given
    commands the report does not keep apart)."""
    given = report.context.get("command")
    new = report.corrected_command
    if not given or not new:
        return []
    source = {"cmd": "--cmd", "cmd-file": "--cmd-file", "log-comment": "# cmd: line"}.get(
        report.launches[0].command_source or "", "command") if report.launches else "command"
    return list(difflib.unified_diff(str(given).splitlines(), new.splitlines(), f"a/{source}",
                                     f"b/{source} (corrected)", lineterm=""))
