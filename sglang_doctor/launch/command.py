"""Parse a user's SGLang launch command, apply suggested fixes, render it back.

Accepted forms: ``python3 -m sglang.launch_server ...``, ``sglang serve ...``,
``python path/to/sglang/launch_server.py ...``, the SGLang router's
``python -m sglang_router.launch_router ...`` / ``launch_server ...`` (also ``python -m
sglang_router launch|server``, ``smg launch|server``, a router image's entrypoint), any of
those behind ``VAR=value`` prefixes or inside ``docker run [options] IMAGE ...``, written
over several lines with ``\\`` continuations, comments and quotes. ``LaunchCommand.kind``
says which flags the entry point takes (SGLang's, the router's, or both). ``extract_command`` pulls the
launch out of a shell script or a docker-compose / Kubernetes YAML file.

Tokenising follows POSIX shell (``shlex`` posix) quoting rules, but with a small
lexer of our own: ``shlex`` cannot report where a token came from (needed to keep
the user's quoting on render), treats ``$((a + b))`` as three words and raises on
an unbalanced quote. ``$VAR``, ``${VAR}``, ``$(...)`` and backticks are kept
verbatim, never expanded.

Public API::

    parse_command(text, aliases=None) -> LaunchCommand | None
    extract_command(text, filename=None) -> str | None
    apply_fixes(cmd, fixes) -> tuple[LaunchCommand, list[bool]]
    render(cmd, multiline=False) -> str
    redact(cmd) -> LaunchCommand
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.launch.shell import (ASSIGN_RE, NUMBER_RE, SAFE_RE, VAR_REF_RE, Tok, basename, join_raw, lex,
                                         pythonish, simple_commands, strip_keywords)

__all__ = [
    "CO_LAUNCH",
    "DEFAULT_ALIASES",
    "ROUTER",
    "SERVER",
    "Arg",
    "DockerPart",
    "LaunchCommand",
    "extract_command",
    "parse_command",
    "render",
    "router_image",
]

# Alternative spellings folded onto one canonical flag so rules can ask for one name.
DEFAULT_ALIASES: dict[str, str] = {
    "--tp": "--tp-size",
    "--tensor-parallel-size": "--tp-size",
    "--dp": "--dp-size",
    "--data-parallel-size": "--dp-size",
    "--ep": "--ep-size",
    "--expert-parallel-size": "--ep-size",
    "--pp": "--pp-size",
    "--pipeline-parallel-size": "--pp-size",
    "--model": "--model-path",
    "--mem-frac": "--mem-fraction-static",
}


# What a launch starts, by its entry point (LaunchCommand.kind):
SERVER = "server"  # sglang.launch_server / sglang serve: SGLang's launch flags
ROUTER = "router"  # sglang_router.launch_router / smg launch: the router's flags only
CO_LAUNCH = "router-server"  # sglang_router.launch_server / smg server: both, router ones `--router-` prefixed


# --------------------------------------------------------------------------- data


@dataclass
class Arg:
    """One option (or stray positional) of the sglang launcher or of ``docker run``.

    ``flag`` is canonical ('' for a positional), ``written`` is the token exactly as
    typed (``--tp`` or ``--mem-fraction-static=0.8``), ``value`` is shell-unquoted.
    ``extra`` holds further values of nargs options (``--cuda-graph-bs 1 2 4``).
    """

    flag: str
    written: str
    value: str | None = None
    uses_equals: bool = False
    extra: list[str] = field(default_factory=list)
    attached: bool = False  # docker short option glued to its value: -eFOO=1
    spelled: str = ""  # option name as typed, without its value

    def __post_init__(self) -> None:
        if not self.spelled:
            self.spelled = self.written.split("=", 1)[0] if self.uses_equals else self.written

    @property
    def values(self) -> list[str]:
        return [] if self.value is None else [self.value, *self.extra]


@dataclass
class DockerPart:
    """``docker run`` and its options; the container command lives in LaunchCommand."""

    command: list[str]  # e.g. ['docker', 'run'] or ['sudo', 'docker', 'run']
    options: list[Arg]  # in the user's order, all before the image
    image: str

    def get(self, option: str) -> str | None:
        option = _docker_canon(option)
        hits = [o.value for o in self.options if o.flag == option]
        return hits[-1] if hits else None

    def has(self, option: str) -> bool:
        option = _docker_canon(option)
        return any(o.flag == option for o in self.options)


@dataclass
class LaunchCommand:
    """One parsed launch: ``[ENV=v ...] [docker run OPTS IMAGE] LAUNCHER ARGS [REDIRECTS]``.

    ``launcher`` is everything up to and including the sglang entry point
    (``['python3', '-m', 'sglang.launch_server']``, ``['sglang', 'serve']``).
    """

    env_prefix: list[tuple[str, str]]
    docker: DockerPart | None
    launcher: list[str]
    args: list[Arg]
    redirects: list[str] = field(default_factory=list)  # e.g. ['> server.log', '2>&1'], kept verbatim
    # words of the statements before the launch that may change its environment
    # (export / unset / set -a / assignments; see launch_env), in script order
    preamble: list[list[str]] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_ALIASES), repr=False, compare=False)
    # unquoted value -> the user's original token text, so untouched words render as typed
    quoting: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    kind: str = SERVER  # SERVER, ROUTER or CO_LAUNCH: which flags the entry point takes

    def __deepcopy__(self, memo: dict[int, Any]) -> LaunchCommand:
        """`copy.deepcopy`, field by field: a corrected command copies the launch several times a
        run, and the generic deep copy of its Args was ~1 ms of a cold start. A field not in
        _FIELD_COPY (a newer one) still gets the generic deep copy."""
        import copy

        new = object.__new__(LaunchCommand)
        for name, value in self.__dict__.items():
            how = _FIELD_COPY.get(name)
            new.__dict__[name] = how(value) if how is not None else copy.deepcopy(value, memo)
        return new

    @property
    def router_launcher(self) -> str | None:
        """The router registry's launcher whose flags this command takes, or None (SGLang alone)."""
        return {ROUTER: "launch_router", CO_LAUNCH: "launch_server"}.get(self.kind)

    @property
    def takes_server_flags(self) -> bool:
        """Whether SGLang's launch flags go on this command (not on a router-only launch)."""
        return self.kind != ROUTER

    def canon(self, flag: str) -> str:
        if "=" in flag:
            flag = flag.split("=", 1)[0]
        return self.aliases.get(flag, flag)

    def get(self, flag: str) -> str | None:
        """Value of the last occurrence (argparse: last wins); nargs values space-joined.

        None both for an absent flag and for a boolean one: use ``has`` to tell apart.
        """
        flag = self.canon(flag)
        for a in reversed(self.args):
            if a.flag == flag:
                return " ".join(a.values) if a.values else None
        return None

    def has(self, flag: str) -> bool:
        flag = self.canon(flag)
        return any(a.flag == flag for a in self.args)

    def env(self, name: str) -> str | None:
        """Value the server process sees for NAME (docker -e wins over a host prefix)."""
        if self.docker is not None:
            for o in reversed(self.docker.options):
                if o.flag == "--env" and o.value and o.value.split("=", 1)[0] == name and "=" in o.value:
                    return o.value.split("=", 1)[1]
            return None  # host env does not reach the container
        for k, v in reversed(self.env_prefix):
            if k == name:
                return v
        return None

    def set_value(self, a: Arg, values: list[str]) -> None:
        """Give argument `a` new value(s), written the way the user wrote it (`--flag=value`, attached)."""
        a.value, a.extra = values[0], list(values[1:])
        if a.uses_equals:
            a.written = f"{a.spelled}={self.quote(a.value)}"
        elif a.attached:
            a.written = a.spelled + self.quote(a.value)
        elif not a.flag:
            a.written = self.quote(a.value)

    def quote(self, value: str) -> str:
        raw = self.quoting.get(value)
        if raw is not None:
            return raw
        if value and (SAFE_RE.match(value) or VAR_REF_RE.match(value)):
            return value  # placeholders like $HF_TOKEN must stay bare to be expanded
        return shlex.quote(value)


