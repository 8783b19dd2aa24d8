"""Whether a rule's fixtures test anything: a near-miss quiet fixture, a fires fixture of its own.

A quiet fixture tests the rule's pattern only when it carries the text the rule looks for (its required
literal: what the prefilter finds) and the rule still stays quiet: the same exception from another
subsystem, the message after the server was ready, the line without the frames the rule needs. A
rule that fires on any record carrying its literal (the literal alone matches, and nothing else
narrows it) can have no such near miss. A fires fixture that is a copy of one real log lets a pattern
hard-wired to that log's numbers pass; at least one fires fixture should be another release's
wording, a rank-tagged copy or other numbers.
"""

from __future__ import annotations

from pathlib import Path

import regex

from sglang_doctor.engine.rules import Rule, required_literal

COPY_SHARE = 0.9  # a fixture whose lines are this share of one real log's lines is a copy of it


def near_miss_literals(rule: Rule) -> list[str]:
    """The literals a near miss of `rule` must carry (empty for a rule without any: a check)."""
    return [lit for lit in rule.prefilter_literals or [] if lit.strip()]


def literal_suffices(rule: Rule) -> bool:
    """The rule fires on any record carrying one of its literals: no near miss can exist."""
    if rule.conditions or rule.match.require or rule.match.exclude:
        return False
    for p in rule.match.any:
        lit = required_literal(p.regex)
        if lit and regex.search(p.regex, lit):
            return True
    return False


def has_near_miss(rule: Rule) -> bool:
    lits = near_miss_literals(rule)
    return any(any(lit in q.read_text(errors="replace") for lit in lits) for q in rule.fixtures()[1])


def needs_near_miss(rule: Rule) -> bool:
    return bool(near_miss_literals(rule)) and not literal_suffices(rule)


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def copied_from(fixture: Path, real_logs: dict[str, set[str]]) -> str | None:
    """The real log (name) `fixture` is a copy of, or None. `real_logs`: name -> its stripped lines."""
    lines = _lines(fixture.read_text(errors="replace"))
    if not lines:
        return None
    for name, have in real_logs.items():
        if sum(ln in have for ln in lines) >= COPY_SHARE * len(lines):
            return name
    return None


def real_log_lines(directory: Path) -> dict[str, set[str]]:
    return {p.name: set(_lines(p.read_text(errors="replace"))) for p in sorted(directory.glob("*.log"))}
