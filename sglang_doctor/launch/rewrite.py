"""A `--cmd-file` rewritten to run the corrected launch (`--fix`), checked by reading it back.

The launch is edited in the user's own text: a script through splice.py (the rest of the script,
the wrapper, `&&` chains, continuations and every word the fix does not touch stay byte for byte,
secrets included), a compose / Kubernetes file through yaml_write.py. The result is read back the
way `--cmd-file` reads a file; unless it holds exactly the corrected launch (and environment), the
file is not to be written.
"""

from __future__ import annotations

from sglang_doctor.launch.command import LaunchCommand, extract_command, parse_command, render_words
from sglang_doctor.launch.yaml_edit import EnvEdit, edited_env, env_key, launch_edit


def rewrite_file(text: str, filename: str, cmd: LaunchCommand, env: list[EnvEdit] | None = None) -> str | None:
    """The file's text running `cmd` (with `env`, for a compose / Kubernetes file), or None when
    the edit cannot be made or does not read back as `cmd`."""
    is_yaml = filename.lower().endswith((".yml", ".yaml"))
    if is_yaml:
        from sglang_doctor.launch.yaml_write import rewrite_yaml

        new = rewrite_yaml(text, cmd, env)
    else:
        if env:
            return None  # (a script's environment fixes are in its command)
        from sglang_doctor.launch.splice import splice, _locate

        new = splice(text, cmd) if _locate(text) is not None else None
    if new is None or not _reads_back(text, new, filename, cmd, env if is_yaml else None):
        return None
    return new


def _reads_back(old: str, new: str, filename: str, cmd: LaunchCommand, env: list[EnvEdit] | None) -> bool:
    """Whether `new`, read as `--cmd-file` reads it, launches `cmd` (and, for YAML, has `env` applied)."""
    if env is not None or filename.lower().endswith((".yml", ".yaml")):
        before, after = launch_edit(old, cmd), launch_edit(new, cmd)
        if before is None or after is None or any(c for _, _, c in after[2]) or before[0] != after[0]:
            return False
        if env:
            key = env_key(before[1], before[0])
            if after[1].get(key) != edited_env(before[1].get(key), key, env):
                return False
    found = extract_command(new, filename)
    got = parse_command(found) if found else None
    if got is None:
        return False
    if env is not None:  # (the YAML environment becomes the command's preamble: compared above)
        return render_words(got) == render_words(cmd)
    return render_words(got) == render_words(cmd) and got.preamble == cmd.preamble