# --------------------------------------------------------------------------- parse


_MODULES = {
    "sglang.launch_server": SERVER,
    "sglang_router.launch_server": CO_LAUNCH,
    "sglang_router.launch_router": ROUTER,
}
# `python -m sglang_router launch|server` and the console scripts of sglang-router 0.2.4+
_ROUTER_SUBCOMMANDS = {"launch": ROUTER, "server": CO_LAUNCH}
_ROUTER_SCRIPTS = {"smg", "amg", "sglang-router"}
_ROUTER_SCRIPT_RE = re.compile(r"\b(?:smg|amg)\s+(?:launch|server)\b")  # (sglang-router says "sglang")
# Docker images whose entrypoint is the router (the container command is its flags alone).
_ROUTER_IMAGE_RE = re.compile(r"(?:^|[/_-])(?:sgl|sglang)[-_](?:router|model[-_]gateway)(?::|@|$)", re.I)
_DOCKER_BINS = {"docker", "podman", "nvidia-docker"}
_NOT_LAUNCHERS = {"echo", "printf", "cat", "grep", "ps", "pkill", "kill", "which", "type"}


def _launcher_end(words: list[str]) -> tuple[int, str] | None:
    """(index just past the sglang or router entry point within words, kind), or None."""
    if not words or basename(words[0]) in _NOT_LAUNCHERS:
        return None
    for j, w in enumerate(words):
        nxt = words[j + 1] if j + 1 < len(words) else None
        after = words[j + 2] if j + 2 < len(words) else None
        if w == "-m" and (nxt in _MODULES or (nxt == "sglang_router" and after in _ROUTER_SUBCOMMANDS)):
            # -m first: the interpreter lives in docker's --entrypoint
            if j == 0 or any(pythonish(p) for p in words[:j]):
                if nxt == "sglang_router":
                    return j + 3, _ROUTER_SUBCOMMANDS[str(after)]
                return j + 2, _MODULES[str(nxt)]
        elif basename(w) == "sglang" and nxt == "serve":
            return j + 2, SERVER
        elif basename(w) in _ROUTER_SCRIPTS and nxt in _ROUTER_SUBCOMMANDS:
            return j + 2, _ROUTER_SUBCOMMANDS[str(nxt)]
        elif basename(w) in ("launch_server.py", "launch_router.py") and any(pythonish(p) for p in words[:j]):
            return j + 1, _script_kind(w)
    return None


