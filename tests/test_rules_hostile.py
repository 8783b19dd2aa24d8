"""Hostile rule files: bombs and deep nesting are refused in one line, schema errors name
file, line and field, a catastrophic regex cannot hang a run, and `rules lint` finds
the problems ahead of time (and passes on the shipped rules)."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from sglang_doctor.engine import scan
from sglang_doctor.cli.main import main
from sglang_doctor.engine.regex_safety import regex_problems
from sglang_doctor.engine.rules import RuleLoadError, load_rules
from rule_helpers import GOOD, write_rule

DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"
DEMO_LOG = (DEMO / "qwen3.6-27b-awq-dtype-crash.log").read_text()




def cli(args, input=None):
    try:
        r = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        r = CliRunner()
    return r.invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SGLANG_DOCTOR_CACHE", str(tmp_path / "cache"))


def refused_quickly(tmp_path: Path, text: str, match: str) -> str:
    d = write_rule(tmp_path, text)
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(RuleLoadError, match=match) as e:
        load_rules([d], builtin=False, cache=False)
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    msg = str(e.value)
    assert "\n" not in msg and "my-rule.yaml" in msg
    # A refusal, not a blow-up: bounded far above a normal load (~0.1 s) so a busy CI machine does not flake.
    assert elapsed < 5.0, elapsed
    assert peak < 32 * 1024 * 1024, peak
    return msg


# --- bombs and depth ---------------------------------------------------------------------------


def test_alias_bomb_is_refused_within_a_second_in_bounded_memory(tmp_path):
    # nine levels of nine aliases: 9**9 nodes once expanded
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    refused_quickly(tmp_path, bomb, "alias")


def test_few_aliases_that_double_each_level_are_refused_by_size(tmp_path):
    # 24 aliases, under the alias cap, but 2**12 copies of the list at the top, ~2**13 nodes... times
    # the 100-element leaf: over the node cap once expanded
    chain = "a0: &a0 [" + ", ".join(["x"] * 100) + "]\n" + "".join(
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 13))
    refused_quickly(tmp_path, chain, "expands to more than")


def test_merge_key_bomb_is_refused(tmp_path):
    text = "m0: &m0 {k: [x, x, x, x, x, x, x, x]}\n" + "".join(
        f"m{i}: &m{i} {{<<: *m{i - 1}, a: *m{i - 1}, b: *m{i - 1}, c: *m{i - 1}}}\n" for i in range(1, 12))
    refused_quickly(tmp_path, text, "expands to more than|aliases")


@pytest.mark.parametrize("text", [
    "id: " + "[" * 10_000 + "]" * 10_000 + "\n",
    "id: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n",
    "id: " + "[" * 500 + "]" * 500 + "\n",
    "".join("  " * i + "- \n" for i in range(300)),
    "id: " + "[" * 10_000 + "\n",  # unclosed
], ids=["flow-seq-10k", "flow-map-10k", "flow-500", "block-300", "unclosed-10k"])
def test_deeply_nested_yaml_is_a_one_line_error(tmp_path, text):
    refused_quickly(tmp_path, text, "nested deeper than|invalid YAML")


def test_deeply_nested_yaml_through_the_cli_is_exit_2_one_line(tmp_path):
    d = write_rule(tmp_path, "id: " + "[" * 10_000 + "]" * 10_000 + "\n")
    r = cli(["--rules", d, "-"], input=DEMO_LOG)
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("sglang-doctor: ") and "my-rule.yaml" in r.stderr


def test_deeply_nested_regex_is_a_one_line_error_naming_the_field(tmp_path):
    text = GOOD.replace("'Something odd happened'", "'" + "(" * 5000 + "odd" + ")" * 5000 + "'")
    msg = refused_quickly(tmp_path, text, "regex")
    assert "match.any.0.regex" in msg and ":8:" in msg


# --- schema errors: file, line, field ------------------------------------------------------------


@pytest.mark.parametrize("broken, line, field", [
    (GOOD.replace("code: SGD1999", "code: nope"), 2, "code"),
    (GOOD.replace("severity: warning", "severity: fatal"), 4, "severity"),
    (GOOD.replace("'Something odd happened'", "'(unclosed'"), 8, "match.any.0.regex"),
    (GOOD.replace("    action: add\n", ""), 11, "fixes.0"),
    (GOOD + "let:\n  ok: '1'\n  x: \"__import__('os')\"\n", 17, "let.x"),
    (GOOD + "bogus_key: 1\n", 15, "bogus_key"),
    (GOOD.replace("id: my-rule", "id: other-name"), 1, "id"),
])
def test_schema_error_names_file_line_and_field(tmp_path, broken, line, field):
    d = write_rule(tmp_path, broken)
    with pytest.raises(RuleLoadError) as e:
        load_rules([d], builtin=False, cache=False)
    msg = str(e.value)
    assert "\n" not in msg
    assert f"my-rule.yaml:{line}: " in msg, msg
    assert f"field {field}" in msg, msg


# --- a catastrophic regex cannot hang a run ---------------------------------------------------------

EVIL = """id: evil-regex
code: SGD1998
title: A rule with a catastrophic regex
severity: warning
family: test
match:
  any:
    - regex: '{regex}'
