"""The methods `dataclasses` generates, kept compiled across runs of the command.

`@dataclass` writes the source of each class's `__init__`, `__repr__`, `__eq__`, `__setattr__`…
and compiles it with `exec` in every process: ~1.4 ms for a ten-field frozen class, and a run
over a crash log defines some 45 of them (the report, the memory model, the launch command),
a fifth of a cold start. The compiled code depends only on that source text and the
interpreter, so `install()` (the command's entry point, never on import) gives the
`dataclasses` module an `exec` that looks the text up in a cache file of code objects
(`marshal`, one file per interpreter build) and compiles only what it lacks; the functions
made from the code are the ones `exec` of the text makes. The file is trusted, written and
pruned like the compiled-pattern cache (`recache.py`): this user's own, atomic, at exit,
and a corrupt or foreign file only means compiling as usual.
"""

from __future__ import annotations

import builtins
import os
import sys
import _thread
from types import CodeType
from typing import Any

MAX_ENTRIES = 2048  # past it, a save keeps only what that run used
_FORMAT = 2  # 2: each entry's code marshalled on its own, decoded when a run uses it
KIND = "code-"

_lock = _thread.allocate_lock()  # (threading.Lock itself, without importing threading)
# source text -> its code, or the code's marshal bytes until a run uses it: a file of every
# command's classes (~400, 0.5 MB) took ~1.5 ms to decode whole; a check run uses about half.
_entries: dict[str, CodeType | bytes] = {}
_used: set[str] = set()
_added = 0
_installed = False


def _cache_path() -> str:
    from sglang_doctor._speed.cachefiles import blake2, cache_dir

    build = f"{_FORMAT}/{sys.implementation.name}/{sys.version}/{sys.flags.optimize}"
    return os.path.join(cache_dir(), f"{KIND}{blake2(build.encode()).hexdigest()}.marshal")


def _load(path: str) -> dict[str, CodeType | bytes]:
    import marshal

    from sglang_doctor._speed.cachefiles import read_trusted

    raw = read_trusted(path)
    try:
        data = marshal.loads(raw) if raw is not None else {}
    except Exception:  # corrupt
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, bytes)}


def _save(path: str) -> None:
    import marshal

    from sglang_doctor._speed.cachefiles import prune, write_atomic

    with _lock:
        if not _added:
            return
        keep = _entries if len(_entries) <= MAX_ENTRIES else {k: v for k, v in _entries.items() if k in _used}
        data = marshal.dumps({k: v if isinstance(v, bytes) else marshal.dumps(v) for k, v in keep.items()})
    if write_atomic(path, data):
        prune(os.path.dirname(path), KIND, keep=4)  # one per interpreter build


def cached_exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """`exec(source, globals, locals)`, a text's compiled code taken from the cache."""
    global _added
    if globals is None:  # as `exec` in the caller's frame: its module's globals
        globals = sys._getframe(1).f_globals
    if not isinstance(source, str):
        builtins.exec(source, globals, locals)
        return
    code = _entries.get(source)
    if isinstance(code, bytes):
        code = _decode(code)
        if code is not None:
            _entries[source] = code
    if code is None:
        # As `exec` compiles a text: file "<string>", and no `from __future__` flag of this
        # module (`dataclasses` itself has none).
        code = compile(source, "<string>", "exec", dont_inherit=True)
        with _lock:
            _entries[source] = code
            _added += 1
    _used.add(source)
    builtins.exec(code, globals, locals)


def _decode(raw: bytes) -> CodeType | None:
    import marshal

    try:
        code = marshal.loads(raw)
    except Exception:  # a corrupt entry: compiled anew (and replaced at exit)
        return None
    return code if isinstance(code, CodeType) else None


def install() -> None:
    """Route `dataclasses`' compiles through the cache (once; the command's entry point only)."""
    global _installed
    from sglang_doctor._speed import ENABLED

    if _installed or not ENABLED:
        return
    _installed = True
    import atexit
    import dataclasses

    if "exec" in vars(dataclasses):  # someone else's patch: leave it
        return
    path = _cache_path()
    _entries.update(_load(path))
    dataclasses.exec = cached_exec  # type: ignore[attr-defined]  # (found before the builtin)
    atexit.register(_save, path)
