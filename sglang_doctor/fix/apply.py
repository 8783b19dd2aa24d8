"""Apply a finding's fixes to a copy of the launch command (flags, docker options, env)."""

from __future__ import annotations

import copy
from typing import Any

from sglang_doctor.fix.command_edit import _apply_docker, _apply_flag, _attr, _fix_values, _replace_flag
from sglang_doctor.fix.env_edit import apply_env
from sglang_doctor.launch.command import LaunchCommand

def _apply_env(cmd: LaunchCommand, name: str, action: str, values: list[str] | None, wrapper: bool = False) -> bool:
    return apply_env(cmd, name, action, " ".join(values) if values is not None else None, wrapper)


def apply_fixes(cmd: LaunchCommand, fixes: list[Any], env_wrapper: bool = False) -> tuple[LaunchCommand, list[bool]]:
    """Apply fixes to a copy of cmd; returns (new command, applied flags).

    ``env_wrapper``: write env fixes of a plain launch as ``env NAME=VALUE python …``
    (a compose / Kubernetes command, which no shell reads) instead of a ``NAME=VALUE`` prefix.

    A fix is a dict or an object with ``kind``, ``flag``, ``name``, ``action``,
    ``value`` (enums allowed), and ``launcher: router`` for a router flag (respelled for a
    ``sglang_router.launch_server`` command). ``applied[i]`` is True when the new command
    embodies fix i (edited, or already satisfied), False when it cannot be expressed in the
    command: package/system/note fixes, raise/lower without a target value, a docker fix on
    a command that is not ``docker run``, a router flag on an SGLang-only launch or an SGLang
    flag on a router-only one, a fix missing its flag/name.
    The input is never modified; applying the same fixes twice is a no-op.
    """
    new = copy.deepcopy(cmd)
    return new, apply_in_place(new, fixes, env_wrapper)


def apply_in_place(new: LaunchCommand, fixes: list[Any], env_wrapper: bool = False) -> list[bool]:
    """apply_fixes on `new` itself. A fix that `replaces` a flag writes its flag where the old one
    stood (the flag order is the user's); the further parts of one replacement follow it."""
    applied: list[bool] = []
    placed: dict[str, int] = {}  # an old flag replaced -> index just past what replaced it
    for fix in fixes:
        kind = str(_attr(fix, "kind") or "").lower()
        action = str(_attr(fix, "action") or "set").lower()
        values = _fix_values(_attr(fix, "value"))
        flag, name = _attr(fix, "flag"), _attr(fix, "name")
        router = str(_attr(fix, "launcher") or "") == "router"  # (router flags: their own spelling)
        if action not in ("set", "raise", "lower", "add", "remove"):
            ok = False
        elif kind == "flag" and flag and _attr(fix, "replaces") and action in ("set", "add") and not router:
            ok = _replace_flag(new, str(_attr(fix, "replaces")), str(flag), values, placed)
        elif kind == "flag" and flag:
            ok = _apply_flag(new, str(flag), action, values, router)
        elif kind == "docker" and flag:
            ok = _apply_docker(new, str(flag), action, values)
        elif kind == "env" and name:
            ok = _apply_env(new, str(name), action, values, env_wrapper)
        else:
            ok = False
        applied.append(ok)
    return applied
