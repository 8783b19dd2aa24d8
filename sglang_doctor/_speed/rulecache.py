"""The validated rule set, kept between runs.

Validating every rule file (YAML, schema, regexes) takes about a second, so a run loads
what the same files validated to last time. The cache is keyed by the files' content: a
BLAKE2 digest of every rule file's path and bytes, so an edited, added or removed rule
file is always validated again.

Hashing is itself a cost on every run (walking the rule directories and reading each
file), so a manifest per set of rule directories remembers what the tree looked like when
its content was last hashed: the mtime of every directory walked (adding, removing or
renaming a file changes it) and the size and mtime of every rule file. While all of those
stat the same, the digest it names is used without reading a file; any difference means
walking and hashing again. Stats are taken before the bytes are read, and a manifest is
not written while some file is younger than MTIME_SLACK_S (a file edited again within the
filesystem's timestamp resolution could otherwise keep its old stat).

A cached rule set is stored rule by rule: a summary of each (what every run reads of every
rule: id, code, flags, prefilter literals) and its own pickle. Loading makes a `LazyRule`
per summary; the first use of anything else unpickles that one rule. A run over a crash
log touches the twenty or thirty rules whose literals occur in it, not all of them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from sglang_doctor._speed.cachefiles import blake2 as _blake2

MTIME_SLACK_S = 2.0
_FORMAT = 2  # of a cached rule-set file (2: scan_patterns in the summary)
_Stat = tuple[str, int, int]  # path, size (-1 for a directory), mtime_ns


def _stat(path: str, is_dir: bool) -> _Stat:
    st = os.stat(path)
    return (path, -1 if is_dir else st.st_size, st.st_mtime_ns)


class RuleCache:
    """The cached rule set for one list of rule directories (`version`: what else the key holds)."""

    def __init__(self, dirs: list[Path], version: str,
                 list_files: Callable[[Path, list[str]], list[Path]]) -> None:
        from sglang_doctor._speed.cachefiles import cache_dir

        self.list_files = list_files  # the engine's rule-file walk (it records the folders it read)
        self.dirs = [os.path.abspath(d) for d in dirs]
        self.version = version
        self.base = cache_dir()
        self.manifest_path = os.path.join(
            self.base, f"manifest-{_blake2(chr(0).join([version, *self.dirs]).encode()).hexdigest()}.marshal")
        self.key: str | None = None  # content digest, once known
        self._fresh: list[_Stat] | None = None  # stats of a walk this run made (for a new manifest)

    @property
    def path(self) -> str | None:
        return os.path.join(self.base, f"rules-{self.key}.marshal") if self.key else None

    def load(self) -> list[Any] | None:
        """The cached rules for the files as they are now, or None (then validate and `store`)."""
        self.key = self._key_from_manifest() or self._key_from_files()
        rules = self._read()
        if rules is not None and self._fresh is not None:
            self._write_manifest()
        return rules

    def store(self, rules: list[Any]) -> None:
        import marshal
        import pickle

        from sglang_doctor._speed.cachefiles import prune, write_atomic

        path = self.path
        rows = [(tuple(getattr(r, name) for name in LazyRule.SUMMARY), r.match.check,
                 pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL)) for r in rules]
        if path and write_atomic(path, marshal.dumps((_FORMAT, rows))):
            prune(self.base, "rules-")
            if self._fresh is not None:
                self._write_manifest()

    # --- the key ------------------------------------------------------------------------------

    def _key_from_manifest(self) -> str | None:
        import marshal

        from sglang_doctor._speed.cachefiles import read_trusted

        raw = read_trusted(self.manifest_path)
        try:
            entries, key = marshal.loads(raw) if raw is not None else ((), None)
            for path, size, mtime in entries:
                st = os.stat(path)
                if st.st_mtime_ns != mtime or (size >= 0 and st.st_size != size):
                    return None
        except Exception:  # no manifest, a corrupt one, or a path that is gone
            return None
        return key if isinstance(key, str) else None

    def _key_from_files(self) -> str | None:
        stats: list[_Stat] = []
        files: list[Path] = []
        try:
            for d in self.dirs:
                walked: list[str] = []
                files.extend(self.list_files(Path(d), walked))
                stats.extend(_stat(w, True) for w in walked)
            stats.extend(_stat(str(f), False) for f in files)  # before reading: a later edit shows
            h = _blake2(self.version.encode())
            for f in files:
                h.update(str(f).encode() + b"\0" + f.read_bytes() + b"\0")
        except OSError:
            return None
        self._fresh = stats
        return h.hexdigest()

    def _write_manifest(self) -> None:
        import marshal

        from sglang_doctor._speed.cachefiles import prune, write_atomic

        stats = self._fresh or []
        if any(m / 1e9 > time.time() - MTIME_SLACK_S for _, _, m in stats):
            return  # too young to trust its stat: hash again next run
        if write_atomic(self.manifest_path, marshal.dumps((stats, self.key))):
            prune(self.base, "manifest-")

    def _read(self) -> list[Any] | None:
        import marshal

        from sglang_doctor._speed.cachefiles import read_trusted

        data = read_trusted(self.path) if self.path else None
        if data is None:
            return None
        try:
            fmt, rows = marshal.loads(data)
            if fmt != _FORMAT:
                return None
            return [LazyRule(summary, check, blob) for summary, check, blob in rows]
        except Exception:  # stale format, corrupt: validate from the files
            return None


class _LazyMatch:
    """What a run reads of every rule's `match` without unpickling it: the built-in check."""

    __slots__ = ("check", "_owner")

    def __init__(self, check: str | None, owner: "LazyRule") -> None:
        self.check = check
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.rule.match, name)


class LazyRule:
    """A cached rule: its summary at hand, the rest unpickled on first use.

    Attribute access goes to the real `rules.Rule` for anything not in the summary (and the
    ones used in matching are then kept on the proxy, so a hot loop reads a plain slot).
    Identity stands for the rule, as with `Rule` (eq=False): one proxy per rule per run.
    """

    SUMMARY = ("id", "code", "title", "severity", "family", "versions", "fallback", "last_resort", "skip_handled",
               "consequence", "follows", "priority", "prefilter_literals", "scan_patterns", "path")
    __slots__ = (*SUMMARY, "match", "_blob", "_rule")

    def __init__(self, summary: tuple[Any, ...], check: str | None, blob: bytes) -> None:
        for name, value in zip(self.SUMMARY, summary):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "match", _LazyMatch(check, self))
        object.__setattr__(self, "_blob", blob)
        object.__setattr__(self, "_rule", None)

    @property
    def rule(self) -> Any:
        """The real rule (unpickled now if it was not yet)."""
        rule = self._rule
        if rule is None:
            try:  # the C unpickler itself: `pickle` (its Python half, ~1 ms to import) is for writing
                from _pickle import loads
            except ImportError:  # pragma: no cover - another Python implementation
                from pickle import loads
            rule = loads(self._blob)
            object.__setattr__(self, "_rule", rule)
            object.__setattr__(self, "match", rule.match)
        return rule

    def __getattr__(self, name: str) -> Any:  # only for what the slots do not hold
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.rule, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"rule {self.id}: rules are read-only")

    def __reduce__(self) -> tuple[Any, ...]:  # a worker process gets the same cheap proxy
        return (LazyRule, (tuple(getattr(self, n) for n in self.SUMMARY), self.match.check, self._blob))

    def __repr__(self) -> str:
        return f"<rule {self.id} ({self.code})>"
