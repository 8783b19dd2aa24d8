"""The package's own data files (subsystems, rejected combinations, the flag catalog), parsed once
per version, and what a run derives from them alone.

A crash log's run reads three of them: importing PyYAML and parsing the YAML ones was ~35 ms of
a ~300 ms cold start, decoding the 170 KB flag catalog's JSON ~2.5 ms and finding its deprecated
flags across 95 releases as much again. Their parsed or derived form (plain dicts, lists,
strings and numbers) is kept in the user's cache directory as `marshal` data keyed by a digest
of the file's text and what was made of it, so an edited file is read again and a run whose
cache is cold, unwritable or foreign just computes as before.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Any, Callable

from sglang_doctor._speed import ENABLED

_FORMAT = 1
KIND = "data-"


def _parse(text: str) -> Any:
    import yaml

    # (the package's own data, not a user's file: libyaml's loader, ten times faster than the bounded one)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)


def packaged_yaml(text: str) -> Any:
    """The YAML document `text` (one of the package's data files) as Python data."""
    return derived(text, "yaml", lambda: _parse(text))


def packaged_json(text: str) -> Any:
    """The JSON document `text` (one of the package's data files) as Python data."""
    return derived(text, "json", lambda: _parse_json(text))


def _parse_json(text: str) -> Any:
    import json

    return json.loads(text)


@lru_cache(maxsize=16)
def _digest(text: str) -> str:
    """A data file's digest, once per run (the flag catalog keys three entries)."""
    from sglang_doctor._speed.cachefiles import blake2

    return blake2(text.encode("utf-8", "surrogatepass")).hexdigest()


def derived(text: str | tuple[str, ...], what: str, make: Callable[[], Any]) -> Any:
    """`make()`, a function of the package data file `text` (or files) alone (`what` names it), from the cache."""
    if not ENABLED:
        return make()
    import marshal

    from sglang_doctor._speed.cachefiles import blake2, cache_dir, prune, read_trusted, write_atomic

    texts = text if isinstance(text, tuple) else (text,)
    key = blake2(f"{_FORMAT}/{sys.version}/{what}/{'/'.join(map(_digest, texts))}".encode()).hexdigest()
    path = os.path.join(cache_dir(), f"{KIND}{key}.marshal")
    raw = read_trusted(path)
    if raw is not None:
        try:
            return marshal.loads(raw)
        except (EOFError, ValueError, TypeError):  # a cut or corrupt file: parse again
            pass
    data = make()
    try:
        blob = marshal.dumps(data)
    except ValueError:  # a value marshal cannot store (a date, say): not cached
        return data
    if write_atomic(path, blob):
        prune(os.path.dirname(path), KIND)
    return data
