"""Where each function of SGLang's source sits, per release: ``data/frames.zip``, built by
``tools/extract_frames.py`` from every release wheel of the flag registry (one member per source
directory: a run reads the few its frames name).

``releases_of(frames)`` is the releases a traceback's SGLang frames hold in: a frame
`File ".../sglang/srt/managers/scheduler.py", line 2567, in event_loop_overlap` holds where that file
has an `event_loop_overlap` spanning line 2567. A frame of a file or function no release has (a fork,
a plugin, a name made at run time) says nothing; frames no release holds all of (a build between
releases, an edited checkout) give no answer.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any, Iterable

_SGLANG = "sglang/"


class _Catalog:
    def __init__(self) -> None:
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "frames.zip")
        self.zip = zipfile.ZipFile(path)
        self.releases: list[str] = json.loads(self.zip.read("index.json"))["releases"]
        self._dirs: dict[str, dict[str, Any]] = {}

    def functions(self, rel: str) -> dict[str, Any]:
        """function -> segments of the file `rel` (relative to sglang/); {} for a file no release has."""
        directory, _, name = rel.rpartition("/")
        if directory not in self._dirs:
            try:
                self._dirs[directory] = json.loads(self.zip.read(f"{directory}.json"))
            except KeyError:  # (no such directory in any release)
                self._dirs[directory] = {}
        return self._dirs[directory].get(name, {})  # type: ignore[no-any-return]


_CATALOG: list[_Catalog] = []


def _load() -> _Catalog:
    if not _CATALOG:
        _CATALOG.append(_Catalog())
    return _CATALOG[0]


def relative(path: str) -> str | None:
    """A frame's path below its last `sglang/` directory (`srt/managers/scheduler.py`), or None."""
    path = path.replace("\\", "/")
    at = path.rfind("/" + _SGLANG)
    if at < 0:
        return path[len(_SGLANG):] if path.startswith(_SGLANG) else None
    return path[at + 1 + len(_SGLANG):]


def releases_of(frames: Iterable[tuple[str, int, str]]) -> tuple[list[str], int] | None:
    """(the releases every frame that SGLang's source knows holds in, oldest first; how many frames
    that was), or None: no such frame, or no release holds them all. Frames are (path, line, function)."""
    catalog = _load()
    names = catalog.releases
    alive = set(range(len(names)))
    used = 0
    for path, line, func in dict.fromkeys(frames):
        rel = relative(path)
        segments = catalog.functions(rel).get(func) if rel is not None and line > 0 else None
        if segments is None:
            continue
        holds: set[int] = set()
        for lo, hi, *spans in segments:
            if any(spans[k] <= line <= spans[k + 1] for k in range(0, len(spans), 2)):
                holds.update(range(lo, hi + 1))
        alive &= holds
        used += 1
        if not alive:
            return None
    if not used:
        return None
    return [names[i] for i in sorted(alive)], used
