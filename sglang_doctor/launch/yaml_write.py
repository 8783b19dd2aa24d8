"""A compose or Kubernetes file rewritten in place to run an edited launch (`--fix`).

Only the text of what changes is replaced: a list item where it stands (in its own quoting, a
`|` block staying a block), items removed or added as lines at the list's indentation, an
environment entry set, added or removed. Comments, key order, the other services and documents
stay byte for byte. The positions come from PyYAML's composed nodes; a shape this module does not
edit (a flow-style environment, a `valueFrom` to overwrite) gives None, never a guess.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from sglang_doctor.launch.command import LaunchCommand
from sglang_doctor.launch.yaml_edit import EnvEdit, _words, env_key, launch_edit
from sglang_doctor.read.safe_yaml import YamlError, load_yaml_with_node

_Edit = tuple[int, int, str]  # replace text[start:end] with the string


class _Unsupported(Exception):
    """A shape edited only by guessing: the file is left alone."""


def rewrite_yaml(text: str, cmd: LaunchCommand, env: list[EnvEdit] | None = None) -> tuple[str | None, str]:
    """`text` with the launch's service / container changed to run `cmd` and its environment
    changed by `env`; else None and why (the launch is not found, the change cannot be written safely)."""
    found = launch_edit(text, cmd)
    if found is None:
        return None, "the launch was not found in the file"
    path, node, changed = found
    for start, chunk in _documents(text):
        try:
            root = load_yaml_with_node(chunk)[1]
        except (YamlError, yaml.YAMLError, RecursionError, ValueError, TypeError):
            continue
        mapping = _at(root, path)
        if mapping is None:
            continue
        try:
            edits = [e for key, value, change in changed if change
                     for e in _value_edits(chunk, _value_of(mapping, key), value)]
            if env:
                edits += _env_edits(chunk, mapping, env_key(node, path), env)
        except _Unsupported as e:
            return None, str(e)
        edited = chunk
        for a, b, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):  # (a removal before an insertion there)
            edited = edited[:a] + new + edited[b:]
        return text[:start] + edited + text[start + len(chunk):], ""
    return None, "the launch's service or container was not found in the file"


def _documents(text: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of each document, split as yaml_documents splits them."""
    start = 0
    for m in re.finditer(r"(?m)^---[^\n]*$", text):
        yield start, text[start:m.start()]
        start = m.end()
    yield start, text[start:]


def _at(node: Any, path: list[str]) -> yaml.MappingNode | None:
    """The mapping node at `path` (yaml_edit's names: keys, `[name]` or `[index]` for list items)."""
    for part in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
        elif isinstance(node, yaml.SequenceNode):
            node = next((v for i, v in enumerate(node.value) if _item_name(v, i) == part), None)
        else:
            return None
    return node if isinstance(node, yaml.MappingNode) else None


def _item_name(node: Any, i: int) -> str:
    name = _value_of(node, "name") if isinstance(node, yaml.MappingNode) else None
    if isinstance(name, yaml.ScalarNode) and name.tag.endswith(":str"):
        return f"[{name.value}]"
    return f"[{i}]"


