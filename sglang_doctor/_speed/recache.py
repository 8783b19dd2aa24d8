"""Compiled regular expressions kept across runs of the command.

A run compiles some 130 patterns (the rules' own, the log parsers', and those of the
libraries it imports), and compiling is the largest single cost of a cold start: Python's
`re` parses each pattern and generates its matcher code anew in every process. The code
it generates depends only on the pattern, the flags and the interpreter, so this module
keeps it: `install()` (called by the command's entry point, never on import) routes the
`re` compiler through a cache file in the user's cache directory, where the pattern's
arguments to the C matcher `_sre.compile` are stored, and a later run rebuilds the
pattern from them without parsing. The result is the very same compiled pattern (checked
with `==` before an entry is stored).

The file is one per interpreter build (its name carries a digest of `sys.version`,
`_sre.MAGIC` and the code size), read only when this user owns it in a directory only they
can write (like the rule cache), written atomically at exit when the run compiled patterns
it lacked, and ignored when anything about it is off: a corrupt, foreign or unreadable file
just means compiling as usual.
"""

from __future__ import annotations

import os
import sys
import _thread
from typing import Any

# Patterns kept per file. Past it, a save keeps only what that run used (user rules, other
# subcommands and old releases' patterns come and go; the file stays small to load).
MAX_ENTRIES = 1024
_FORMAT = 2  # 2: each pattern's code stored as packed bytes (see _pack)

_lock = _thread.allocate_lock()  # (threading.Lock itself, without importing threading)
_entries: dict[tuple[Any, int], tuple[Any, ...]] = {}
_used: set[tuple[Any, int]] = set()
_added = 0
_installed = False


def _cache_path() -> str:
    import os

    import _sre

    from sglang_doctor._speed.cachefiles import cache_dir

    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - another Python implementation
        from hashlib import blake2b
    build = f"{_FORMAT}/{sys.implementation.name}/{sys.version}/{_sre.MAGIC}/{_sre.CODESIZE}/{sys.maxunicode}"
    return os.path.join(cache_dir(), f"re-{blake2b(build.encode(), digest_size=8).hexdigest()}.marshal")


# A pattern's code (the third argument of `_sre.compile`, a list of ints) is stored packed in the
# file and unpacked only when the pattern is compiled: a file of 1,024 patterns took ~18 ms to load
# as lists of ints, a fifth of a small log's run, which uses about 130 of them.
_CODE = 2


def _pack(args: tuple[Any, ...]) -> tuple[Any, ...]:
    from array import array

    code = args[_CODE]
    if not isinstance(code, list):
        return args
    try:
        packed = array("I", code).tobytes()
    except OverflowError:  # (a code word wider than this array's: kept as the list)
        return args
    return (*args[:_CODE], packed, *args[_CODE + 1:])


def _unpack(args: tuple[Any, ...]) -> tuple[Any, ...]:
    from array import array

    code = args[_CODE]
    if not isinstance(code, bytes):
        return args
    return (*args[:_CODE], array("I", code).tolist(), *args[_CODE + 1:])


def _load(path: str) -> dict[tuple[Any, int], tuple[Any, ...]]:
    import marshal

    from sglang_doctor._speed.cachefiles import read_trusted

    raw = read_trusted(path)
    try:  # (marshal.load on a file object would read it in tiny pieces: load the bytes)
        data = marshal.loads(raw) if raw is not None else {}
    except Exception:  # corrupt
        return {}
    return data if isinstance(data, dict) else {}


def _save(path: str) -> None:
    import marshal

    from sglang_doctor._speed.cachefiles import prune, write_atomic

    with _lock:
        if not _added:
            return
        keep = _entries if len(_entries) <= MAX_ENTRIES else {k: v for k, v in _entries.items() if k in _used}
        data = marshal.dumps({k: _pack(v) for k, v in keep.items()})
    if write_atomic(path, data):
        prune(os.path.dirname(path), "re-", keep=4)  # one per interpreter build


class _Recorder:
    """Stands in for the `_sre` module while one pattern compiles, keeping its arguments."""

    def __init__(self, sre: Any) -> None:
        self._sre = sre
        self.args: tuple[Any, ...] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sre, name)

    def compile(self, *args: Any) -> Any:
        self.args = args
        return self._sre.compile(*args)


def _plain(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The arguments with the compiler's int subclasses made plain ints (marshal takes those)."""
    out = []
    for a in args:
        if isinstance(a, bool) or a is None or isinstance(a, (str, bytes)):
            out.append(a)
        elif isinstance(a, int):
            out.append(int(a))
        elif isinstance(a, list) and all(isinstance(x, int) for x in a):
            out.append([int(x) for x in a])
        elif isinstance(a, dict) and all(isinstance(k, str) and isinstance(v, int) for k, v in a.items()):
            out.append({k: int(v) for k, v in a.items()})
        elif isinstance(a, tuple) and all(x is None or isinstance(x, str) for x in a):
            out.append(a)
        else:
            return None  # a shape this interpreter's compiler has and the cache does not know
    return tuple(out)


def install() -> None:
    """Route this process's `re` compiles through the cache (once; the command's entry point only)."""
    global _installed
    from sglang_doctor._speed import ENABLED

    if _installed or not ENABLED:
        return
    _installed = True
    try:
        import atexit

        import _sre

        try:
            from re import _compiler as compiler
        except ImportError:  # pragma: no cover - Python 3.10
            import sre_compile as compiler  # type: ignore[no-redef]
        real = compiler.compile
        path = _cache_path()
        _entries.update(_load(path))
    except Exception:  # pragma: no cover - an interpreter without these internals
        return

    def compile(p: Any, flags: int = 0) -> Any:
        global _added
        if not isinstance(p, (str, bytes)) or not isinstance(flags, int) or flags & 128:  # 128: re.DEBUG prints
            return real(p, flags)
        key = (p, int(flags))
        _used.add(key)
        args = _entries.get(key)
        if args is not None:
            try:
                return _sre.compile(*_unpack(args))
            except Exception:  # an entry this build cannot use: compile it anew
                pass
        with _lock:
            recorder = _Recorder(_sre)
            compiler._sre = recorder
            try:
                pattern = real(p, flags)
            finally:
                compiler._sre = _sre
            plain = _plain(recorder.args) if recorder.args is not None else None
            if plain is not None:
                try:
                    same = _sre.compile(*plain) == pattern
                except Exception:
                    same = False
                if same:
                    _entries[key] = plain
                    _added += 1
        return pattern

    compiler.compile = compile
    atexit.register(_save, path)
