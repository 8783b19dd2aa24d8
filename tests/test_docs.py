"""docs/rules/ is generated from the rules and their fixtures and must be kept up to date."""

from __future__ import annotations

from pathlib import Path

from sglang_doctor.ruledev.docs import write_docs

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"


def test_rule_pages_are_up_to_date(rules):
    stale = write_docs(rules, DOCS, check_only=True)
    assert not stale, f"run `sglang-doctor rules docs`; out of date: {stale[:5]}"


def test_every_rule_has_a_page_with_what_why_fix(rules):
    for r in rules:
        page = (DOCS / f"{r.code}-{r.id}.md").read_text()
        for heading in ("## What it means", "## Why it happens", "## How to fix it"):
            assert heading in page, (r.id, heading)
