"""The fix stage of one launch: its fixes spelled for the release, and the corrected command.

The corrected command applies the first fix of each finding that is neither info nor a
consequence (the first fix per flag wins); it is computed once per launch, after the policy
stage has removed suppressed findings. It is returned as a parsed command: redaction turns it
into text (secrets become `$NAME` placeholders the user can export).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.launch.command import LaunchCommand, parse_command, render
from sglang_doctor.model import Finding, FixOut
from sglang_doctor.registry.spelling import in_range, spell_for, value_for


def spell_fixes(findings: list[Finding], version: str | None) -> list[Finding]:
    """Each flag fix named the way the log's SGLang release spells it; flags it lacks dropped."""
    if not version:
        return findings
    out = []
    for f in findings:
        kept = []
        for fix in f.fixes:
            if fix.launcher == "router":  # a router flag: its releases are sglang-router's (router_spelling)
                kept.append(fix)
                continue
            if fix.versions and not in_range(version, fix.versions):
                continue
            if fix.kind == "flag" and fix.flag and fix.action != "remove":  # a removal names what the user typed
                spelled = spell_for(fix.flag, version)
                if spelled is None:
                    continue
                if spelled != fix.flag and fix.value is None:  # a switch renamed into a flag's value
                    value = value_for(fix.flag, spelled)
                    action = "set" if value is not None and fix.action == "add" else fix.action
                    fix = replace(fix, value=value, action=action)
                fix = replace(fix, flag=spelled)
            kept.append(fix)
        out.append(replace(f, fixes=kept) if kept != f.fixes else f)
    return out


def chosen_fixes(findings: list[Finding]) -> list[FixOut]:
    """The fixes the corrected command applies: the first of each finding that is not info or a
    consequence (and those marked `combined` with it), the first per flag / env name winning."""
    chosen: list[FixOut] = []
    taken: set[tuple[str, str]] = set()
    for f in findings:
        if f.severity == "info" or f.consequence_of:
            continue
        # the first fix of each finding is the recommended one (with the fixes combined with it)
        for fix in f.fixes[:1] + [x for x in f.fixes[1:] if x.combined]:
            key = (fix.kind, fix.flag or fix.name or "")
            if key in taken:
                continue
            taken.add(key)
            if fix.kind == "flag" and fix.replaces:
                chosen.append(FixOut(kind="flag", flag=fix.replaces, action="remove", launcher=fix.launcher))
            chosen.append(fix)
    return chosen


def corrected_command(command: str | None, findings: list[Finding], env_wrapper: bool = False) -> LaunchCommand | None:
    """The launch command with the chosen fixes applied, or None (no command, or nothing applies).

    `env_wrapper`: the command is a compose / Kubernetes one, so env fixes go into an
    `env NAME=VALUE …` wrapper, which those run without a shell, not into a prefix.
    """
    if not command:
        return None
    cmd = parse_command(command)
    if cmd is None:
        return None
    chosen = chosen_fixes(findings)
    if not chosen:
        return None
    new_cmd, applied = apply_fixes(cmd, chosen, env_wrapper=env_wrapper)
    # A fix with nothing to write (a `set` without a value, a removal of a flag the command lacks) is
    # still "applied": never give the user's own command back as its correction.
    return new_cmd if any(applied) and render(new_cmd) != render(cmd) else None


def unverified_note(version: str | None) -> str:
    """Why a corrected command's flags are not checked against the launch's release."""
    from sglang_doctor.registry.flags import releases

    known = releases()
    which = (f"SGLang {version} is not in the flag registry ({known[0]}-{known[-1]})" if version
             else "the log does not say which SGLang release runs")
    return f"unverified for this release: {which}, so its flags are spelled as the newest releases take them"


def launch_command(command: str | None, server_args: dict[str, Any], version: str | None) -> tuple[str | None, str | None]:
    """The command to correct and where it came from: the given one, else one rebuilt from the
    log's server_args line (resolved values) when the log has one."""
    if command:
        return command, None
    if not server_args:
        return None, None
    from sglang_doctor.fix.rebuild import rebuild_command
    from sglang_doctor.registry.spelling import releases_of

    rels = releases_of(version)
    rebuilt = rebuild_command(server_args, rels[-1] if rels else None)
    return (rebuilt, "server_args") if rebuilt else (None, None)
