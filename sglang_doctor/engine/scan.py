"""Stage one of matching: find the few lines of a block that anything could care about.

A compiled multi-pattern engine (Hyperscan, when the `hyperscan` wheel imports) runs every
rule's full regex, every context extractor's regex and the traceback markers over a whole
block of raw bytes at once and reports where they match. Lines with no match are never
decoded. Patterns Hyperscan cannot take (anchors, which mean something else once the log
header is stripped, or syntax it rejects) are replaced by their required literal; a
pattern with neither runs as a Python regex over the decoded block.

Without Hyperscan the analysis is still complete: every line goes the slow way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

try:  # optional compiled engine; everything works (slower) without it
    import hyperscan as _hs
except Exception:  # pragma: no cover - depends on the platform's wheel
    _hs = None

# Lines that open or belong to a traceback: segmentation needs them.
MARKERS = [r"Traceback \(most recent call last\):", r'File "[^"\n]*", line \d+',
           r"[A-Za-z_][\w.]*(?:Error|Exception)(?::|\()"]


def _drop_edge_anchors(pattern: str) -> str:
    """`^x` / `x$` -> `x`: unanchored, the pattern matches a superset of lines, which is
    all stage one needs (stage two applies the real anchors to the record's text)."""
    if pattern.startswith("^"):
        pattern = pattern[1:]
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1]
    return pattern


def has_anchor(pattern: str) -> bool:
    """^, $, \\A, \\Z or a lookaround outside a character class.

    Anchors mean something else on raw log lines (header and container prefixes still
    attached) than on a record's text, and Hyperscan has no lookarounds.
    """
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if not in_class and pattern[i + 1:i + 2] in ("A", "Z", "z"):
                return True
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "^":
                i += 1
            if pattern[i + 1:i + 2] == "]":
                i += 1
        elif c in "^$":
            return True
        elif pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            return True
        i += 1
    return False


def hyperscan_available() -> bool:
    return _hs is not None


PLAN_VERSION = 3  # of _plan's choices (2: anchored patterns without a literal go to Hyperscan; 3: sources)


@dataclass
class ScanPlan:
    """What stage one searches for, and how."""

    hs_patterns: list[str] = field(default_factory=list)  # handed to Hyperscan
    python_patterns: list[str] = field(default_factory=list)  # no literal, Hyperscan refused
    refused: list[str] = field(default_factory=list)  # patterns Hyperscan could not compile (as given)
    # For each of hs_patterns, then each of python_patterns (ids in that order): the indices of the
    # patterns given to the Scanner it stands for.
    sources: list[list[int]] = field(default_factory=list)


def _literal_pattern(pattern: str) -> str | None:
    import regex

    from sglang_doctor.engine.rules import required_literal

    lit = required_literal(pattern)
    return regex.escape(lit) if lit else None


class LiteralIndex:
    """Which literals of a list occur in a text: one Hyperscan pass over it.

    Measured ~40x faster than one `in` test per literal (~280 literals, log lines of
    0.2-3 KB); the Matcher switches to it once an input has enough records to repay the
    few milliseconds of compiling.
    """

    def __init__(self, literals: list[str]) -> None:
        if _hs is None:
            raise RuntimeError("hyperscan is not available")
        encoded = [lit.encode("utf-8", "surrogatepass") for lit in literals]
        self._db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        self._db.compile(expressions=encoded, ids=list(range(len(encoded))), elements=len(encoded),
                         flags=_hs.HS_FLAG_SINGLEMATCH, literal=True)

    def present(self, text: str) -> list[int]:
        """Indices (ascending) of the literals `text` contains."""
        found: list[int] = []
        self._db.scan(text.encode("utf-8", "surrogatepass"),
                      match_event_handler=lambda i, _from, _to, _flags, _ctx: found.append(i))
        found.sort()
        return found