def _script_kind(path: str) -> str:
    """What a launcher script run by path starts: sglang_router/launch_server.py is the co-launch."""
    if basename(path) == "launch_router.py":
        return ROUTER
    parts = path.rstrip("/").split("/")
    return CO_LAUNCH if len(parts) > 1 and parts[-2] == "sglang_router" else SERVER


def router_image(image: str) -> bool:
    """Whether a docker image is one of the router's (its entrypoint is the router)."""
    return bool(_ROUTER_IMAGE_RE.search(image.split("@", 1)[0]))


def _is_option(word: str) -> bool:
    # values may start with '-' only when they are numbers: --foo -1
    return len(word) > 1 and word.startswith("-") and not NUMBER_RE.match(word)


def _parse_args(words: list[Tok], aliases: Mapping[str, str]) -> list[Arg]:
    args: list[Arg] = []
    i, n = 0, len(words)
    only_positional = False
    while i < n:
        w = words[i]
        if not only_positional and w.value == "--":
            only_positional = True
            args.append(Arg("", w.raw, w.value))
            i += 1
            continue
        if not only_positional and _is_option(w.value):
            if w.value.startswith("--") and "=" in w.value:
                name, val = w.value.split("=", 1)
                args.append(Arg(aliases.get(name, name), w.raw, val, True, spelled=name))
                i += 1
                continue
            nxt = words[i + 1] if i + 1 < n else None
            if nxt is not None and not _is_option(nxt.value) and nxt.value != "--":
                args.append(Arg(aliases.get(w.value, w.value), w.raw, nxt.value, spelled=w.value))
                i += 2
            else:
                args.append(Arg(aliases.get(w.value, w.value), w.raw, None, spelled=w.value))
                i += 1
            continue
        # a bare word after a valued option is one more nargs value, else a positional
        if args and args[-1].flag and args[-1].value is not None and not only_positional:
            args[-1].extra.append(w.value)
        else:
            args.append(Arg("", w.raw, w.value))
        i += 1
    return args


