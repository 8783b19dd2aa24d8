"""The fix stage of one launch: its fixes spelled for the release, and the corrected command.

The corrected command applies the first fix of each finding that is neither info nor a
consequence (the first fix per flag wins); it is computed once per launch, after the policy
stage has removed suppressed findings. It is returned as a parsed command: redaction turns it
into text (secrets become `$NAME` placeholders the user can export).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import Any

from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.fix.combinations import created_by
from sglang_doctor.fix.env_edit import container_env
from sglang_doctor.launch.command import LaunchCommand, parse_command, render
from sglang_doctor.model import Finding, FixOut
from sglang_doctor.fix.validity import Problem, repair
from sglang_doctor.registry.spelling import in_range, spell_for, spell_value, target_releases, value_for


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


_COMMAND_KINDS = ("flag", "env", "docker")


def writable(fix: FixOut, releases: list[str] | None = None) -> bool:
    """Whether a command fix can be written as it stands: it has the value its action needs, and a
    flag it sets is taken by every target release (`releases`; None: not checked)."""
    if fix.kind not in _COMMAND_KINDS:
        return False
    if fix.action == "remove":
        return True
    if fix.value is None:
        if fix.action in ("raise", "lower"):
            return False  # a direction without a target value: nothing to write
        if fix.kind == "flag" and fix.action == "set" and fix.launcher != "router":
            from sglang_doctor.registry.flags import takes_value

            if fix.flag and takes_value(fix.flag):
                return False
    if fix.kind == "flag" and fix.flag and releases and fix.launcher != "router" and fix.action != "remove":
        return all(_takes(fix.flag, fix.value, r) for r in releases)
    return True


def _takes(flag: str, value: str | None, release: str) -> bool:
    """Whether `release`'s parser takes `flag` (exactly) with `value` among its choices."""
    from sglang_doctor.registry import flags

    spec = flags.resolve(flag.split("=", 1)[0], release, allow_abbrev=False)
    if spec is None:
        return False
    return value is None or not spec.choices or all(v in {str(c) for c in spec.choices} for v in value.split())


def _respelled(fix: FixOut, release: str) -> FixOut:
    """A flag fix spelled as `release` takes it (itself when it has no spelling there)."""
    if fix.kind != "flag" or not fix.flag or fix.launcher == "router" or fix.action == "remove":
        return fix
    found = spell_value(fix.flag, fix.value, [release])
    if found is None or (found.flag, found.value) == (fix.flag, fix.value):
        return fix
    return replace(fix, flag=found.flag, value=found.value,
                   action="set" if found.value is not None and fix.action == "add" else fix.action)


def recommended(f: Finding, allowed: Callable[[FixOut], bool] | None = None) -> list[FixOut]:
    """The fixes of one finding a command applies: its first fix with those combined with it; when
    that first fix has no value to write, or `allowed` refuses it (a combination SGLang rejects),
    the next command fix that can be written. A finding whose first fix is no command fix (a
    package, a driver) gives none."""
    if not f.fixes or f.fixes[0].kind not in _COMMAND_KINDS:
        return []
    ok = allowed or (lambda fx: True)
    if writable(f.fixes[0]) and ok(f.fixes[0]):
        return f.fixes[:1] + [x for x in f.fixes[1:] if x.combined and ok(x)]
    return next(([x] for x in f.fixes[1:] if x.action != "remove" and writable(x) and ok(x)),
                f.fixes[:1] if allowed is None or ok(f.fixes[0]) else [])


def chosen_fixes(findings: list[Finding], allowed: Callable[[FixOut], bool] | None = None) -> list[FixOut]:
    """The fixes the corrected command applies: those `recommended` for each finding that is not
    info or a consequence, the first per flag / env name winning."""
    chosen: list[FixOut] = []
    taken: set[tuple[str, str]] = set()
    for f in findings:
        if f.severity == "info" or f.consequence_of:
            continue
        for fix in recommended(f, allowed):
            key = (fix.kind, fix.flag or fix.name or "")
            if key in taken:
                continue
            taken.add(key)
            if fix.kind == "flag" and fix.replaces:
                chosen.append(FixOut(kind="flag", flag=fix.replaces, action="remove", launcher=fix.launcher))
            chosen.append(fix)
    # a flag that another fix replaces is replaced in its place, not removed first (the flag order is the user's)
    replaced = {fx.replaces for fx in chosen if fx.kind == "flag" and fx.replaces and fx.launcher != "router"}
    return [fx for fx in chosen if not (fx.action == "remove" and fx.flag in replaced)]


