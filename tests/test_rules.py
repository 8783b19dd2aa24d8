"""The rule set: schema errors are one line, every built-in rule passes its fixtures."""

from __future__ import annotations

import pytest

from sglang_doctor.ruledev.fixture_test import run_fixture_tests
from sglang_doctor.engine.rules import RuleLoadError, load_rules, required_literal
from rule_helpers import GOOD, write_rule


def test_every_builtin_rule_passes_its_fixtures(rules):
    res = run_fixture_tests(rules)
    assert not res.failures, "\n".join(res.failures)
    assert res.checked >= 2 * len(rules)


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


def test_every_fires_fixture_has_a_snapshot_and_a_changed_value_fails(rules, tmp_path):
    """Each fires fixture's whole finding is pinned; changing a computed value or the explanation fails."""
    from sglang_doctor.pipeline.run import diagnose
    from sglang_doctor.ruledev import snapshot
    from sglang_doctor.ruledev.fixture_test import check_fixture

    missing = [str(p) for r in rules for p in r.fixtures()[0] if not snapshot.snapshot_path(p).is_file()]
    assert not missing, missing[:5]
    rule = next(r for r in rules if r.id == "hybrid-mamba-not-enough-gpu-memory")
    fixture = rule.fixtures()[0][0]
    report = diagnose([str(fixture)], rules).report
    assert check_fixture(rule, fixture, report) == []
    stored = snapshot.snapshot_path(fixture).read_text()
    assert "from: '0.8'" in stored and "value: '0.89'" in stored and "fix: --mem-fraction-static 0.8 → 0.89" in stored
    finding = next(f for f in report.findings if f.rule == rule.id)
    finding.fixes[0].value = "0.95"
    problems = check_fixture(rule, fixture, report)
    assert "-  value: '0.89'" in problems[-1] and "+  value: '0.95'" in problems[-1], problems
    finding.fixes[0].value = "0.89"
    finding.explanation += " Changed."  # (one word: the diff wraps long lines)
    assert "Changed." in check_fixture(rule, fixture, report)[0]
    text = snapshot.snapshot_text(rule.id, fixture, finding, report)
    assert str(tmp_path.parent) not in text and "/work/" not in text  # no absolute path, no tool version


def test_rules_test_update_writes_snapshots_for_a_user_rule_directory(tmp_path):
    """A user's rule directory: missing snapshot fails, --update writes it, then it passes; an edited
    explanation fails until --update rewrites it; a snapshot whose fixture is gone fails / is removed."""
    from helpers_cli import run

    d = write_rule(tmp_path, GOOD)
    fixtures = tmp_path / "rules" / "test" / "my-rule"
    fixtures.mkdir()
    (fixtures / "fires-a.log").write_text("[2025-01-01 10:00:00] Something odd happened\n")
    (fixtures / "quiet-a.log").write_text("[2025-01-01 10:00:00] Something happened\n")
    args = ["rules", "test", "--rules", d, "--only-user"]
    r = run(args)
    assert r.exit_code == 1 and "no snapshot fires-a.snap.yaml" in r.stdout, r.stdout
    r = run(args + ["--update"])
    assert r.exit_code == 0 and "1 snapshot(s) written" in r.stdout, r.stdout
    snap = fixtures / "fires-a.snap.yaml"
    assert "rule: my-rule" in snap.read_text() and "fix: add --disable-cuda-graph" in snap.read_text()
    assert run(args).exit_code == 0
    write_rule(tmp_path, GOOD.replace("explanation: odd", "explanation: very odd"))
    r = run(args)
    assert r.exit_code == 1 and "+explanation: very odd" in r.stdout, r.stdout
    assert run(args + ["--update"]).exit_code == 0 and run(args).exit_code == 0
    (fixtures / "fires-b.snap.yaml").write_text("rule: my-rule\n")
    r = run(args)
    assert r.exit_code == 1 and "fires-b.snap.yaml: a snapshot without its fires fixture" in r.stdout
    r = run(args + ["--update"])
    assert r.exit_code == 0 and not (fixtures / "fires-b.snap.yaml").exists() and "removed" in r.stdout


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
