"""A generated JSON data file of the package, read once per process (the catalogs' loaders)."""

from __future__ import annotations

import json
import threading
from importlib import resources
from typing import Any, Callable, TypeVar

T = TypeVar("T")
_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def load_json(name: str, build: Callable[[Any], T]) -> T:
    """`build(json of data/<name>)`, made on first use and shared after (thread-safe)."""
    with _LOCK:
        if name not in _LOADED:
            raw = resources.files("sglang_doctor").joinpath("data", name).read_text("utf-8")
            _LOADED[name] = build(json.loads(raw))
        return _LOADED[name]
