"""The environment the SGLang server starts with, as far as the launch command tells.

Rules ask for it as facts (`env.NAME`, `env_set.NAME`, `launch.env_file`). The sources, in
the order the shell and docker apply them (a later one wins):

* a plain launch: the `export` / `unset` / `declare -x` / `set -a` statements before it in
  the same script, then `NAME=VALUE` prefixes, then an `env` wrapper (`env -u X Y=1 python …`);
* `docker run`: `--env-file` (its contents are not seen), then each `-e` / `--env` in order
  (`-e NAME` passes the host's value, known when the host side sets it), then an `env`
  wrapper in the container's command. The host's own exports and prefixes stop at docker.

A compose / Kubernetes service's `environment:` / `env:` arrive as `export` statements in
front of its command (command.extract_command writes them). What the log says about the
environment (context.py's extractors) wins over all of this.

Values are never expanded: `$HF_TOKEN` stays a reference. Values are kept as the command has
them, secrets too: the report is redacted as a whole before anything is written
(policy/redact.py, the one definition of what is secret).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import re

from sglang_doctor.launch.shell import basename, pythonish

if TYPE_CHECKING:
    from sglang_doctor.launch.command import LaunchCommand


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ASSIGN_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.S)
_STATEMENTS = {"export", "unset", "declare", "typeset", "set", "source", "."}


@dataclass(frozen=True, slots=True)
class EnvVar:
    """One variable as the server process would see it."""

    value: str | None  # None: set to a value the command does not show (-e NAME, export NAME)
    source: str  # export, prefix, env, docker -e, log …
    is_set: bool = True  # False: explicitly unset (env -u NAME, unset NAME)


@dataclass
class LaunchEnv:
    """The resolved environment: what the command sets or unsets, and what it cannot see."""

    vars: dict[str, EnvVar] = field(default_factory=dict)
    env_files: list[str] = field(default_factory=list)  # --env-file, compose env_file, `source FILE`
    cleared: bool = False  # `env -i`: nothing inherited reaches the server

    def set(self, name: str, value: str | None, source: str) -> None:
        self.vars[name] = EnvVar(value, source)

    def unset(self, name: str, source: str) -> None:
        self.vars[name] = EnvVar(None, source, is_set=False)

    def value(self, name: str) -> str | None:
        v = self.vars.get(name)
        return v.value if v is not None and v.is_set else None


# --------------------------------------------------------------------------- shell statements


def env_statement(words: list[str]) -> bool:
    """A simple command before the launch that may change the environment it inherits."""
    if not words:
        return False
    if words[0] in _STATEMENTS:
        return words[0] != "set" or "allexport" in words or any(_allexport_switch(w) is not None for w in words[1:])
    return all(_ASSIGN_RE.match(w) for w in words)  # NAME=V alone: exported under set -a


def relevant(statements: list[list[str]]) -> list[bool]:
    """Which env statements matter to the launch: all but plain assignments of shell variables
    that are never exported (`MODEL=${1:-x}` outside `set -a`)."""
    named = {w.split("=", 1)[0] for words in statements if words and words[0] != "set" and not _ASSIGN_RE.match(words[0])
             for w in words[1:]}
    out, allexport = [], False
    for words in statements:
        if words and words[0] == "set":
            for w in words[1:]:
                on = _allexport_switch(w)
                allexport = allexport if on is None else on
            if "allexport" in words[1:]:
                allexport = "-o" in words
        plain = bool(words) and words[0] not in _STATEMENTS
        out.append(not plain or allexport or any(w.split("=", 1)[0] in named for w in words))
    return out


def _allexport_switch(word: str) -> bool | None:
    """True for `-a` / `-o allexport` style switches on, False for off, None for others."""
    if word in ("-o", "+o"):
        return None
    if re.fullmatch(r"-[a-zA-Z]*a[a-zA-Z]*", word):
        return True
    if re.fullmatch(r"\+[a-zA-Z]*a[a-zA-Z]*", word):
        return False
    return None


class _Shell:
    """Replays env statements: which shell variables exist and which are exported."""

    def __init__(self, env: LaunchEnv) -> None:
        self.env = env
        self.shell: dict[str, str] = {}  # plain assignments, not (yet) exported
        self.allexport = False

    def run(self, words: list[str]) -> None:
        head, rest = words[0], words[1:]
        if head in ("source", ".") and rest:
            self.env.env_files.append(rest[0])
        elif head == "set":
            for i, w in enumerate(rest):
                on = _allexport_switch(w)
                if w in ("-o", "+o") and i + 1 < len(rest) and rest[i + 1] == "allexport":
                    on = w == "-o"
                if on is not None:
                    self.allexport = on
        elif head == "unset":
            if "-f" not in rest:
                for name in (w for w in rest if _NAME_RE.match(w)):
                    self.shell.pop(name, None)
                    self.env.unset(name, "unset")
        elif head in ("export", "declare", "typeset"):
            self._export(head, rest)
        else:
            for w in words:
                self._assign(w, export=False)

    def _export(self, head: str, rest: list[str]) -> None:
        opts = "".join(w[1:] for w in rest if w.startswith("-") and not _ASSIGN_RE.match(w))
        if "f" in opts:
            return  # functions, not variables
        exported = head == "export" or "x" in opts
        if head == "export" and "n" in opts:
            for name in (w for w in rest if _NAME_RE.match(w)):
                self.env.unset(name, "export -n")
            return
        for w in rest:
            if w.startswith("-"):
                continue
            if exported and _NAME_RE.match(w):  # export NAME: the shell variable, or an inherited one
                self.env.set(w, self.shell.get(w), "export")
            else:
                self._assign(w, export=exported)

    def _assign(self, word: str, export: bool) -> None:
        m = _ASSIGN_RE.match(word)
        if not m:
            return
        name, value = m.group(1), m.group(2)
        known = self.env.vars.get(name)
        if export or self.allexport or (known is not None and known.is_set):  # an exported variable stays exported
            self.env.set(name, value, "export")
        else:
            self.shell[name] = value


# --------------------------------------------------------------------------- the env wrapper


@dataclass
class Wrapper:
    """An `env` command in front of the interpreter: its span in the launcher and what it does."""

    start: int  # index of the `env` word
    end: int  # index just past its last option or assignment
    clear: bool = False
    broken: bool = False  # an option without its argument (`env -u python3 …`): no place to write to
    ops: list[tuple[int, int, str, str | None]] = field(default_factory=list)  # (first, last+1, name, value|None=unset)


_ENV_VALUE_OPTS = {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}


def env_wrapper(launcher: list[str]) -> Wrapper | None:
    """The first `env` word of the launcher (before the interpreter), parsed like coreutils env."""
    interp = next((i for i, w in enumerate(launcher) if pythonish(w) or basename(w) == "sglang"), len(launcher))
    start = next((i for i, w in enumerate(launcher[:interp]) if basename(w) == "env"), None)
    if start is None:
        return None
    wr = Wrapper(start, start + 1)
    i = start + 1
    options = True
    while i < interp:  # (never into the interpreter: `env -u python3 …` unsets nothing it runs)
        w = launcher[i]
        if options and w == "--":
            options, i = False, i + 1
            continue
        if options and w in ("-", "-i", "--ignore-environment"):
            wr.clear, i = True, i + 1
            continue
        if options and (w.startswith("--unset=") or (w.startswith("-u") and len(w) > 2)):
            wr.ops.append((i, i + 1, w.split("=", 1)[1] if w.startswith("--") else w[2:], None))
            i += 1
            continue
        if options and w in _ENV_VALUE_OPTS:
            if i + 1 >= interp:
                wr.broken = True
                break
            if w in ("-u", "--unset"):
                wr.ops.append((i, i + 2, launcher[i + 1], None))
            i += 2
            continue
        if options and w.startswith("-") and not _ASSIGN_RE.match(w):
            i += 1  # -0, -v, --debug, --chdir=DIR
            continue
        m = _ASSIGN_RE.match(w)
        if not m:
            wr.broken = w.startswith("-")  # an option after the assignments: env would run it
            break
        options = False
        wr.ops.append((i, i + 1, m.group(1), m.group(2)))
        i += 1
    wr.end = i
    return wr


def _apply_wrapper(env: LaunchEnv, launcher: list[str]) -> None:
    wr = env_wrapper(launcher)
    if wr is None:
        return
    if wr.clear:
        env.vars.clear()
        env.env_files.clear()
        env.cleared = True
    for _, _, name, value in wr.ops:
        if value is None:
            env.unset(name, "env -u")
        else:
            env.set(name, value, "env")


# --------------------------------------------------------------------------- resolution


def host_env(cmd: LaunchCommand) -> LaunchEnv:
    """What the command's own shell passes on: script exports, then NAME=VALUE prefixes."""
    env = LaunchEnv()
    sh = _Shell(env)
    for words in cmd.preamble:
        if words:
            sh.run(words)
    for name, value in cmd.env_prefix:
        env.set(name, value, "prefix")
    return env


