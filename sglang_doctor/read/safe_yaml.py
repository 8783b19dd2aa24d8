"""YAML loading for untrusted files (user rule directories, config files).

Only the safe loader (no Python tags), and the document is bounded before it is
constructed: an alias/merge bomb ("billion laughs") is refused by the size it would
expand to (each alias counts as the whole node it repeats) and by its number of aliases;
nesting deeper than MAX_DEPTH is refused before the recursive composer can overflow the
Python stack. Every refusal is a one-line `YamlError`.
"""

from __future__ import annotations

from typing import Any, Sequence

import yaml

MAX_ALIASES = 50
MAX_NODES = 200_000  # nodes of the document once every alias is expanded
MAX_DEPTH = 100  # real rule and config files nest fewer than 15 levels
# Flow brackets nested this deep are refused before parsing: PyYAML's scanner is
# quadratic in the depth of an unclosed flow collection.
_MAX_BRACKETS = 1000


class YamlError(Exception):
    pass


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._expanded = 0  # nodes so far, aliases counted as the size of their target
        self._sizes: dict[int, int] = {}  # id(node) -> its expanded size
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YamlError(f"more than {MAX_ALIASES} YAML aliases (refused as a possible alias bomb)")
            node = super().compose_node(parent, index)
            self._grow(self._sizes.get(id(node), 1))
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlError(f"YAML nested deeper than {MAX_DEPTH} levels")
        before = self._expanded
        self._grow(1)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._sizes[id(node)] = self._expanded - before
        return node

    def _grow(self, n: int) -> None:
        self._expanded += n
        if self._expanded > MAX_NODES:
            raise YamlError(f"YAML expands to more than {MAX_NODES} nodes (refused as a possible alias bomb)")


def _bracket_depth(text: str) -> int:
    """Deepest nesting of [ and { (a cheap over-estimate: quotes and comments not skipped)."""
    depth = deepest = 0
    for c in text:
        if c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif c in "]}" and depth:
            depth -= 1
    return deepest


def _load(text: str) -> tuple[Any, Any]:
    if text.count("[") + text.count("{") > _MAX_BRACKETS and _bracket_depth(text) > _MAX_BRACKETS:
        raise YamlError(f"YAML nested deeper than {MAX_DEPTH} levels")
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise YamlError(f"{where}invalid YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise YamlError(f"invalid YAML: {e}") from None
    except RecursionError:  # a shape the depth cap did not foresee: still one line
        raise YamlError("YAML nested too deeply") from None
    finally:
        loader.dispose()


def load_yaml(text: str) -> Any:
    return _load(text)[0]


def load_yaml_with_node(text: str) -> tuple[Any, Any]:
    """The data and its composed node tree (for line numbers: see `line_of`)."""
    return _load(text)


def line_of(node: Any, loc: Sequence[Any]) -> int | None:
    """1-based line of the deepest node on the path `loc` (mapping keys, list indexes).

    Path parts that name nothing in the document (pydantic's union-member labels) are
    skipped, so a validation error's `loc` can be passed as it is.
    """
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
    return line