def _value_of(mapping: yaml.MappingNode, key: str) -> Any:
    return next((v for k, v in mapping.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


# --- spans -------------------------------------------------------------------------------------


def _end(text: str, node: Any) -> int:
    """Where a node's own text ends: its last scalar's end, before the line breaks a block scalar
    takes (a block collection's end mark runs on over the comments after it)."""
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    end = node.end_mark.index
    while end > node.start_mark.index and text[end - 1] in "\r\n":
        end -= 1
    return end


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _dash(text: str, item: Any) -> tuple[int, str]:
    """A block list item's `-` and the indentation before it."""
    at = text.rfind("-", 0, item.start_mark.index)
    start = _line_start(text, at)
    indent = text[start:at]
    if at < 0 or indent.strip() or text[at + 1:item.start_mark.index].strip():
        raise _Unsupported("a list item shares its line with another: it is not edited in place")
    return at, indent


def _item_lines(text: str, item: Any) -> tuple[int, int]:
    """The lines of a block list item, from its line's start to past its last line's break."""
    at, _ = _dash(text, item)
    end = _line_end(text, _end(text, item))
    return _line_start(text, at), min(end + 1, len(text))


# --- scalars -----------------------------------------------------------------------------------


def _plain_ok(s: str) -> bool:
    if not s or "\n" in s or s != s.strip():
        return False
    try:
        return yaml.safe_load(f"k: {s}") == {"k": s}
    except yaml.YAMLError:
        return False


def _quoted(s: str, style: str | None) -> str:
    """`s` as a flow scalar in the style `style` (None: plain where that reads back as the same string)."""
    if style is None and _plain_ok(s):
        return s
    if style == "'" and "\n" not in s:
        return "'" + s.replace("'", "''") + "'"
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _scalar_text(text: str, node: yaml.ScalarNode, new: str) -> str:
    """`new` written over the scalar `node`, in its style; a `|` / `>` block keeps its header and indentation."""
    if node.style not in ("|", ">"):
        return _quoted(new, node.style)
    start = node.start_mark.index
    header_end = _line_end(text, start)
    header = text[start:header_end]
    body = text[header_end + 1:_end(text, node)]
    first = next((ln for ln in body.split("\n") if ln.strip()), "")
    indent = first[:len(first) - len(first.lstrip(" "))] or " " * (node.start_mark.column + 2)
    chomp = "+" if "+" in header else "-" if "-" in header else ""
    value = new[:-1] if new.endswith("\n") and chomp != "-" else new
    if "\n" in value.rstrip("\n") and node.style == ">":
        lines = value.split("\n")
        value = "\n\n".join(lines)  # (a folded block: a single break would read back as a space)
    lines = value.split("\n")
    return header + "\n" + "\n".join(indent + ln if ln else "" for ln in lines)


# --- the command keys ----------------------------------------------------------------------------


def _value_edits(text: str, node: Any, value: Any) -> list[_Edit]:
    """Edits turning the key's value `node` into `value` (a list of words, or a string)."""
    if isinstance(value, str):
        if not isinstance(node, yaml.ScalarNode):
            raise _Unsupported("the command key is not a string as the file was read: it is not edited")
        return [(node.start_mark.index, _end(text, node), _scalar_text(text, node, value))]
    if not isinstance(node, yaml.SequenceNode) or any(not isinstance(i, yaml.ScalarNode) for i in node.value):
        raise _Unsupported("the command list holds more than strings: it is not edited")
    items = node.value
    old = [str(i.value) for i in items]
    if len(old) != len(_words([i.value for i in items])):
        raise _Unsupported("the command list has empty items: it is not edited")
    styles = {i.style for i in items}
    style = styles.pop() if len(styles) == 1 and None not in styles else None  # (a list quoted throughout stays so)
    if node.flow_style:
        return _flow_edits(text, node, value, style)
    edits: list[_Edit] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, value, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:  # words changed where they stand: their own quoting
            for i, j in zip(range(i1, i2), range(j1, j2)):
                it = items[i]
                edits.append((it.start_mark.index, _end(text, it), _scalar_text(text, it, value[j])))
            continue
        for i in range(i1, i2):
            a, b = _item_lines(text, items[i])
            edits.append((a, b, ""))
        if j1 == j2:
            continue
        ref = items[min(i1, len(items) - 1)]
        _, indent = _dash(text, ref)
        lines = "".join(f"{indent}- {_quoted(w, style)}\n" for w in value[j1:j2])
        if i1 < len(items):  # before the item now at i1 (or where the removed ones stood)
            edits.append((_item_lines(text, items[i1])[0], _item_lines(text, items[i1])[0], lines))
        else:  # after the last item
            end = _line_end(text, _end(text, items[-1]))
            edits.append((end, end, "\n" + lines.rstrip("\n")))
    return edits


def _flow_edits(text: str, node: yaml.SequenceNode, value: list[str], style: str | None) -> list[_Edit]:
    """A `[a, b]` list: kept items as written, new ones in the list's quoting."""
    kept = {str(i.value): text[i.start_mark.index:i.end_mark.index] for i in node.value}
    body = ", ".join(kept.get(w) or _quoted(w, style) for w in value)
    return [(node.start_mark.index, node.end_mark.index, f"[{body}]")]


# --- the environment ----------------------------------------------------------------------------


def _env_edits(text: str, mapping: yaml.MappingNode, key: str, env: list[EnvEdit]) -> list[_Edit]:
    node = _value_of(mapping, key)
    if node is None or (isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null")):
        return _new_env_key(text, mapping, key, env, node)
    if getattr(node, "flow_style", False) or not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        raise _Unsupported("the environment is written inline ({...} or [...]): it is not edited in place")
    edits: list[_Edit] = []
    for name, value in env:
        if isinstance(node, yaml.MappingNode):  # compose NAME: VALUE
            edits += _env_in_mapping(text, node, name, value)
        elif key == "env":  # Kubernetes - name: / value:
            edits += _env_in_k8s_list(text, node, name, value)
        else:  # compose - NAME=VALUE
            edits += _env_in_list(text, node, name, value)
    return edits


def _new_env_key(text: str, mapping: yaml.MappingNode, key: str, env: list[EnvEdit], empty: Any) -> list[_Edit]:
    """A service / container without an environment gets one, after its last key."""
    sets = [(n, v) for n, v in env if v is not None]
    if not sets:
        return []
    first = mapping.value[0][0]
    if mapping.flow_style or text[_line_start(text, first.start_mark.index):first.start_mark.index].strip(" -"):
        raise _Unsupported("the service / container is written inline ({...}): it is not edited in place")
    indent = " " * first.start_mark.column
    if key == "env":
        body = "".join(f"\n{indent}  - name: {n}\n{indent}    value: {json.dumps(v, ensure_ascii=False)}"
                       for n, v in sets)
    else:
        body = "".join(f"\n{indent}  {n}: {json.dumps(v, ensure_ascii=False)}" for n, v in sets)
    if empty is not None:  # `environment:` with nothing after it
        key_node = next(k for k, v in mapping.value if v is empty)
        at = _line_end(text, key_node.start_mark.index)
        return [(_line_start(text, key_node.start_mark.index), at, f"{indent}{key}:{body}")]
    at = _line_end(text, _end(text, mapping))
    return [(at, at, f"\n{indent}{key}:{body}")]


def _pair_lines(text: str, key: Any, value: Any) -> tuple[int, int]:
    start = _line_start(text, key.start_mark.index)
    return start, min(_line_end(text, _end(text, value)) + 1, len(text))


def _env_in_mapping(text: str, node: yaml.MappingNode, name: str, value: str | None) -> list[_Edit]:
    hit = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name), None)
    if value is None:
        return [] if hit is None else [(*_pair_lines(text, *hit), "")]
    if hit is not None:
        v = hit[1]
        if not isinstance(v, yaml.ScalarNode):
            raise _Unsupported("an environment value is not a string: it is not edited")
        if v.value == "" and v.start_mark.index == v.end_mark.index:  # `NAME:` with no value
            return [(hit[0].end_mark.index, _line_end(text, hit[0].end_mark.index), f": {json.dumps(value)}")]
        return [(v.start_mark.index, _end(text, v), _quoted(value, v.style or '"'))]
    k0 = node.value[0][0]
    indent = " " * k0.start_mark.column
    at = _line_end(text, _end(text, node))
    return [(at, at, f"\n{indent}{name}: {json.dumps(value, ensure_ascii=False)}")]


def _env_in_list(text: str, node: yaml.SequenceNode, name: str, value: str | None) -> list[_Edit]:
    hit = next((i for i in node.value if isinstance(i, yaml.ScalarNode) and str(i.value).partition("=")[0] == name),
               None)
    if value is None:
        return [] if hit is None else [(*_item_lines(text, hit), "")]
    word = f"{name}={value}"
    if hit is not None:
        return [(hit.start_mark.index, _end(text, hit), _quoted(word, hit.style))]
    _, indent = _dash(text, node.value[0])
    at = _line_end(text, _end(text, node))
    return [(at, at, f"\n{indent}- {_quoted(word, None)}")]


def _env_in_k8s_list(text: str, node: yaml.SequenceNode, name: str, value: str | None) -> list[_Edit]:
    hit = next((i for i in node.value if isinstance(i, yaml.MappingNode)
                and isinstance(_value_of(i, "name"), yaml.ScalarNode) and _value_of(i, "name").value == name), None)
    if value is None:
        return [] if hit is None else [(*_item_lines(text, hit), "")]
    quoted = json.dumps(value, ensure_ascii=False)
    if value.startswith("$") and not value.startswith("$("):
        raise _Unsupported(f"Kubernetes does not expand {value} in an env value: set {name} from a Secret "
                           "(valueFrom.secretKeyRef)")
    if hit is not None:
        v = _value_of(hit, "value")
        if v is None or _value_of(hit, "valueFrom") is not None:
            raise _Unsupported(f"{name} is read from a Secret or a ConfigMap (valueFrom): it is not overwritten")
        return [(v.start_mark.index, _end(text, v), quoted if v.style is None else _quoted(value, v.style))]
    _, indent = _dash(text, node.value[0])
    at = _line_end(text, _end(text, node))
    return [(at, at, f"\n{indent}- name: {name}\n{indent}  value: {quoted}")]
