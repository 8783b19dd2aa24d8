"""Every flag a rule's fix names exists in the SGLang releases the rule covers.

Checked mechanically against the registry read off the release wheels
(sglang_doctor/data/flags.json); a renamed flag counts when the fixer can spell it
for that release. A router flag fix (`launcher: router`) is checked against the
router's registry (data/router-flags.json) over its sglang-router releases.
"""

from __future__ import annotations

from sglang_doctor.registry import flags
from sglang_doctor.ruledev.lint import router_flag_problems
from sglang_doctor.registry.spelling import spell


def test_fix_flags_exist_in_every_release_of_the_rule(rules):
    problems = []
    for rule in rules:
        releases = flags.releases()[-1:] if rule.versions.strip() == "*" else flags.releases_in_range(rule.versions)
        if not releases:
            problems.append(f"{rule.id}: versions {rule.versions!r} matches no known release")
            continue
        for fix in rule.fixes:
            if fix.kind != "flag" or not fix.flag or "{" in fix.flag:
                continue
            if fix.launcher == "router":  # checked against the router's registry instead
                problems += [f"{rule.id}: {p}" for p in router_flag_problems(fix.flag, fix.versions)]
                continue
            span = flags.releases_in_range(fix.versions) if fix.versions else releases
            if fix.versions and not set(span) <= set(releases) | set(flags.releases_in_range("*")):
                problems.append(f"{rule.id}: fix versions {fix.versions!r} is not a release range")
            missing = [r for r in span if r in releases and spell(fix.flag, r) is None]
            if missing:
                problems.append(f"{rule.id}: {fix.flag} not in {missing[0]}..{missing[-1]} ({len(missing)} releases)")
    assert not problems, "\n".join(problems)


def test_spelling_follows_renames():
    assert spell("--cuda-graph-max-bs", "0.5.10") == "--cuda-graph-max-bs"
    assert spell("--cuda-graph-max-bs", "0.5.14") == "--cuda-graph-max-bs-decode"
    assert spell("--cuda-graph-max-bs", "0.5.23") == "--cuda-graph-max-bs-decode"
    assert spell("--cuda-graph-max-bs-decode", "0.5.5") == "--cuda-graph-max-bs"
    assert spell("--mem-fraction-static", "0.4.0") == "--mem-fraction-static"
    assert spell("--mamba-full-memory-ratio", "0.4.6") is None
    assert spell("--anything", None) == "--anything"


def test_replacements_read_off_the_deprecated_rows_equal_those_of_every_release_table():
    """`deprecated_specs()` (the run-length index, cold-start path) gives the renames the tables of
    every release give, in the same order (the richest record of the oldest release wins a tie)."""
    from sglang_doctor.registry import spelling

    seen = []
    for rel in flags.releases():
        table = flags.flags_for(rel)
        for name in list(table):
            if table[name].deprecated and table[name] not in seen:
                seen.append(table[name])
    assert flags.deprecated_specs() == seen
    assert spelling._replacements()  # the registry records renames