def launch_env(cmd: LaunchCommand) -> LaunchEnv:
    """The environment the server process starts with, by the shell's and docker's precedence."""
    host = host_env(cmd)
    if cmd.docker is None:
        _apply_wrapper(host, cmd.launcher)
        return host
    env = LaunchEnv()
    for o in cmd.docker.options:
        if o.flag == "--env-file" and o.value:
            env.env_files.append(o.value)
        elif o.flag == "--env" and o.value:
            name, eq, value = o.value.partition("=")
            if not _NAME_RE.match(name):
                continue
            if eq:
                env.set(name, value, "docker -e")
            elif host.vars.get(name) is not None and not host.vars[name].is_set:
                env.unset(name, "docker -e")  # -e NAME of a variable the host does not set: unset
            else:
                env.set(name, host.value(name), "docker -e")
    _apply_wrapper(env, cmd.launcher)
    return env


def same_value(a: str, b: str) -> bool:
    """Two env values SGLang reads alike: 1/true/yes/y and 0/false/no/n, 1 and 1.0, else exact text."""
    truthy, falsy = ("1", "true", "yes", "y"), ("0", "false", "no", "n")
    la, lb = a.strip().lower(), b.strip().lower()
    for group in (truthy, falsy):
        if la in group and lb in group:
            return True
    try:
        return float(la) == float(lb)
    except ValueError:
        return a == b
