"""The user's cache directory: where it is, and reading and writing its files safely.

Five things are cached there, each keyed so that a stale entry is never used: the
validated rule set (`rules-*.marshal`, with its `manifest-*`), the compiled Hyperscan scanner
(`scan-*`), the compiled regular expressions of this interpreter (`re-*.marshal`), the code
`dataclasses` generates (`code-*.marshal`) and the package's parsed YAML data files
(`data-*.marshal`). The directory stays small: each write prunes older variants of its kind,
entries no run has read for a month, and temporary files a killed run left. Reading one is
skipped unless this user owns the file in a directory only they can write (a pickle or a compiled
matcher from someone else is code); writing is atomic, and any failure (read-only home,
full disk) only means the next run builds the thing again.
"""

from __future__ import annotations

import os
from typing import Any


def cache_dir() -> str:
    """SGLANG_DOCTOR_CACHE, else $XDG_CACHE_HOME/sglang-doctor, else ~/.cache/sglang-doctor."""
    return os.environ.get("SGLANG_DOCTOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "sglang-doctor")


# What prune() removes besides the older variants of a kind: an entry no run has read for a month
# (a read refreshes its time, at most once a day), and a temporary file a killed writer left.
KINDS = ("rules-", "manifest-", "scan-", "re-", "data-", "code-")
MAX_AGE_S = 30 * 86400
TOUCH_AFTER_S = 86400
TMP_PREFIX = ".tmp-"
TMP_AGE_S = 3600


def blake2(data: bytes = b"") -> Any:
    """A 16-byte BLAKE2 hash object (the keys of the cache files)."""
    try:  # the BLAKE2 module alone: hashlib would also load OpenSSL (~2 ms per run)
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - another Python implementation
        from hashlib import blake2b
    return blake2b(data, digest_size=16)


def read_trusted(path: str) -> bytes | None:
    """The file's bytes, or None when it is missing, unreadable or not this user's own."""
    try:
        st, dst = os.stat(path), os.stat(os.path.dirname(path) or ".")
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or dst.st_mode & 0o022):
            return None
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    import time

    if time.time() - st.st_mtime > TOUCH_AFTER_S:
        try:
            os.utime(path)  # in use: not "unused for a month" (a cache's freshness is its key, not its time)
        except OSError:
            pass
    return data


def write_atomic(path: str, data: bytes) -> bool:
    """Write `data` to `path` so a concurrent reader sees the old file or the new one."""
    import tempfile

    directory = os.path.dirname(path) or "."
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=TMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


def prune(directory: str, prefix: str, keep: int = 8) -> None:
    """Keep only the newest `keep` cache entries of a kind (one per rule-set variant); and, of every
    kind, drop entries unused for MAX_AGE_S and temporary files older than TMP_AGE_S. Called after a
    write, so a directory nothing writes to any more stays as it is."""
    import time

    now = time.time()
    try:
        everything = list(os.scandir(directory))
        entries = [e for e in everything if e.name.startswith(prefix)]
        stems = sorted({e.name.split(".")[0] for e in entries},
                       key=lambda s: max(e.stat().st_mtime for e in entries if e.name.startswith(s)), reverse=True)
        for e in everything:
            try:
                age = now - e.stat().st_mtime
                if ((e.name.startswith(prefix) and e.name.split(".")[0] not in stems[:keep])
                        or (e.name.startswith(KINDS) and age > MAX_AGE_S)
                        or (e.name.startswith(TMP_PREFIX) and age > TMP_AGE_S)):
                    os.unlink(e.path)
            except OSError:
                continue
    except OSError:
        pass
