"""The subsystem a crash happened in, from its traceback, and the switches that isolate it.

Backed by ``data/subsystems.yaml`` (curated from the release wheels' source trees; see its header).
`classify` reads the exception chain and the frames innermost first: a wrapper's exception name
(torch.compile's `BackendCompilerFailed`) wins, then the innermost frame that belongs to a
subsystem, then the code paths (modes) outer frames put it on, such as CUDA graph capture.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from sglang_doctor._speed.datacache import packaged_yaml

DATA = Path(__file__).resolve().parent.parent / "data" / "subsystems.yaml"
MAX_FOUND = 3
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+, in (?P<func>\S+)')


class Switch(NamedTuple):
    """A launch switch (flag or env var) that takes a subsystem out of the picture."""

    flag: str | None
    action: str  # add | set | remove | lower
    values: tuple[str, ...] = ()
    env: str | None = None
    versions: str | None = None


class FramePattern(NamedTuple):
    sglang: re.Pattern[str] | None
    path: re.Pattern[str] | None
    func: re.Pattern[str] | None


class Subsystem(NamedTuple):
    id: str
    name: str
    why: str
    mode: bool
    frames: tuple[FramePattern, ...]
    exceptions: tuple[re.Pattern[str], ...]
    isolate: tuple[Switch, ...]


def _compile(p: str | None) -> re.Pattern[str] | None:
    return re.compile(p) if p else None


@lru_cache(maxsize=1)
def subsystems() -> tuple[Subsystem, ...]:
    data = packaged_yaml(DATA.read_text(encoding="utf-8"))
    out = []
    for s in data["subsystems"]:
        frames = tuple(FramePattern(_compile(f.get("sglang")), _compile(f.get("path")), _compile(f.get("func")))
                       for f in s.get("frames", []))
        switches = tuple(Switch(w.get("flag"), w.get("action", "set"),
                                tuple(str(v) for v in w.get("values", ())) or ((str(w["value"]),) if "value" in w else ()),
                                w.get("env"), w.get("versions"))
                         for w in s.get("isolate", []) or [])
        out.append(Subsystem(s["id"], s["name"], s["why"], bool(s.get("mode")), frames,
                             tuple(re.compile(x) for x in s.get("exceptions", [])), switches))
    return tuple(out)


def by_id(sid: str) -> Subsystem | None:
    return next((s for s in subsystems() if s.id == sid), None)


def sglang_relative(path: str) -> str | None:
    """The part of a frame's path below `sglang/srt/` (or `sglang/`), None outside SGLang."""
    path = path.replace("\\", "/")
    i = path.rfind("sglang/srt/")
    if i >= 0:
        return path[i + len("sglang/srt/"):]
    i = path.rfind("/sglang/")
    if i >= 0 and "sglang_router" not in path:
        return path[i + len("/sglang/"):]
    return path[len("sglang/"):] if path.startswith("sglang/") else None


def frame_subsystem(frame: str) -> Subsystem | None:
    """The first subsystem whose frame pattern matches a frame (`File "…", line N, in f`)."""
    m = _FRAME.search(frame)
    if m is None:
        return None
    path, func = m["path"].replace("\\", "/"), m["func"]
    rel = sglang_relative(path)
    for s in subsystems():
        for p in s.frames:
            if p.sglang is not None:
                if rel is None or not p.sglang.match(rel):
                    continue
            elif p.path is None or not p.path.search(path):
                continue
            if p.func is not None and not p.func.fullmatch(func):
                continue
            return s
    return None


class Found(NamedTuple):
    """A subsystem a traceback shows, and the frame that shows it (None: its exception names it)."""

    subsystem: Subsystem
    frame: str | None


def classify(frames: list[str], exceptions: list[str]) -> list[Found]:
    """Subsystems of a traceback, most telling first (at most MAX_FOUND)."""
    found: list[Found] = []

    def add(s: Subsystem, frame: str | None) -> None:
        if all(f.subsystem != s for f in found):
            found.append(Found(s, frame))

    text = "\n".join(exceptions)
    for s in subsystems():
        if any(rx.search(text) for rx in s.exceptions):
            add(s, None)
    primary = False
    for frame in reversed(frames):  # innermost first
        s = frame_subsystem(frame)
        if s is None:
            continue
        if not primary:
            add(s, frame)
            primary = True
        elif s.mode:
            add(s, frame)
    return found[:MAX_FOUND]
