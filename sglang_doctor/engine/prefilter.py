"""The stage-one scanner of a run, built once and only when a log is long enough to need it.

Kept apart from scan.py, which imports `regex` and Hyperscan: a short log never pays for them.
"""

from __future__ import annotations

from typing import Any

from sglang_doctor.engine.rules import Rule


class ScannerCache:
    """Builds the stage-one scanner once per run, only when a log is long enough to need it."""

    def __init__(self, rules: list[Rule], enabled: bool) -> None:
        from sglang_doctor._speed import ENABLED

        self.rules = rules
        self.enabled = enabled and ENABLED
        self._scanner: Any = None
        self._failed = False

    def __call__(self) -> Any:
        if not self.enabled or self._failed:
            return None
        if self._scanner is None:
            from sglang_doctor.engine.scan import MARKERS, Scanner, hyperscan_available

            if not hyperscan_available():
                self._failed = True
                return None
            from sglang_doctor.facts.context import scan_patterns

            rule_patterns = [(p, r) for r in self.rules for p in r.scan_patterns]
            others = scan_patterns() + MARKERS  # (facts, the crash watch, tracebacks: owned by no rule)
            patterns = [p for p, _ in rule_patterns] + others
            owners = [r for _, r in rule_patterns] + [None] * len(others)
            from sglang_doctor._speed.cachefiles import cache_dir

            try:
                self._scanner = Scanner(patterns, cache_dir(), owners)
            except Exception:  # a broken engine must not break the diagnosis: go the slow way
                self._failed = True
                return None
        return self._scanner
