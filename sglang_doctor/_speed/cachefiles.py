"""The user's cache directory: where it is, and reading and writing its files safely.

Three things are cached there, each keyed so that a stale entry is never used: the
validated rule set (`rules-*.pickle`), the compiled Hyperscan scanner (`scan-*`) and the
compiled regular expressions of this interpreter (`re-*.marshal`). Reading one is skipped
unless this user owns the file in a directory only they can write (a pickle or a compiled
matcher from someone else is code); writing is atomic, and any failure (read-only home,
full disk) only means the next run builds the thing again.
"""

from __future__ import annotations

import os


def cache_dir() -> str:
    """SGLANG_DOCTOR_CACHE, else $XDG_CACHE_HOME/sglang-doctor, else ~/.cache/sglang-doctor."""
    return os.environ.get("SGLANG_DOCTOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "sglang-doctor")


def read_trusted(path: str) -> bytes | None:
    """The file's bytes, or None when it is missing, unreadable or not this user's own."""
    try:
        st, dst = os.stat(path), os.stat(os.path.dirname(path) or ".")
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or dst.st_mode & 0o022):
            return None
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def write_atomic(path: str, data: bytes) -> bool:
    """Write `data` to `path` so a concurrent reader sees the old file or the new one."""
    import tempfile

    directory = os.path.dirname(path) or "."
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
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
    """Keep only the newest `keep` cache entries of a kind (one per rule-set variant)."""
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith(prefix)]
        stems = sorted({e.name.split(".")[0] for e in entries},
                       key=lambda s: max(e.stat().st_mtime for e in entries if e.name.startswith(s)), reverse=True)
        for e in entries:
            if e.name.split(".")[0] not in stems[:keep]:
                os.unlink(e.path)
    except OSError:
        pass