@dataclass
class Correction:
    """A corrected command, the releases it is written for, and what its repair fixed."""

    command: LaunchCommand
    releases: list[str]  # the target releases it parses on
    narrowed: bool  # True: fewer than the launch's releases (a fix's flag or value is newer)
    problems: list[Problem] = field(default_factory=list)
    # "corrected": it carries the root cause's fix; "suggested": only other findings' changes
    kind: str = "corrected"
    notes: list[str] = field(default_factory=list)  # fixes left out, and why
    # a compose / Kubernetes launch: env fixes for the container's environment, (name, value | None to remove)
    env: list[tuple[str, str | None]] = field(default_factory=list)


def corrected_command(command: str | None, findings: list[Finding], env_wrapper: bool = False,
                      version: str | None = None, server_args: dict[str, Any] | None = None) -> LaunchCommand | None:
    """The launch command with the chosen fixes applied, or None (no command, or nothing applies).

    `env_wrapper`: the command is a compose / Kubernetes one, which runs without a shell: env fixes
    go into the container's environment (`correct`'s `env`), here into an `env NAME=VALUE …` wrapper.
    """
    found = correct(command, findings, env_wrapper, version, server_args)
    if found is not None and found.env:  # (a caller without the file: the environment as an `env` wrapper)
        from sglang_doctor.fix.apply import apply_in_place

        apply_in_place(found.command, [FixOut(kind="env", name=n, action="set" if v is not None else "remove", value=v)
                                       for n, v in found.env], env_wrapper=True)
    return found.command if found is not None else None


def correct(command: str | None, findings: list[Finding], env_wrapper: bool = False, version: str | None = None,
            server_args: dict[str, Any] | None = None) -> Correction | None:
    """corrected_command, made to parse on every release the launch may run (`version`: a release
    or an inferred range): what any of them refuses is repaired (fix/validity.py). When a chosen
    fix's flag or value exists only in the newer releases of the range, the command is written for
    those (`narrowed`), not stripped of the fix."""
    if not command:
        return None
    cmd = parse_command(command)
    if cmd is None:
        return None
    targets = target_releases(version)
    root = next((f for f in findings if f.severity == "error" and not f.consequence_of), None)
    if root is not None and root.fixes and root.fixes[0].kind not in _COMMAND_KINDS:
        return None  # a package, a driver, the system: no command starts the fixed launch
    facts = server_args or {}
    refused: list[str] = []

    def allowed(fx: FixOut) -> bool:
        combo = created_by(fx, cmd, facts, targets)
        if combo is not None:
            note = f"{fx.flag} {fx.value or ''}".rstrip() + f" left out: {combo.why}; SGLang raises \"{combo.error}\""
            if note not in refused:
                refused.append(note)
        return combo is None

    chosen = chosen_fixes(findings, allowed)
    if not chosen:
        return None
    mine = recommended(root, allowed) if root is not None else []
    of_root = [any(fx is m for m in mine) for fx in chosen]  # (by position: respelling makes new fixes)
    narrowed = not all(writable(fx, targets) for fx in chosen)
    if narrowed:  # the releases disagree: the newest releases' spelling, for the newest releases taking it
        chosen = [_respelled(fx, targets[-1]) for fx in chosen]
        fits = list(itertools.takewhile(lambda r: all(writable(fx, [r]) for fx in chosen), reversed(targets)))
        targets = fits[::-1] or targets[-1:]
    # a compose / Kubernetes launch: env fixes go into the container's environment, not the command
    in_file = container_env(cmd, chosen) if env_wrapper else {}
    new_cmd, rest = apply_fixes(cmd, [fx for k, fx in enumerate(chosen) if k not in in_file], env_wrapper=env_wrapper)
    it = iter(rest)
    applied = [True if k in in_file else next(it) for k in range(len(chosen))]
    env = [e for e in in_file.values() if e is not None]
    if not any(applied):
        return None
    carries_root = root is None or any(ok and r for ok, r in zip(applied, of_root)) or any(
        m.kind == "flag" and m.action == "remove" and m.flag and cmd.has(m.flag) and not new_cmd.has(m.flag)
        for m in mine)  # (a flag the root cause removes, which another fix replaced)
    new_cmd, problems = repair(new_cmd, targets, server_args)
    # A fix with nothing to write (a `set` without a value, a removal of a flag the command lacks) is
    # still "applied": never give the user's own command back as its correction.
    if render(new_cmd) == render(cmd) and not env:
        return None
    return Correction(new_cmd, targets, narrowed, problems, "corrected" if carries_root else "suggested", refused, env)


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


def rebuilt_defaults(server_args: dict[str, Any], version: str | None, fixed: LaunchCommand | None) -> list[str]:
    """The flags a command rebuilt from server_args leaves out because the log shows them at the
    release's default (launch_command's release: the newest of `version`'s range), but for those
    its correction `fixed` sets."""
    from sglang_doctor.fix.rebuild import rebuild
    from sglang_doctor.registry.spelling import releases_of

    rels = releases_of(version)
    return [f for f in rebuild(server_args, rels[-1] if rels else None)[1] if fixed is None or not fixed.has(f)]