# docker run options that take a value (canonical long names); every other option is boolean
_DOCKER_VALUE_OPTS = {
    "--add-host", "--annotation", "--attach", "--blkio-weight", "--blkio-weight-device",
    "--cap-add", "--cap-drop", "--cgroup-parent", "--cgroupns", "--cidfile", "--cpu-count",
    "--cpu-percent", "--cpu-period", "--cpu-quota", "--cpu-rt-period", "--cpu-rt-runtime",
    "--cpu-shares", "--cpus", "--cpuset-cpus", "--cpuset-mems", "--detach-keys", "--device",
    "--device-cgroup-rule", "--device-read-bps", "--device-read-iops", "--device-write-bps",
    "--device-write-iops", "--dns", "--dns-opt", "--dns-option", "--dns-search", "--domainname",
    "--entrypoint", "--env", "--env-file", "--expose", "--gpus", "--group-add", "--health-cmd",
    "--health-interval", "--health-retries", "--health-start-interval", "--health-start-period",
    "--health-timeout", "--hostname", "--io-maxbandwidth", "--io-maxiops", "--ip", "--ip6",
    "--ipc", "--isolation", "--kernel-memory", "--label", "--label-file", "--link",
    "--link-local-ip", "--log-driver", "--log-opt", "--mac-address", "--memory",
    "--memory-reservation", "--memory-swap", "--memory-swappiness", "--mount", "--name",
    "--network", "--network-alias", "--oom-score-adj", "--pid", "--pids-limit", "--platform",
    "--publish", "--pull", "--restart", "--runtime", "--security-opt", "--shm-size",
    "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs", "--ulimit",
    "--user", "--userns", "--uts", "--volume", "--volume-driver", "--volumes-from", "--workdir",
}  # fmt: skip
_DOCKER_SHORT = {
    "-e": "--env", "-v": "--volume", "-p": "--publish", "-w": "--workdir", "-u": "--user",
    "-m": "--memory", "-l": "--label", "-h": "--hostname", "-c": "--cpu-shares", "-a": "--attach",
    "-d": "--detach", "-i": "--interactive", "-t": "--tty", "-P": "--publish-all", "-q": "--quiet",
}  # fmt: skip
_DOCKER_LONG_ALIASES = {"--net": "--network", "--net-alias": "--network-alias", "--dns-opt": "--dns-option"}


def _docker_canon(option: str) -> str:
    if option.startswith("--") and "=" in option:
        option = option.split("=", 1)[0]
    option = _DOCKER_SHORT.get(option, option)
    return _DOCKER_LONG_ALIASES.get(option, option)


def _docker_takes_value(canon: str) -> bool:
    return canon in _DOCKER_VALUE_OPTS


def _parse_docker_options(words: list[Tok]) -> tuple[list[Arg], int]:
    """Options up to the image; returns them and the image's index (len(words) if none)."""
    opts: list[Arg] = []
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        v = w.value
        if not v.startswith("-") or v == "-":
            return opts, i
        if v.startswith("--"):
            if "=" in v:
                name, val = v.split("=", 1)
                opts.append(Arg(_docker_canon(name), w.raw, val, True, spelled=name))
                i += 1
            elif _docker_takes_value(_docker_canon(v)) and i + 1 < n:
                # docker's flag parser takes the next word whatever it looks like
                opts.append(Arg(_docker_canon(v), w.raw, words[i + 1].value, spelled=v))
                i += 2
            else:
                opts.append(Arg(_docker_canon(v), w.raw, None, spelled=v))
                i += 1
            continue
        # short options, possibly clustered (-it, -dp 80:80) or glued to a value (-eFOO=1)
        letters = v[1:]
        k = next((k for k, ch in enumerate(letters) if _docker_takes_value(_docker_canon("-" + ch))), None)
        if k is None:
            flag = _docker_canon(v) if len(letters) == 1 else v
            opts.append(Arg(flag, w.raw, None, spelled=v))
            i += 1
        elif k < len(letters) - 1:
            opts.append(Arg(_docker_canon("-" + letters[k]), w.raw, letters[k + 1 :], attached=True, spelled=v[: k + 2]))
            i += 1
        elif i + 1 < n:
            opts.append(Arg(_docker_canon("-" + letters[k]), w.raw, words[i + 1].value, spelled=v))
            i += 2
        else:
            opts.append(Arg(_docker_canon("-" + letters[k]), w.raw, None, spelled=v))
            i += 1
    return opts, n


