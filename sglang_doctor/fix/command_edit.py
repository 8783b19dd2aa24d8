"""Edits of a parsed launch command: a flag or docker option set, raised, lowered, added or removed.

Raise and lower never move a value the wrong way (already high or low enough counts as done);
the user's spelling of each argument (`--flag=value`, attached short options, quoting) is kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Any

from sglang_doctor.launch.command import Arg, LaunchCommand, _docker_canon
from sglang_doctor.launch.shell import NUMBER_RE

def _attr(fix: Any, key: str) -> Any:
    v = fix.get(key) if isinstance(fix, Mapping) else getattr(fix, key, None)
    return v.value if isinstance(v, Enum) else v


def _fix_values(v: Any) -> list[str] | None:
    """A list/tuple value means several tokens (nargs); a string is always one token."""
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v] or None
    if isinstance(v, bool):
        return ["true" if v else "false"]
    return [str(v)]


_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?|\.\d+)\s*([kmgtp]?)(?:i?b)?$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def _as_number(v: str | None) -> float | None:
    """Plain numbers and docker sizes (16g, 512m) so raise/lower can compare."""
    if v is None:
        return None
    v = v.strip()
    if NUMBER_RE.match(v):
        return float(v)
    m = _SIZE_RE.match(v)
    return float(m.group(1)) * _UNITS[m.group(2).lower()] if m else None


def _satisfied(action: str, current: str | None, target: str) -> bool:
    """raise/lower never move a value the wrong way: already high (low) enough counts as done."""
    cur, new = _as_number(current), _as_number(target)
    if cur is None or new is None:
        return False
    return (action == "raise" and cur >= new) or (action == "lower" and cur <= new)


def _apply_flag(cmd: LaunchCommand, flag: str, action: str, values: list[str] | None, router: bool = False) -> bool:
    """Edit one flag. ``router``: a router flag (launch_router spelling), else an SGLang launch flag;
    each goes only on a command whose entry point takes it."""
    if "=" in flag and values is None:
        flag, v = flag.split("=", 1)
        values = [v]
    if router:
        launcher = cmd.router_launcher
        if launcher is None:
            return False  # an SGLang-only launch: the router runs elsewhere
        from sglang_doctor.registry.router_flags import spell

        spelled = spell(flag, None, launcher)
        if spelled is None and action != "remove":  # (a removal takes the flag as the user typed it)
            return False
        flag = spelled or flag
    elif not cmd.takes_server_flags:
        return False  # a router-only launch takes no SGLang launch flag
    flag = cmd.canon(flag)
    hits = [a for a in cmd.args if a.flag == flag]
    if action == "remove":
        cmd.args = [a for a in cmd.args if a.flag != flag]
        return True
    if values is None:
        if action in ("raise", "lower"):
            return False  # the target value is unknown: nothing sensible to write
        if not hits:
            if router:
                from sglang_doctor.registry.router_flags import takes_value
            else:
                from sglang_doctor.registry.flags import takes_value

            if action == "set" and takes_value(flag):
                return False  # a flag that needs a value the fix does not know: not written bare
            cmd.args.append(Arg(flag, flag))
        return True
    if action in ("raise", "lower") and hits and _satisfied(action, hits[-1].value, values[0]):
        return True
    if hits:
        for a in hits:  # every occurrence, so a later duplicate cannot override the fix
            cmd.set_value(a, values)
    else:
        cmd.args.append(Arg(flag, flag, values[0], extra=list(values[1:])))
    return True


def _replace_flag(cmd: LaunchCommand, old: str, flag: str, values: list[str] | None, placed: dict[str, int]) -> bool:
    """Write `flag [values]` where `old` stands (every occurrence; the first keeps its place), or,
    when an earlier part of the same replacement took that place, right after it; else as `set`."""
    if not cmd.takes_server_flags:
        return False
    old_c, new_c = cmd.canon(old), cmd.canon(flag)
    hits = [k for k, a in enumerate(cmd.args) if a.flag == old_c]
    if not hits and old_c not in placed:
        return _apply_flag(cmd, flag, "set" if values is not None else "add", values)
    if values is None:
        from sglang_doctor.registry.flags import takes_value

        if takes_value(new_c) and not (hits and cmd.args[hits[0]].value is not None and old_c != new_c):
            return False  # a flag that needs a value the fix does not know: not written bare
        if hits and cmd.args[hits[0]].value is not None and takes_value(new_c):
            values = cmd.args[hits[0]].values  # a rename keeps the user's value
    new = Arg(new_c, flag, values[0] if values else None, extra=list(values[1:]) if values else [])
    if hits:
        first = cmd.args[hits[0]]
        if first.uses_equals and values:  # the user's `--flag=value` form
            new = Arg(new_c, f"{flag}={cmd.quote(values[0])}", values[0], True, list(values[1:]), spelled=flag)
        at = hits[0] - sum(1 for k in hits if k < hits[0])
        cmd.args = [a for a in cmd.args if a.flag != old_c]
    else:
        at = placed[old_c]
    # another occurrence of the new flag would override (argparse: the last wins)
    others = [k for k, a in enumerate(cmd.args) if a.flag == new_c]
    cmd.args = [a for a in cmd.args if a.flag != new_c]
    at -= sum(1 for k in others if k < at)
    cmd.args.insert(at, new)
    placed[old_c] = at + 1
    return True


def _docker_key(flag: str, value: str | None) -> str | None:
    """Identity of one entry of a repeatable docker option (-e NAME=..., --ulimit memlock=...)."""
    if value is None:
        return None
    if flag in ("--env", "--ulimit", "--sysctl", "--label", "--log-opt", "--storage-opt", "--annotation"):
        return value.split("=", 1)[0]
    if flag in ("--security-opt", "--add-host"):
        return re.split(r"[=:]", value, maxsplit=1)[0]
    if flag == "--volume":
        parts = value.split(":")
        return parts[1] if len(parts) > 1 else parts[0]
    if flag == "--tmpfs":
        return value.split(":", 1)[0]
    return value


_DOCKER_REPEATABLE = {
    "--env", "--volume", "--publish", "--device", "--ulimit", "--cap-add", "--cap-drop",
    "--security-opt", "--add-host", "--label", "--mount", "--tmpfs", "--sysctl", "--env-file",
    "--log-opt", "--dns", "--group-add", "--link", "--expose", "--volumes-from", "--storage-opt",
    "--annotation", "--device-cgroup-rule", "--label-file",
}  # fmt: skip


def _apply_docker(cmd: LaunchCommand, flag: str, action: str, values: list[str] | None) -> bool:
    docker = cmd.docker
    if docker is None:
        return False
    if "=" in flag and flag.startswith("--") and values is None:
        flag, v = flag.split("=", 1)
        values = [v]
    flag = _docker_canon(flag)
    value = " ".join(values) if values is not None else None
    key = _docker_key(flag, value) if flag in _DOCKER_REPEATABLE else None

    def same(o: Arg) -> bool:
        return o.flag == flag and (key is None or _docker_key(flag, o.value) == key)

    hits = [o for o in docker.options if same(o)]
    if action == "remove":
        docker.options = [o for o in docker.options if not same(o)]
        return True
    if value is None:
        if action in ("raise", "lower"):
            return False
        if not any(o.flag == flag for o in docker.options):
            docker.options.append(Arg(flag, flag))
        return True
    if action in ("raise", "lower") and hits and _satisfied(action, hits[-1].value, value):
        return True
    if hits:
        for o in hits:
            cmd.set_value(o, [value])
    else:
        spelled = "-e" if flag == "--env" else flag  # the form everyone writes
        new = Arg(flag, spelled, value)
        same_kind = [k for k, o in enumerate(docker.options) if o.flag == flag]
        docker.options.insert(same_kind[-1] + 1 if same_kind else len(docker.options), new)
    return True
