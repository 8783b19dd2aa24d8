"""Spell router flag fixes for the router the user runs.

A rule names a router flag as ``sglang_router.launch_router`` spells it
(``--worker-startup-timeout-secs``); ``sglang_router.launch_server`` takes it with a
``--router-`` prefix, and releases add flags. A fix is respelled for the launch command's
launcher and dropped where the stated sglang-router release lacks it. Nothing here reads
the router registry unless a finding has a router fix.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sglang_doctor.model import Finding


def _launcher_of(command: str | None) -> str | None:
    if not command:
        return None
    from sglang_doctor.launch.command import parse_command

    cmd = parse_command(command)
    return cmd.router_launcher if cmd is not None else None


def spell_router_fixes(findings: list[Finding], version: Any, command: str | None) -> list[Finding]:
    """Each router flag fix respelled for the command's launcher and the router release."""
    if not any(fix.launcher == "router" and fix.flag for f in findings for fix in f.fixes):
        return findings
    from sglang_doctor.registry import router_flags

    release = router_flags.release_for(version)
    launcher = _launcher_of(command) or "launch_router"
    out = []
    for f in findings:
        kept = []
        for fix in f.fixes:
            if fix.launcher == "router" and fix.flag:
                if release and fix.versions and release not in router_flags.releases_in_range(fix.versions):
                    continue
                if fix.action != "remove":  # a removal names what the user typed
                    spelled = router_flags.spell(fix.flag, release, launcher)
                    if spelled is None:
                        continue
                    fix = replace(fix, flag=spelled)
            kept.append(fix)
        out.append(replace(f, fixes=kept) if kept != f.fixes else f)
    return out