def _sound(tok: Tok) -> Tok:
    """tok, or a re-quoted copy when its text would not survive being followed by more words.

    An unterminated quote or $( swallows the rest of the line; rendering it verbatim
    before other words would change them, so such a word is re-quoted from its value.
    """
    if not any(c in tok.raw for c in "'\"\\$`"):
        return tok  # nothing that could open a quote or a substitution (most words)
    again = lex(tok.raw + " ;")
    if len(again) == 2 and again[0].kind == "word" and again[0].value == tok.value and again[1].raw == ";":
        return tok
    return Tok(tok.kind, shlex.quote(tok.value), tok.value, tok.start, tok.end)


def _parse_simple(toks: list[Tok], aliases: Mapping[str, str]) -> LaunchCommand | None:
    toks = [_sound(t) if t.kind == "word" else t for t in strip_keywords(toks)]
    words: list[Tok] = []
    redirects: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "redir":
            group = [t]
            if i + 1 < len(toks) and toks[i + 1].kind == "word":
                group.append(toks[i + 1])
                i += 1
            redirects.append(join_raw(group))
        else:
            words.append(t)
        i += 1

    quoting = {w.value: w.raw for w in reversed(words)}
    i = 0
    env: list[tuple[str, str]] = []
    while i < len(words) and ASSIGN_RE.match(words[i].raw):
        name, val = words[i].value.split("=", 1)
        env.append((name, val))
        i += 1
    values = [w.value for w in words]

    docker: DockerPart | None = None
    start = i
    d = next(
        (j for j in range(i, min(i + 4, len(words))) if basename(values[j]) in _DOCKER_BINS),
        None,
    )
    if d is not None:
        sub = values[d + 1 : d + 3]
        run_at = d + 1 if sub[:1] == ["run"] else d + 2 if sub == ["container", "run"] else None
        if run_at is not None:
            opts, img = _parse_docker_options(words[run_at + 1 :])
            img += run_at + 1
            if img >= len(words):
                return None
            docker = DockerPart(values[i : run_at + 1], opts, values[img])
            start = img + 1
    found = _launcher_end(values[start:])
    if found is None and docker is not None and router_image(docker.image):
        if start == len(values) or _is_option(values[start]):
            found = (0, ROUTER)  # the image's entrypoint is the router: its flags follow the image
    if found is None:
        return None
    end, kind = found
    if kind == ROUTER:
        # SGLang's spellings (--tp, --model) are no router flags: only the caller's own aliases apply
        aliases = {k: v for k, v in aliases.items() if DEFAULT_ALIASES.get(k) != v}
    return LaunchCommand(
        env_prefix=env,
        docker=docker,
        launcher=values[start : start + end],
        args=_parse_args(words[start + end :], aliases),
        redirects=redirects,
        aliases=dict(aliases),
        quoting=quoting,
        kind=kind,
    )


def _merged_aliases(aliases: Mapping[str, str] | None) -> dict[str, str]:
    return {**DEFAULT_ALIASES, **(aliases or {})}


def _find_launch(text: str, aliases: Mapping[str, str], depth: int = 0) -> tuple[LaunchCommand, str] | None:
    """First sglang launch in text, with its one-line source; looks inside `sh -c '...'`.

    The source starts with the statements before the launch that change its environment
    (`export A=1; python3 -m sglang.launch_server …`), so it parses back to the same launch.
    """
    from sglang_doctor.launch.launch_env import env_statement, relevant

    simples = [strip_keywords(s) for s in simple_commands(lex(text))]
    preamble: list[tuple[list[str], str]] = []
    for s in simples:
        cmd = _parse_simple(s, aliases)
        if cmd is not None:
            keep = relevant([words for words, _ in preamble])
            preamble = [p for p, k in zip(preamble, keep) if k]
            cmd.preamble = [words for words, _ in preamble]
            return cmd, "; ".join([raw for _, raw in preamble] + [join_raw(s)])
        words = [t.value for t in s if t.kind == "word"]
        if len(words) == len(s) and env_statement(words):  # (no redirections: a plain statement)
            preamble.append((words, join_raw(s)))
    if depth >= 3:
        return None
    for s in simples:
        for a, b in zip(s, s[1:]):
            if a.value == "-c" and b.kind == "word" and ("sglang" in b.value or _ROUTER_SCRIPT_RE.search(b.value)):
                found = _find_launch(b.value, aliases, depth + 1)
                if found:
                    return found
    return None