explanation: boom
fix_none: nothing to change
docs: {{what: a, why: b, fix: c}}
"""


def _evil(tmp_path: Path, regex: str) -> str:
    return write_rule(tmp_path, EVIL.format(regex=regex), "evil-regex")


def test_nested_quantifier_regex_finishes(tmp_path):
    d = _evil(tmp_path, "(a+)+$")  # the `regex` module copes with this shape
    log = "[2026-05-02 09:14:03] start\n" + ("a" * 5000 + "b\n") * 20
    t0 = time.perf_counter()
    r = cli(["--rules", d, "-"], input=log)
    assert time.perf_counter() - t0 < 30  # a hang guard, not a benchmark (a loaded CI machine is slow)
    assert r.exit_code == 0


@pytest.mark.parametrize("tail, code", [("", 0), (DEMO_LOG, 1)], ids=["clean", "with-crash"])
def test_regex_timeout_is_a_warning_naming_the_rule(tmp_path, tail, code):
    d = _evil(tmp_path, "(a|a)+$")  # exponential in the `regex` module
    log = "[2026-05-02 09:14:03] start\n" + ("a" * 40 + "b\n") * 10 + tail
    t0 = time.perf_counter()
    r = cli(["--rules", d, "-"], input=log)
    assert time.perf_counter() - t0 < 30  # a hang guard, not a benchmark (a loaded CI machine is slow)
    assert r.exit_code == code  # the warning does not change the exit status
    warnings = [ln for ln in r.stderr.splitlines() if "warning: rule evil-regex: regex took longer" in ln]
    assert 1 <= len(warnings) <= 3 and "disabled for the rest of the run" in warnings[-1]


@pytest.mark.skipif(not scan.hyperscan_available(), reason="hyperscan wheel not importable")
@pytest.mark.parametrize("regex", ["(a|a)+$", "(a|a)+(?=\\n|$)"], ids=["hyperscan-stage", "python-stage"])
def test_regex_timeout_on_the_fast_path(tmp_path, regex):
    d = _evil(tmp_path, regex)
    filler = "[2026-05-02 09:14:04] INFO:     172.17.0.9:4711 - \"POST /generate HTTP/1.1\" 200 OK\n"
    log = DEMO_LOG + filler * 4000 + ("a" * 40 + "b\n") * 200
    assert len(log) > 256 * 1024
    (tmp_path / "big.log").write_text(log)
    t0 = time.perf_counter()
    r = cli(["--rules", d, "--format", "json", "big.log"])
    assert time.perf_counter() - t0 < 60  # a hang guard, not a benchmark (a loaded CI machine is slow)
    assert r.exit_code == 1 and "SGD401" in {f["code"] for f in json.loads(r.stdout)["findings"]}
    warnings = [ln for ln in r.stderr.splitlines() if "rule evil-regex" in ln]
    assert 1 <= len(warnings) <= 3


# --- rules lint ------------------------------------------------------------------------------------


def test_shipped_rules_pass_lint():
    r = cli(["rules", "lint"])
    assert r.exit_code == 0, r.stdout
    assert r.stdout == ""


@pytest.mark.parametrize("pattern, problem", [
    ("(a+)+$", "nested quantifier"),
    ("(a|aa)+", "nested quantifier"),
    ("(\\w+\\s?)*x", "nested quantifier"),
    ("(?:[\\w.]+\\.)*host", "nested quantifier"),
    ("(?:.*?,)*end", "nested quantifier"),
    ("(a|a)+$", "overlapping alternatives"),
    ("(?:x|x?)*y", "backtracking"),
    ("(?:a|b[^x]*)*c", "nested quantifier"),
    ("(?:\\d+|\\d+\\.\\d+)*", "nested quantifier"),
])
def test_lint_finds_catastrophic_shapes(pattern, problem):
    assert any(problem in p for p in regex_problems(pattern)), regex_problems(pattern)


@pytest.mark.parametrize("pattern", [
    "Not enough memory\\. Please (?P<x>\\d+)", "(?:, \\w+)*", "(?:\\d+\\.)+\\d+", "(?:\\s+\\S+)+",
    "(?:error|errors)+", "(?:ab?)*", "\\[(?:[^\\]]+)\\]", "(?>a+)+", "(?:a++)+", "(?:\\w+\\s){0,5}",
    "(?P<name>\\w+)\\((?:[^()]|\\([^()]*\\))*\\)",
])
def test_lint_leaves_safe_shapes_alone(pattern):
    assert regex_problems(pattern) == []


LINTY = """id: linty
code: SGD1997
title: A rule with every problem lint knows
severity: warning
family: test
versions: 0.4.0-0.5.23
match:
  any:
    - regex: '(?P<n>\\d+) x (\\w+\\s?)*'
    - regex: 'Something odd (?P<unused>happened)'
