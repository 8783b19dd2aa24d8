"""An edited launch written back into a compose or Kubernetes file, as the YAML fragment that changes.

A compose service or a Kubernetes container runs its `entrypoint`/`command`/`args` without a shell,
so the corrected launch is not a shell command there: it is those keys, in the form the user wrote
them (a list stays a list, a string a string), under the path of the service or container that
holds the launch. Keys the edit does not touch are left out; the launch inside a `bash -c` string
is edited in place (launch/splice.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
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


def _dump(key: str, original: Any, words: list[str]) -> str:
    """`key: value` as YAML, a list when the user wrote a list, else one string."""
    import yaml

    value: Any = words if isinstance(original, (list, tuple)) else _join(words)
    return yaml.safe_dump({key: value}, sort_keys=False, width=10_000, default_flow_style=False,
                          allow_unicode=True).rstrip("\n")


def _launch_nodes(text: str) -> Iterator[tuple[list[tuple[str, list[str]]], dict[Any, Any], list[str]]]:
    """(its command keys' words, the mapping, its path) of each mapping whose keys hold an SGLang launch."""
    for doc in yaml_documents(text):
        for path, node in _nodes(doc):
            keys = [(k, _words(node.get(k))) for k in _KEYS if node.get(k)]
            if _find_launch(shlex.join([w for _, ws in keys for w in ws]), DEFAULT_ALIASES):
                yield keys, node, path


def yaml_fragment(text: str, cmd: LaunchCommand) -> str | None:
    """The keys of the service / container holding the launch in `text`, rewritten to run `cmd`
    (only the keys that change), under a comment naming where they go; None when the file's launch
    is not found."""
    for keys, node, path in _launch_nodes(text):
        joined = shlex.join([w for _, ws in keys for w in ws])
        split = _distribute(keys, shlex.split(splice(joined, cmd)))
        changed = [(k, node[k], split[k]) for k, ws in keys if split[k] != ws]
        if not changed:
            return None
        where = ".".join(path).replace(".[", "[") or "(top level)"
        return "\n".join([f"# {where}:", *(_dump(k, original, ws) for k, original, ws in changed)])
    return None


def original_fragment(text: str, fragment: str) -> str | None:
    """The keys `fragment` (a yaml_fragment of `text`) rewrites, as `text` has them: what it replaces."""
    import yaml

    head, _, body = fragment.partition("\n")
    if not head.startswith("# ") or not head.endswith(":"):
        return None
    try:
        keys = list((yaml.safe_load(body) or {}).keys())
    except yaml.YAMLError:
        return None
    where = head[2:-1]
    for _, node, path in _launch_nodes(text):
        if (".".join(path).replace(".[", "[") or "(top level)") == where:
            return "\n".join([head, *(_dump(k, node[k], _words(node[k])) for k in keys if k in node)])
    return None