def parse_command(text: str, aliases: dict[str, str] | None = None) -> LaunchCommand | None:
    """Parse the first SGLang launch in text (a command line or a whole script).

    ``aliases`` extends (and may override) DEFAULT_ALIASES. Returns None when no
    launch of sglang is found. A launch wrapped in ``bash -c '...'`` is returned
    without its wrapper (so a surrounding ``docker run`` is not kept).
    """
    if not isinstance(text, str):
        return None
    found = _find_launch(text, _merged_aliases(aliases))
    return found[0] if found else None


# --------------------------------------------------------------------------- extraction

_YAML_HINT_RE = re.compile(r"^\s*(?:services|command|entrypoint|args|containers|image)\s*:", re.M)


def _yaml_part(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return " ".join(shlex.quote(str(x)) for x in v if x is not None)
    # compose splits string commands on any whitespace, so newlines are not separators
    return str(v).replace("\\\r\n", " ").replace("\\\n", " ").replace("\n", " ")


def _yaml_candidates(doc: Any) -> Iterator[tuple[str, dict[Any, Any]]]:
    # iterative walk with a visited set: YAML anchors may build shared or cyclic nodes
    stack, seen = [doc], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            # compose: entrypoint + command; Kubernetes: command + args
            parts = [_yaml_part(node.get(k)) for k in ("entrypoint", "command", "args")]
            joined = " ".join(p for p in parts if p)
            if joined:
                yield joined, node
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def yaml_documents(text: str) -> Iterator[Any]:
    """The documents of a compose / Kubernetes file that load (a bad one is passed over)."""
    from sglang_doctor.read.safe_yaml import YamlError, load_yaml  # bounded loader: refuses alias bombs

    import yaml

    for chunk in re.split(r"(?m)^---[^\n]*$", text):  # Kubernetes files hold several documents
        if not chunk.strip():
            continue
        try:
            yield load_yaml(chunk)
        except (YamlError, yaml.YAMLError, RecursionError, ValueError, TypeError):
            continue


def _from_yaml(text: str) -> str | None:
    for doc in yaml_documents(text):
        for cand, node in _yaml_candidates(doc):
            found = _find_launch(cand, DEFAULT_ALIASES)
            if found:
                return "; ".join([*_yaml_env(node), found[1]])
    return None


def _yaml_scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"  # compose and Kubernetes pass YAML booleans as these words
    return str(v)


def _export_word(name: str, value: str | None) -> str | None:
    if not ASSIGN_RE.match(name + "="):
        return None
    if value is None:
        return name
    return f"{name}={value if SAFE_RE.match(value) or VAR_REF_RE.match(value) else shlex.quote(value)}"


def _yaml_env(node: dict[Any, Any]) -> list[str]:
    """The service's (container's) environment as shell statements: `. FILE` for env files,
    one `export` of every variable (NAME alone when its value comes from elsewhere)."""
    files: list[str] = []
    words: list[str | None] = []
    env_file = node.get("env_file")  # compose: a path, a list of paths or of {path: …}
    for f in env_file if isinstance(env_file, list) else [env_file] if env_file else []:
        path = f.get("path") if isinstance(f, dict) else f
        if isinstance(path, (str, int, float)):
            files.append(str(path))
    for ref in node.get("envFrom") or [] if isinstance(node.get("envFrom"), list) else []:  # Kubernetes
        if isinstance(ref, dict):
            for kind in ("configMapRef", "secretRef"):
                src = ref.get(kind)
                if isinstance(src, dict) and src.get("name"):
                    files.append(f"{kind}:{src['name']}")
    env = node.get("environment")
    if isinstance(env, dict):  # compose map form; a None value passes the host's variable
        words += [_export_word(str(k), None if v is None else _yaml_scalar(v)) for k, v in env.items()]
    elif isinstance(env, list):  # compose list form: NAME=VALUE or NAME
        for item in env:
            name, eq, value = str(item).partition("=")
            words.append(_export_word(name, value if eq else None))
    k8s = node.get("env")
    if isinstance(k8s, list):  # Kubernetes: {name, value} or {name, valueFrom}
        for item in k8s:
            if isinstance(item, dict) and item.get("name") is not None:
                value = item.get("value")
                words.append(_export_word(str(item["name"]), None if value is None else _yaml_scalar(value)))
    out = [". " + shlex.quote(f) for f in files]
    kept = [w for w in words if w]
    if kept:
        out.append("export " + " ".join(kept))
    return out


def extract_command(text: str, filename: str | None = None) -> str | None:
    """The SGLang launch command in a shell script or a compose/Kubernetes YAML file.

    Returned on one line with continuations joined and comments dropped; tokens keep
    their original quoting. None when no launch is found.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    name = (filename or "").lower()
    is_yaml = name.endswith((".yml", ".yaml"))
    if is_yaml or (not filename and _YAML_HINT_RE.search(text)):
        found = _from_yaml(text)
        if found or is_yaml:
            return found
    shell = _find_launch(text, DEFAULT_ALIASES)
    return shell[1] if shell else None


# --------------------------------------------------------------------------- fixes


# --------------------------------------------------------------------------- render


def _arg_tokens(cmd: LaunchCommand, a: Arg) -> list[str]:
    if not a.flag or a.uses_equals or a.attached or a.value is None:
        head = [a.written]
    else:
        head = [a.written, cmd.quote(a.value)]
    return head + [cmd.quote(x) for x in a.extra]


def _env_word(cmd: LaunchCommand, name: str, value: str) -> str:
    raw = cmd.quoting.get(f"{name}={value}")
    # quote only the value: a quoted NAME=... is a command word, not an assignment
    return raw if raw is not None else f"{name}={cmd.quote(value)}"


def render_words(cmd: LaunchCommand) -> list[str]:
    """The command's shell words, each as the user wrote it where the user wrote it."""
    return [t for line in _lines(cmd) for t in line]


def render(cmd: LaunchCommand, multiline: bool = False) -> str:
    """The command as shell text; multiline puts each docker option and flag on its own line."""
    lines = _lines(cmd)
    if not multiline:
        return " ".join(t for line in lines for t in line)
    return " \\\n  ".join(" ".join(line) for line in lines if line)


def _lines(cmd: LaunchCommand) -> list[list[str]]:
    env = [_env_word(cmd, k, v) for k, v in cmd.env_prefix]
    launcher = [cmd.quote(w) for w in cmd.launcher]
    lines: list[list[str]] = []
    if cmd.docker is not None:
        lines.append(env + [cmd.quote(w) for w in cmd.docker.command])
        lines += [_arg_tokens(cmd, o) for o in cmd.docker.options]
        lines.append([cmd.quote(cmd.docker.image), *launcher])
    else:
        lines.append(env + launcher)
    lines += [_arg_tokens(cmd, a) for a in cmd.args]
    lines[-1] = lines[-1] + list(cmd.redirects)
    return lines


def _arg_copy(arg: Arg) -> Arg:
    new = object.__new__(Arg)
    new.__dict__.update(arg.__dict__)
    new.extra = list(arg.extra)
    return new


def _docker_copy(part: DockerPart | None) -> DockerPart | None:
    if part is None:
        return None
    return DockerPart(list(part.command), [_arg_copy(a) for a in part.options], part.image)


def _same(value: Any) -> Any:
    return value


# How LaunchCommand.__deepcopy__ copies each field (strings and tuples of strings are immutable).
_FIELD_COPY: dict[str, Any] = {
    "env_prefix": list, "docker": _docker_copy, "launcher": list, "args": lambda args: [_arg_copy(a) for a in args],
    "redirects": list, "preamble": lambda words: [list(w) for w in words], "aliases": dict, "quoting": dict,
    "kind": _same,
}