explanation: "saw {n} and {typo_name} on {gpu.nmae}"
fixes:
  - kind: flag
    flag: --mamba-full-memory-ratio
    action: set
    value: "0.9"
docs: {what: a, why: b, fix: c}
"""


def test_lint_reports_one_line_per_problem_with_file_and_line(tmp_path):
    d = write_rule(tmp_path, LINTY, "linty")
    r = cli(["rules", "lint", "--rules", d, "--only-user", "--strict"])
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    path = str(Path("rules/test/linty.yaml"))
    assert all(ln.startswith(path + ":") and ": linty: " in ln for ln in lines), lines
    text = "\n".join(lines)
    assert f"{path}:9: linty: match.any[0]: nested quantifier" in text
    assert f"{path}:9: linty: match.any[0]: no literal of 4 or more characters" in text
    assert f"{path}:10: linty: match.any[1]: named group 'unused' is never used" in text
    assert "'typo_name' is used but no pattern captures it" in text
    assert "'gpu.nmae' is used but" in text
    assert f"{path}:14: linty: fix flag --mamba-full-memory-ratio does not exist in" in text
    assert len(lines) == 6, lines
    assert "1 rules linted, 6 problem(s)" in r.stderr
    default = cli(["rules", "lint", "--rules", d, "--only-user"])  # report-only captures are fine
    assert default.exit_code == 1 and len(default.stdout.splitlines()) == 5 and "'unused'" not in default.stdout


def test_lint_clean_user_rule_exits_0(tmp_path):
    d = write_rule(tmp_path, GOOD)
    r = cli(["rules", "lint", "--rules", d, "--only-user"])
    assert r.exit_code == 0 and r.stdout == ""
    assert "1 rules linted, 0 problem(s)" in r.stderr


def test_lint_of_a_broken_rule_file_is_exit_2(tmp_path):
    d = write_rule(tmp_path, "id: [unclosed\n")
    r = cli(["rules", "lint", "--rules", d])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1


def test_lint_flags_a_fix_text_that_starts_with_or(tmp_path):
    """`or:  or stop the process…`: the report labels alternatives itself."""
    from rule_helpers import GOOD, write_rule
    from sglang_doctor.engine.rules import load_rules
    from sglang_doctor.ruledev.lint import lint_rules

    text = GOOD.replace("    action: add\n", "    action: add\n  - kind: note\n    text: or stop the other process\n")
    rules = load_rules([write_rule(tmp_path, text)], builtin=False)
    problems = [str(p) for p in lint_rules(rules)]
    assert len(problems) == 1 and "fixes[1].text: starts with 'or'" in problems[0] and "my-rule.yaml:" in problems[0]
