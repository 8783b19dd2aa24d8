"""The rule set: schema errors are one line, every built-in rule passes its fixtures."""

from __future__ import annotations

import pytest

from sglang_doctor.ruledev.fixture_test import run_fixture_tests
from sglang_doctor.engine.rules import RuleLoadError, load_rules, required_literal
from rule_helpers import GOOD, write_rule


def test_every_builtin_rule_passes_its_fixtures(rules):
    failures, checked = run_fixture_tests(rules)
    assert not failures, "\n".join(failures)
    assert checked >= 2 * len(rules)


def test_fixture_expectations_check_computed_values(rules, tmp_path):
    """An .expect.yaml beside a fires fixture pins the finding's computed fixes; a wrong value fails."""
    from sglang_doctor.pipeline.run import diagnose
    from sglang_doctor.ruledev.fixture_test import check_expectations, expect_path

    rule = next(r for r in rules if r.id == "hybrid-mamba-not-enough-gpu-memory")
    fixture = next(p for p in rule.fixtures()[0] if expect_path(p).is_file())
    finding = next(f for f in diagnose([str(fixture)], rules).report.findings if f.rule == rule.id)
    assert check_expectations(finding, expect_path(fixture)) == []
    wrong = tmp_path / "x.expect.yaml"
    wrong.write_text("fixes:\n  - {flag: --mem-fraction-static, value: '0.95'}\ncaptures: {max_mamba_cache_size: '7'}\n")
    problems = check_expectations(finding, wrong)
    assert len(problems) == 2 and "0.89" in problems[1] and "'-2'" in problems[0], problems
    wrong.write_text("fixez: []\n")
    assert "a mapping with only" in check_expectations(finding, wrong)[0]
    assert sum(1 for r in rules for p in r.fixtures()[0] if expect_path(p).is_file()) >= 9


def test_codes_and_ids_unique(rules):
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.id for r in rules}) == len(rules)


def test_every_rule_has_fix_or_reason_and_docs(rules):
    for r in rules:
        assert r.fixes or r.fix_none, r.id
        assert r.docs.what and r.docs.why and r.docs.fix, r.id





def test_user_rule_loads(tmp_path):
    rules = load_rules([write_rule(tmp_path, GOOD)])
    assert any(r.id == "my-rule" for r in rules)


@pytest.mark.parametrize("broken, field", [
    (GOOD.replace("severity: warning", "severity: fatal"), "severity"),
    (GOOD.replace("code: SGD1999", "code: X1"), "code"),
    (GOOD.replace("'Something odd happened'", "'(unclosed'"), "match.any.0.regex"),
    (GOOD.replace("    action: add\n", ""), "fixes.0"),
    (GOOD.replace("explanation: odd\n", ""), "explanation"),
    (GOOD + "let: {x: \"__import__('os')\"}\n", "let"),
    (GOOD + "bogus_key: 1\n", "bogus_key"),
])
def test_broken_rule_is_one_line_naming_file_rule_and_field(tmp_path, broken, field):
    d = write_rule(tmp_path, broken)
    with pytest.raises(RuleLoadError) as e:
        load_rules([d])
    msg = str(e.value)
    assert "\n" not in msg and "my-rule.yaml" in msg and "my-rule" in msg and field in msg


def test_invalid_yaml_and_alias_bomb_are_refused(tmp_path):
    with pytest.raises(RuleLoadError, match="invalid YAML"):
        load_rules([write_rule(tmp_path, "id: [unclosed\n")])
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    with pytest.raises(RuleLoadError, match="alias"):
        load_rules([write_rule(tmp_path, bomb)])


def test_python_tags_are_not_executed(tmp_path):
    with pytest.raises(RuleLoadError):
        load_rules([write_rule(tmp_path, "id: !!python/object/apply:os.system ['echo hi']\n")])


def test_duplicate_code_with_builtin_is_refused(tmp_path):
    with pytest.raises(RuleLoadError, match="code"):
        load_rules([write_rule(tmp_path, GOOD.replace("SGD1999", "SGD101"))])


def test_required_literal():
    assert required_literal(r"Not enough memory\. Please (?P<x>\d+)") == "Not enough memory. Please "
    assert required_literal(r"(?:foo|bar)baz") is None
    assert required_literal(r"(?i)case insensitive") is None
