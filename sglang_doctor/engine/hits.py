"""What a built-in check returns (a leaf module: the checks, the recognisers and the rule schema all
refer to it without importing one another)."""

from __future__ import annotations

from typing import Any, NamedTuple


class CheckHit(NamedTuple):
    """One thing a built-in check found: the line it is about, its text and captures; a check that
    knows more than its rule's YAML can say adds fixes of its own (as the rule file would write them,
    engine.rules.Fix fields) and the finding's `origin`."""

    line: int
    text: str
    captures: dict[str, str]
    fixes: tuple[dict[str, Any], ...] = ()
    origin: dict[str, Any] | None = None
    isolate: bool = False  # add the crash subsystem's isolating switches, as a rule's `isolate: true` does
