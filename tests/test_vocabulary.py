"""The fact vocabulary is the one declaration: the context sets only its names, every name is set
somewhere, the linter reads it, and the guide's facts table is generated from it."""

from __future__ import annotations

import re
from pathlib import Path

from sglang_doctor.facts import vocabulary
from sglang_doctor.pipeline.run import Options, diagnose
from sglang_doctor.ruledev.docs import write_facts_table
from sglang_doctor.ruledev.lint import lint_rule

PKG = Path(__file__).resolve().parent.parent / "sglang_doctor"
REAL = Path(__file__).resolve().parent / "data" / "real"
SET_CALL = re.compile(r"""\.set\(\s*f?["']([a-z_]+\.[A-Za-z0-9_.{}]+)["']""")


def _names_set_in_source() -> set[str]:
    names: set[str] = set()
    for path in (PKG / "facts").glob("*.py"):
        for name in SET_CALL.findall(path.read_text(encoding="utf-8")):
            names.add(re.sub(r"\{[^}]*\}", "X", name))  # f"env.{name}" -> env.X: a family member
    return names


def test_every_fact_the_context_sets_is_declared():
    undeclared = sorted(n for n in _names_set_in_source() if not vocabulary.declared(n))
    assert not undeclared, undeclared


def test_every_declared_fact_is_set_somewhere():
    set_names = _names_set_in_source()
    stale = sorted(n for n in vocabulary.NAMES if n not in set_names)
    assert not stale, f"declared but never set: {stale}"


def test_facts_of_real_logs_are_declared(rules, demo_dir):
    logs = sorted(demo_dir.glob("*.log")) + sorted(REAL.glob("*.log"))[:40]
    run = diagnose([str(p) for p in logs], rules, Options())
    seen = {name for res in run.results for la in res.launches for name in la.context.facts}
    assert seen, "no facts read at all"
    assert {n for n in seen if not vocabulary.declared(n)} == set()


def test_the_guide_table_is_generated_from_the_vocabulary():
    page = PKG.parent / "docs" / "writing-rules.md"
    assert not write_facts_table(page, check_only=True), "run `sglang-doctor rules docs`"
    text = page.read_text(encoding="utf-8")
    for f in vocabulary.FACTS:
        assert f"| `{f.name}` |" in text, f.name


def test_lint_rejects_an_undeclared_fact(rules):
    from dataclasses import replace

    from sglang_doctor.engine.rules import Condition, load_rule_file

    rule = load_rule_file(Path(next(r for r in rules if r.conditions).path))  # a real Rule, not the cache's proxy
    assert not [p for p in lint_rule(rule) if "gpu.made_up_fact" in p.message]
    bad = replace(rule, conditions=[Condition(fact="gpu.made_up_fact", op="exists")])
    assert any("gpu.made_up_fact" in p.message for p in lint_rule(bad))
