"""The package's own YAML data files (subsystems, rejected combinations), parsed once per version.

A crash log's run reads two of them: importing PyYAML and parsing them was ~35 ms of a
~300 ms cold start. Their parsed form (plain dicts, lists, strings and numbers) is kept in the
user's cache directory as `marshal` data keyed by a digest of the file's text, so an edited
file is parsed again and a run whose cache is cold, unwritable or foreign just parses as before.
"""

from __future__ import annotations

import os
import sys
from typing import Any

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
    if not ENABLED:
        return _parse(text)
    import marshal

    from sglang_doctor._speed.cachefiles import blake2, cache_dir, prune, read_trusted, write_atomic

    key = blake2(f"{_FORMAT}/{sys.version}/{text}".encode("utf-8", "surrogatepass")).hexdigest()
    path = os.path.join(cache_dir(), f"{KIND}{key}.marshal")
    raw = read_trusted(path)
    if raw is not None:
        try:
            return marshal.loads(raw)
        except (EOFError, ValueError, TypeError):  # a cut or corrupt file: parse again
            pass
    data = _parse(text)
    try:
        blob = marshal.dumps(data)
    except ValueError:  # a value marshal cannot store (a date, say): not cached
        return data
    if write_atomic(path, blob):
        prune(os.path.dirname(path), KIND)
    return data
