"""Env fixes written into a launch command the way it sets its environment.

* `docker run`: `-e NAME=VALUE` among the options (before the image), replacing an
  existing `-e NAME…`; a host prefix would never reach the container.
* a plain launch: a `NAME=VALUE` prefix, replacing an existing one.
* an `env` wrapper in front of the interpreter (or `wrapper=True`, for a compose or
  Kubernetes command, where no shell reads prefixes): `env … NAME=VALUE python …`.
  A wrapper that names the variable (or clears the environment) is always the place to
  edit: it overrides a prefix and docker's `-e`.

A variable is written once: other assignments of it go. `remove` deletes what the command
sets, and adds `env -u NAME` when something the command cannot edit may still set it
(an `export` before the launch, an env file).
"""

from __future__ import annotations

from typing import Any

from sglang_doctor.fix.command_edit import _attr, _docker_key, _satisfied
from sglang_doctor.launch.command import Arg, LaunchCommand
from sglang_doctor.launch.shell import basename, pythonish
from sglang_doctor.launch.launch_env import env_wrapper, host_env


def apply_env(cmd: LaunchCommand, name: str, action: str, value: str | None, wrapper: bool = False) -> bool:
    """Edit cmd in place; False when the fix cannot be written (no value to set, no place)."""
    if action == "remove":
        return _remove(cmd, name)
    if value is None:
        return False  # 'set NAME' without a value: nothing to write
    current = _current(cmd, name)
    if action in ("raise", "lower") and current is not None and _satisfied(action, current, value):
        return True
    wr = env_wrapper(cmd.launcher)
    names_it = wr is not None and (wr.clear or any(n == name for _, _, n, _ in wr.ops))
    if wr is not None and wr.broken:
        if names_it:
            return False  # the wrapper that decides cannot be edited safely
        wr = None  # (a prefix or -e still reaches the server)
    in_wrapper = wr is not None and (cmd.docker is None or names_it)
    if in_wrapper or (wrapper and cmd.docker is None):
        return _set_in_wrapper(cmd, name, value)
    if cmd.docker is not None:
        _set_docker(cmd, name, value)
    else:
        _set_prefix(cmd, name, value)
    return True


def _current(cmd: LaunchCommand, name: str) -> str | None:
    from sglang_doctor.launch.launch_env import launch_env

    return launch_env(cmd).value(name)


def _env_opts(cmd: LaunchCommand, name: str) -> list[Arg]:
    assert cmd.docker is not None
    return [o for o in cmd.docker.options if o.flag == "--env" and _docker_key("--env", o.value) == name]


def _set_docker(cmd: LaunchCommand, name: str, value: str) -> None:
    docker = cmd.docker
    assert docker is not None
    hits = _env_opts(cmd, name)
    if hits:  # the first keeps its place and spelling (-e, --env=, -eNAME=…); the others go
        cmd.set_value(hits[0], [f"{name}={value}"])
        docker.options = [o for o in docker.options if o is hits[0] or o not in hits]
        return
    new = Arg("--env", "-e", f"{name}={value}")
    same_kind = [k for k, o in enumerate(docker.options) if o.flag == "--env"]
    docker.options.insert(same_kind[-1] + 1 if same_kind else len(docker.options), new)


def _set_prefix(cmd: LaunchCommand, name: str, value: str) -> None:
    at = next((k for k, (n, _) in enumerate(cmd.env_prefix) if n == name), None)
    if at is None:
        cmd.env_prefix.append((name, value))
        return
    cmd.env_prefix[at] = (name, value)
    cmd.env_prefix = [kv for k, kv in enumerate(cmd.env_prefix) if k == at or kv[0] != name]


def _drop_from_wrapper(cmd: LaunchCommand, name: str, unsets: bool = True) -> None:
    """Delete the wrapper's assignments of name (and its `-u name`, unless unsets=False)."""
    wr = env_wrapper(cmd.launcher)
    if wr is None:
        return
    for first, last, n, v in reversed(wr.ops):
        if n == name and (unsets or v is not None):
            del cmd.launcher[first:last]


