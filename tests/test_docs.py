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


def test_readme_demo_output_is_the_real_output(tmp_path, monkeypatch):
    """The README shows `sglang-doctor demo` as it prints today (80 columns, as in a pipe)."""
    import re

    from helpers_cli import isolate, run

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    shown = re.search(r"Real output:\n\n```\n(.*?)\n```", readme, re.S)[1]
    isolate(tmp_path, monkeypatch)
    monkeypatch.delenv("COLUMNS", raising=False)
    assert run(["demo", "--no-color"]).stdout.rstrip("\n") == shown


def test_readme_counts_the_rules_by_what_they_report():
    """`knows N launch and serving failures and warnings, and explains M harmless messages`."""
    import re

    from sglang_doctor.engine.rules import load_rules

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    m = re.search(r"knows (\d+) launch and serving failures and warnings,\s+and explains (\d+) harmless messages", readme)
    rules = load_rules()
    assert m and (int(m[1]), int(m[2])) == (sum(r.severity != "info" for r in rules), sum(r.severity == "info" for r in rules))