# Budget for one Python-regex pattern over one block (stage one, see Scanner.hits).
PYTHON_SCAN_TIMEOUT_S = 1.0

_BACKREF = r"\(\?P=\w+\)|\\[1-9]"  # (only a new plan looks: `regex` is imported then, not for a cached one)


def _compiled_python(patterns: list[str]) -> list[Any]:
    """The patterns Hyperscan does not run, compiled on raw bytes (match offsets are block offsets)."""
    if not patterns:
        return []
    import regex

    return [regex.compile(p.encode("utf-8"), regex.MULTILINE) for p in patterns]


class Scanner:
    """Finds the start offsets of the lines in a block that some pattern matches.

    `owners[i]` (optional) is whatever pattern i belongs to: `owners_of(id)` gives the owners of the
    patterns a match id stands for (engine/analyze.py counts a line only some saturated rules read).
    """

    def __init__(self, patterns: list[str], cache_dir: str | None = None, owners: list[Any] | None = None) -> None:
        if _hs is None:
            raise RuntimeError("hyperscan is not available")
        self.plan = ScanPlan()
        if not self._load(patterns, cache_dir):
            self._plan(patterns)
            self._save(patterns, cache_dir)
        own = owners if owners is not None else [None] * len(patterns)
        self._owners = [tuple(dict.fromkeys(own[i] for i in src)) for src in self.plan.sources]

    def owners_of(self, pattern_id: int) -> tuple[Any, ...]:
        return self._owners[pattern_id]

    # A compiled database takes ~0.1-0.8 s to build; it is cached beside the rule cache,
    # keyed by the exact pattern list (and Hyperscan's version), and rebuilt on any change.
    @staticmethod
    def _key(patterns: list[str]) -> str:
        import hashlib

        from sglang_doctor.engine.narrow import VERSION

        h = hashlib.sha256(f"{getattr(_hs, '__version__', '?')} narrow-{VERSION} plan-{PLAN_VERSION}".encode())
        for p in patterns:
            h.update(p.encode("utf-8", "replace") + b"\0")
        return h.hexdigest()[:32]

    def _load(self, patterns: list[str], cache_dir: str | None) -> bool:
        import json
        import os

        from sglang_doctor._speed.cachefiles import read_trusted

        if not cache_dir:
            return False
        path = os.path.join(cache_dir, f"scan-{self._key(patterns)}")
        try:
            raw = read_trusted(path + ".json")
            if raw is None:
                return False
            plan = json.loads(raw)
            self.plan = ScanPlan(plan["hs"], plan["python"], plan["refused"], plan["sources"])
            self._db = None
            if self.plan.hs_patterns:
                db = read_trusted(path + ".db")
                if db is None:
                    return False
                self._db = _hs.loadb(db, _hs.HS_MODE_BLOCK)  # type: ignore[union-attr]
                self._db.scratch = _hs.Scratch(self._db)  # type: ignore[union-attr]
            self._python = _compiled_python(self.plan.python_patterns)
            return True
        except Exception:  # stale or corrupt: build it
            return False

    def _save(self, patterns: list[str], cache_dir: str | None) -> None:
        import json
        import os

        from sglang_doctor._speed.cachefiles import prune, write_atomic

        if not cache_dir:
            return
        path = os.path.join(cache_dir, f"scan-{self._key(patterns)}")
        try:
            plan = json.dumps({"hs": self.plan.hs_patterns, "python": self.plan.python_patterns,
                               "refused": self.plan.refused, "sources": self.plan.sources}).encode()
            db = _hs.dumpb(self._db) if self._db is not None else b""  # type: ignore[union-attr]
        except Exception:
            return
        # The plan last: a reader that finds it finds the database it names.
        if write_atomic(path + ".db", db) and write_atomic(path + ".json", plan):
            prune(cache_dir, "scan-")

    def _plan(self, patterns: list[str]) -> None:
        import regex

        from sglang_doctor.engine.narrow import stage_one_form

        backref = regex.compile(_BACKREF)
        where: dict[str, list[int]] = {}
        for i, p in enumerate(patterns):
            where.setdefault(p, []).append(i)
        candidates: list[tuple[str, str]] = []  # (the form stage one searches, the pattern given)
        python: list[tuple[str, str]] = []
        for given in where:
            p = stage_one_form(_drop_edge_anchors(given))  # (~0.2 s for the shipped rules: cached with the plan)
            if has_anchor(p) or backref.search(p):
                lit = _literal_pattern(p)
                if lit is not None:
                    candidates.append((lit, given))
                elif not backref.search(p) and self._compiles(p):
                    # No literal to stand for it: Hyperscan's multiline `^`/`$` on the raw block
                    # are the Python fallback's, at its speed (a lookaround does not compile).
                    # The Python scan of such a pattern (the package-version hint of
                    # facts/packages.py) was ~0.3 s a MB.
                    candidates.append((p, given))
                else:
                    python.append((p, given))
            else:
                candidates.append((p, given))
        usable: list[tuple[str, str]] = []
        if self._compiles_all([p for p, _ in candidates]):
            candidates, usable = [], candidates
        for p, given in candidates:
            if self._compiles(p):
                usable.append((p, given))
                continue
            self.plan.refused.append(p)
            lit = _literal_pattern(p)
            if lit is not None and self._compiles(lit):
                usable.append((lit, given))
            else:
                python.append((p, given))
        self.plan.hs_patterns = [p for p, _ in usable]
        self.plan.python_patterns = [p for p, _ in python]
        self.plan.sources = [where[given] for _, given in usable + python]
        self._db = self._build(self.plan.hs_patterns) if usable else None
        self._python = _compiled_python(self.plan.python_patterns)

    @staticmethod
    def _flags() -> int:
        return _hs.HS_FLAG_MULTILINE | _hs.HS_FLAG_ALLOWEMPTY  # type: ignore[union-attr]

    def _compiles_all(self, patterns: list[str]) -> bool:
        try:
            self._build(patterns)
            return True
        except Exception:
            return False

    def _compiles(self, pattern: str) -> bool:
        try:
            self._build([pattern])
            return True
        except Exception:
            return False

    def _build(self, patterns: list[str]) -> Any:
        db = _hs.Database()  # type: ignore[union-attr]
        db.compile(expressions=[p.encode("utf-8") for p in patterns], ids=list(range(len(patterns))),
                   elements=len(patterns), flags=[self._flags()] * len(patterns))
        return db

    def hits(self, block: bytes) -> tuple[list[int], list[tuple[int, ...]]]:
        """Sorted start offsets of the lines that hold a match end, and for each the ids of the
        patterns that matched there (see owners_of)."""
        found: list[tuple[int, int]] = []  # (end, pattern id)
        if self._db is not None:
            def on_match(pattern_id: int, _from: int, to: int, _flags: int, _ctx: Any) -> None:
                found.append((to, pattern_id))

            self._db.scan(block, match_event_handler=on_match)
        base = len(self.plan.hs_patterns)
        for k, rx in enumerate(self._python):
            # A catastrophic pattern raises TimeoutError here: the caller reads the rest
            # of the input line by line, where each rule's regex has its own budget.
            found.extend((m.end(), base + k) for m in rx.finditer(block, timeout=PYTHON_SCAN_TIMEOUT_S))
        if not found:
            return [], []
        by_start: dict[int, set[int]] = {}
        for end, pattern_id in found:
            # A match may end right after a newline (patterns with \s*): its line is the one before.
            pos = max(0, end - 1)
            start = block.rfind(b"\n", 0, pos) + 1 if pos > 0 else 0
            by_start.setdefault(start, set()).add(pattern_id)
        starts = sorted(by_start)
        return starts, [tuple(sorted(by_start[s])) for s in starts]