def _ensure_wrapper(cmd: LaunchCommand) -> int | None:
    """Index just past the wrapper's options and assignments, adding `env` when there is none."""
    wr = env_wrapper(cmd.launcher)
    if wr is not None:
        return None if wr.broken else wr.end
    # right before the interpreter (or `sglang serve`), inside sudo / nohup / numactl; an
    # entrypoint-only launcher (`-m sglang.launch_server` after docker --entrypoint) has no place
    at = next((k for k, w in enumerate(cmd.launcher) if pythonish(w) or basename(w) == "sglang"), None)
    if at is None:
        return None
    cmd.launcher.insert(at, "env")
    return at + 1


def _set_in_wrapper(cmd: LaunchCommand, name: str, value: str) -> bool:
    saved = list(cmd.launcher)
    _drop_from_wrapper(cmd, name)
    end = _ensure_wrapper(cmd)
    if end is None:
        cmd.launcher = saved  # a fix that cannot be written leaves the command as it was
        return False
    word = f"{name}={value}"
    cmd.quoting.setdefault(word, f"{name}={cmd.quote(value)}")  # NAME='a b', not 'NAME=a b'
    cmd.launcher.insert(end, word)
    cmd.env_prefix = [kv for kv in cmd.env_prefix if kv[0] != name]
    if cmd.docker is not None:
        cmd.docker.options = [o for o in cmd.docker.options if o not in _env_opts(cmd, name)]
    return True


def _remove(cmd: LaunchCommand, name: str) -> bool:
    wr = env_wrapper(cmd.launcher)
    if wr is not None and wr.broken and (wr.clear or any(n == name for _, _, n, _ in wr.ops)):
        return False  # the wrapper that decides cannot be edited safely
    cmd.env_prefix = [kv for kv in cmd.env_prefix if kv[0] != name]
    _drop_from_wrapper(cmd, name, unsets=False)  # (an `env -u NAME` is what a removal wants)
    wr = env_wrapper(cmd.launcher)
    if wr is not None and any(n == name and v is None for _, _, n, v in wr.ops):
        return True
    if cmd.docker is not None:
        cmd.docker.options = [o for o in cmd.docker.options if o not in _env_opts(cmd, name)]
        outside = cmd.docker.has("--env-file")
    else:
        host = host_env(cmd)  # (the prefixes are gone: what is left comes from the script)
        var = host.vars.get(name)
        outside = (var is not None and var.is_set) or bool(host.env_files)
    if outside:
        if _ensure_wrapper(cmd) is None:
            return False  # (what the command itself set is gone; the rest cannot be undone here)
        wr = env_wrapper(cmd.launcher)
        assert wr is not None
        cmd.launcher[wr.start + 1:wr.start + 1] = ["-u", name]  # env takes options before assignments only
    return True


def container_env(cmd: LaunchCommand, fixes: list[Any]) -> dict[int, tuple[str, str | None] | None]:
    """The env fixes of a compose / Kubernetes launch that go into the container's environment
    (`environment:` / `env:`), by their position in `fixes`: (name, value), value None to remove
    it, or None when the launch already satisfies the fix. A variable the command's own `env`
    wrapper names stays there (it overrides the environment); a removal while an env file may set
    the variable stays with the command (`env -u`)."""
    from sglang_doctor.launch.launch_env import launch_env

    wr = env_wrapper(cmd.launcher)
    out: dict[int, tuple[str, str | None] | None] = {}
    for k, fix in enumerate(fixes):
        name, action, value = _attr(fix, "name"), str(_attr(fix, "action") or "set"), _attr(fix, "value")
        if str(_attr(fix, "kind") or "") != "env" or not name or action not in ("set", "raise", "lower", "remove"):
            continue
        if wr is not None and (wr.clear or any(n == name for _, _, n, _ in wr.ops)):
            continue
        current = launch_env(cmd).value(name)
        if action == "remove":
            if not host_env(cmd).env_files:
                out[k] = (name, None) if current is not None else None
            continue
        if value is None:
            continue
        satisfied = current is not None and (
            current == str(value) if action == "set" else _satisfied(action, current, str(value)))
        out[k] = None if satisfied else (name, str(value))
    return out
