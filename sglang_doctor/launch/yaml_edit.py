"""An edited launch written back into a compose or Kubernetes file, as the YAML fragment that changes.

A compose service or a Kubernetes container runs its `entrypoint`/`command`/`args` without a shell,
so the corrected launch is not a shell command there: it is those keys, in the form the user wrote
them (a list stays a list, a string a string), under the path of the service or container that
holds the launch. Keys the edit does not touch are left out; the launch inside a `bash -c` string
is edited in place (launch/splice.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from typing import Any

from sglang_doctor.launch.command import DEFAULT_ALIASES, LaunchCommand, _find_launch, _yaml_part, yaml_documents
from sglang_doctor.launch.splice import splice

_KEYS = ("entrypoint", "command", "args")  # compose: entrypoint + command; Kubernetes: command + args


def _words(v: Any) -> list[str]:
    """The words a key's value holds (a list: its items; a string: split as the joined command reads it)."""
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v if x is not None]
    try:
        return shlex.split(_yaml_part(v))
    except ValueError:
        return _yaml_part(v).split()


def _nodes(doc: Any) -> Iterator[tuple[list[str], dict[Any, Any]]]:
    """(path, mapping) of every mapping holding a command key, outermost first."""
    stack: list[tuple[list[str], Any]] = [([], doc)]
    seen: set[int] = set()
    while stack:
        path, node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            if any(node.get(k) for k in _KEYS):
                yield path, node
            stack.extend(reversed([([*path, str(k)], v) for k, v in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed([([*path, _item_name(v, i)], v) for i, v in enumerate(node)]))


def _item_name(v: Any, i: int) -> str:
    """A list item's name in a path: a container's `name`, else its index."""
    return f"[{v['name']}]" if isinstance(v, dict) and isinstance(v.get("name"), str) else f"[{i}]"


def _distribute(keys: list[tuple[str, list[str]]], new: list[str]) -> dict[str, list[str]]:
    """The new words of each key. Each change (difflib's opcodes over the joined words) goes to the
    key holding the position it starts at (an insertion at a boundary: the later key, where flags
    go; at the very end: the last key); a replaced span crossing keys loses its old words in each."""
    import difflib

    old = [w for _, ws in keys for w in ws]
    bounds, start = [], 0
    for _, ws in keys:
        bounds.append((start, start + len(ws)))
        start += len(ws)

    def owner(i: int) -> int:
        return next((n for n, (s, e) in enumerate(bounds) if s <= i < e), len(keys) - 1)

    # per key: (old position, words) pieces, the kept words and the inserted ones, in order
    pieces: list[list[tuple[float, list[str]]]] = [[] for _ in keys]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            for i in range(i1, i2):
                pieces[owner(i)].append((i, [old[i]]))
        elif new[j1:j2]:
            pieces[owner(i1)].append((i1 - 0.5, new[j1:j2]))  # before the old word at i1
    return {key: [w for _, ws in sorted(pieces[n], key=lambda x: x[0]) for w in ws] for n, (key, _) in enumerate(keys)}


def _join(words: list[str]) -> str:
    """A string command: words quoted only when compose's splitting needs it (a `$NAME` placeholder
    stays bare: compose substitutes it from the host's environment)."""
    import re

    return " ".join(w if re.fullmatch(r"[^\s'\"\\]+", w) else shlex.quote(w) for w in words)


def _launch_nodes(text: str) -> Iterator[tuple[list[tuple[str, list[str]]], dict[Any, Any], list[str]]]:
    """(its command keys' words, the mapping, its path) of each mapping whose keys hold an SGLang launch."""
    for doc in yaml_documents(text):
        for path, node in _nodes(doc):
            keys = [(k, _words(node.get(k))) for k in _KEYS if node.get(k)]
            if _find_launch(shlex.join([w for _, ws in keys for w in ws]), DEFAULT_ALIASES):
                yield keys, node, path


def launch_edit(text: str, cmd: LaunchCommand) -> tuple[list[str], dict[Any, Any], list[tuple[str, Any, bool]]] | None:
    """The service / container in `text` that holds the launch (its path and mapping), and each of
    its command keys with the value that runs `cmd` and whether that differs from the file's. A
    value keeps the form the user wrote (a list stays a list; a string holding the whole launch is
    edited in place, keeping its quoting). None when the file's launch is not found."""
    for keys, node, path in _launch_nodes(text):
        joined = shlex.join([w for _, ws in keys for w in ws])
        split = _distribute(keys, shlex.split(splice(joined, cmd)))
        out: list[tuple[str, Any, bool]] = []
        for k, ws in keys:
            original = node[k]
            if split[k] == ws:
                out.append((k, list(original) if isinstance(original, (list, tuple)) else str(original), False))
            elif isinstance(original, (list, tuple)):
                out.append((k, split[k], True))
            elif len(keys) == 1 and _find_launch(_yaml_part(original), DEFAULT_ALIASES):
                out.append((k, splice(str(original), cmd), True))  # the user's own string, only the launch's words changed
            else:
                out.append((k, _join(split[k]), True))
        return path, node, out
    return None


def where(path: list[str]) -> str:
    """A path as the fragment's comment names it: `services.sglang`, `spec.containers[sglang]`."""
    return ".".join(path).replace(".[", "[") or "(top level)"


# --- the container's environment: compose `environment:` (a mapping or NAME=VALUE items), Kubernetes `env:`

EnvEdit = tuple[str, str | None]  # (name, value); None: the variable is removed
Mask = Callable[[str, str], str]  # (name, value) -> the value as shown (a secret masked)


def env_key(node: dict[Any, Any], path: list[str]) -> str:
    """The key holding the container's environment: the one the file uses, else `env` for a
    Kubernetes container (its path runs through `containers`), `environment` for a compose service."""
    for key in ("environment", "env"):
        if key in node:
            return key
    return "env" if any(p in ("containers", "initContainers") for p in path) else "environment"


def edited_env(current: Any, key: str, edits: list[EnvEdit], mask: Mask | None = None) -> Any:
    """The environment `current` (as loaded; None when absent) with `edits` applied, in its own
    form; new compose entries in the mapping form when the file has none. `mask`: every value as shown."""
    show = mask or (lambda n, v: v)
    if key == "env":  # Kubernetes: [{name, value} | {name, valueFrom}]
        items = [dict(x) for x in current] if isinstance(current, list) else []
        for name, value in edits:
            at = next((i for i, x in enumerate(items) if isinstance(x, dict) and x.get("name") == name), None)
            if value is None:
                items = [x for i, x in enumerate(items) if i != at]
            elif at is None:
                items.append({"name": name, "value": value})
            else:
                items[at] = {"name": name, "value": value}
        return [{**x, "value": show(str(x["name"]), str(x["value"]))}
                if isinstance(x, dict) and isinstance(x.get("value"), str) and "name" in x else x for x in items]
    if isinstance(current, list):  # compose: NAME=VALUE or NAME
        out = [str(x) for x in current]
        for name, value in edits:
            at = next((i for i, x in enumerate(out) if x.partition("=")[0] == name), None)
            if value is None:
                out = [x for i, x in enumerate(out) if i != at]
            elif at is None:
                out.append(f"{name}={value}")
            else:
                out[at] = f"{name}={value}"
        return [f"{n}={show(n, v)}" if eq else n for n, eq, v in (x.partition("=") for x in out)]
    env = dict(current) if isinstance(current, dict) else {}
    for name, value in edits:
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return {k: show(str(k), v) if isinstance(v, str) else v for k, v in env.items()}


def _dump_value(key: str, value: Any) -> str:
    import yaml

    return yaml.safe_dump({key: value}, sort_keys=False, width=10_000, default_flow_style=False,
                          allow_unicode=True).rstrip("\n")


def yaml_fragment(text: str, cmd: LaunchCommand, env: list[EnvEdit] | None = None, mask: Mask | None = None,
                  keys: list[str] | None = None) -> str | None:
    """The keys of the service / container holding the launch in `text`, rewritten to run `cmd`
    and with the environment changes `env`, under a comment naming where they go: the keys that
    change, or those named in `keys`. None when the file's launch is not found or nothing is shown."""
    found = launch_edit(text, cmd)
    if found is None:
        return None
    path, node, values = found
    parts = [_dump_value(k, v) for k, v, changed in values if (k in keys if keys is not None else changed)]
    key = env_key(node, path)
    if env or (keys is not None and key in keys and key in node):
        parts.append(_dump_value(key, edited_env(node.get(key), key, env or [], mask)))
    if not parts:
        return None
    return "\n".join([f"# {where(path)}:", *parts])


def fragment_keys(fragment: str) -> list[str]:
    """The keys a yaml_fragment shows."""
    import yaml

    try:
        loaded = yaml.safe_load(fragment.partition("\n")[2])
    except yaml.YAMLError:
        return []
    return [str(k) for k in loaded] if isinstance(loaded, dict) else []
