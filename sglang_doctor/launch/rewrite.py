"""A `--cmd-file` rewritten to run the corrected launch (`--fix`), checked by reading it back.

The launch is edited in the user's own text: a script through splice.py (the rest of the script,
the wrapper, `&&` chains, continuations and every word the fix does not touch stay byte for byte,
secrets included), a compose / Kubernetes file through yaml_write.py. The result is read back the
way `--cmd-file` reads a file; unless it holds exactly the corrected launch (and environment), the
file is not to be written.
"""

from __future__ import annotations

import re

from sglang_doctor.launch.command import LaunchCommand, extract_command, parse_command, render_words
from sglang_doctor.launch.yaml_edit import EnvEdit, edited_env, env_key, launch_edit

_TO_FILL = re.compile(r"<[^<>\n]+>")  # a value the user fills in: `<iface>`, `<one distinct GPU per rank>`


def rewrite_file(text: str, filename: str, cmd: LaunchCommand, env: list[EnvEdit] | None = None) -> tuple[str | None, str]:
    """The file's text running `cmd` (with `env`, for a compose / Kubernetes file), or None and
    why: a value still to fill in, a shape that cannot be edited safely, a result that does not
    read back as `cmd`."""
    given = extract_command(text, filename)
    old = parse_command(given) if given else None
    before = set(render_words(old)) if old is not None else set()
    holes = [w for w in render_words(cmd) if w not in before and _TO_FILL.search(w)]
    holes += [f"{n}={v}" for n, v in env or [] if v is not None and _TO_FILL.search(v)]
    if holes:
        return None, f"the fix holds a value only you know ({holes[0]}): fill it in by hand"
    is_yaml = filename.lower().endswith((".yml", ".yaml"))
    if is_yaml:
        from sglang_doctor.launch.yaml_write import rewrite_yaml

        new, why = rewrite_yaml(text, cmd, env)
        if new is None:
            return None, why
    else:
        from sglang_doctor.launch.splice import splice, _locate

        if env or _locate(text) is None:  # (a script's environment fixes are in its command)
            return None, "the launch was not found in the file as written"
        new = splice(text, cmd)
    if not _reads_back(text, new, filename, cmd, env if is_yaml else None):
        return None, "the edited file did not read back as the corrected command"
    return new, ""


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
