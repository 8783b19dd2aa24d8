"""YAML loading for untrusted files (user rule directories, config files).

Only the safe loader (no Python tags), and aliases are capped: an alias/merge bomb
("billion laughs") expands exponentially, so documents with more than a handful of
aliases are refused before they are constructed.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_ALIASES = 50
MAX_NODES = 200_000


class YamlError(Exception):
    pass


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YamlError(f"more than {MAX_ALIASES} YAML aliases (refused as a possible alias bomb)")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise YamlError(f"more than {MAX_NODES} YAML nodes")
        return super().compose_node(parent, index)


def load_yaml(text: str) -> Any:
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise YamlError(f"{where}invalid YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise YamlError(f"invalid YAML: {e}") from None
    finally:
        loader.dispose()
