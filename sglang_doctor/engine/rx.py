"""A rule's regex, run by the fastest engine that is safe for it.

`re` compiles rule patterns about three times faster than the `regex` module, and a run
that never needs `regex` does not import it (together a fifth of a cold start). But `re`
has no time limit, so it only gets what cannot run away: a pattern without a
catastrophic-backtracking shape (`regex_safety.backtrack_safe`, decided when the rule set is
validated and cached with it), searched in a text of at most FAST_MAX_CHARS. A hazardous
pattern, one `re` cannot compile, or a giant record goes to `regex`, whose per-match
timeout stops a runaway (TimeoutError). Both engines use ASCII classes, as the byte-level
scanner does, so every stage agrees on what `\\w`, `\\d` and `\\s` match.
"""

from __future__ import annotations

import re
from typing import Any

# Python's own regex parser, for the analyses of patterns (required literals, backtracking hazards).
try:  # Python 3.11+ moved the regex parser; the old modules warn on import.
    from re import _constants as sre_constants, _parser as sre_parse  # type: ignore[attr-defined]  # noqa: F401
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]  # noqa: F401
    import sre_parse  # type: ignore[no-redef]  # noqa: F401

# Per-match time budget of the `regex` engine: a catastrophic user regex must not hang a run.
MATCH_TIMEOUT_S = 0.25
# The longest text `re` searches. Real records measure under 4.1 KB (a traceback with its
# frames); past this, even a safe pattern with several wildcards could take long enough
# on a hostile line that the time budget should apply.
FAST_MAX_CHARS = 8192


class RuleRegex:
    """One pattern, compiled by each engine on first use."""

    __slots__ = ("pattern", "safe", "_re", "_regex")

    def __init__(self, pattern: str, safe: bool) -> None:
        self.pattern = pattern
        self.safe = safe  # no backtracking hazard: `re` may run it on short texts
        self._re: Any = None
        self._regex: Any = None

    def __reduce__(self) -> tuple[Any, ...]:  # worker processes get the source, not the compiled engines
        return (RuleRegex, (self.pattern, self.safe))

    def search(self, text: str) -> Any:
        """The first match in `text`, or None; TimeoutError when `regex` ran out of time."""
        if self.safe and len(text) <= FAST_MAX_CHARS:
            if self._re is None:
                try:
                    self._re = re.compile(self.pattern, re.ASCII)
                except (re.error, RecursionError, OverflowError):  # syntax only `regex` has
                    self.safe = False
                    return self.search(text)
            return self._re.search(text)
        return self._slow().search(text, timeout=MATCH_TIMEOUT_S)

    @property
    def groupindex(self) -> Any:
        return self._slow().groupindex

    def _slow(self) -> Any:
        if self._regex is None:
            import regex

            self._regex = regex.compile(self.pattern, regex.ASCII)
        return self._regex
