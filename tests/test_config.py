"""Configuration: discovery upward, pyproject.toml and .sglang-doctor.yaml, every key, the
command line winning, and a one-line exit-2 error naming the key for anything wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers_cli import isolate, run
from sglang_doctor.policy.config import Config, ConfigError, apply_to_rules, find_config, load_config, resolve_config

DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"
CRASH = "qwen3.6-27b-awq-dtype-crash.log"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)


@pytest.fixture
def tree(tmp_path):
    """tmp/proj/sub/deep with the demo crash log in deep/."""
    deep = tmp_path / "proj" / "sub" / "deep"
    deep.mkdir(parents=True)
    shutil.copy(DEMO / CRASH, deep / CRASH)
    return deep


def _codes(result) -> list[str]:
    return [f["code"] for f in json.loads(result.stdout)["findings"]]


def test_yaml_config_found_walking_up(tree, monkeypatch):
    (tree.parent.parent / ".sglang-doctor.yaml").write_text("disable: [SGD402]\nformat: json\n")
    monkeypatch.chdir(tree)
    assert find_config() == tree.parent.parent / ".sglang-doctor.yaml"
    r = run([CRASH])
    assert "SGD401" in _codes(r) and "SGD402" not in _codes(r)


def test_pyproject_without_the_table_is_skipped(tree, monkeypatch):
    (tree.parent / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tree.parent.parent / "pyproject.toml").write_text("[tool.sglang-doctor]\nfail-on = 'never'\n")
    monkeypatch.chdir(tree)
    assert find_config() == tree.parent.parent / "pyproject.toml"
    assert run([CRASH]).exit_code == 0


def test_nearest_wins_and_yaml_before_pyproject_in_one_directory(tree, monkeypatch):
    (tree.parent.parent / ".sglang-doctor.yaml").write_text("fail-on: never\n")
    (tree.parent / "pyproject.toml").write_text("[tool.sglang-doctor]\nfail-on = 'info'\n")
    assert find_config(tree) == tree.parent / "pyproject.toml"
    (tree.parent / ".sglang-doctor.yaml").write_text("fail-on: warning\n")
    assert find_config(tree) == tree.parent / ".sglang-doctor.yaml"
    assert resolve_config(None, tree).fail_on == "warning"


def test_no_config_anywhere(tmp_path):
    assert resolve_config(None, tmp_path) == Config()


def test_explicit_config_file(tree, tmp_path, monkeypatch):
    (tree.parent.parent / ".sglang-doctor.yaml").write_text("fail-on: never\n")
    other = tmp_path / "ci.yaml"
    other.write_text("fail-on: info\nformat: json\n")
    monkeypatch.chdir(tree)
    assert run([CRASH]).exit_code == 0
    r = run(["--config", other, CRASH])
    assert r.exit_code == 1 and json.loads(r.stdout)["schema"] == "sglang-doctor/report/v1"
    toml = tmp_path / "settings.toml"
    toml.write_text("[tool.sglang-doctor]\nformat = 'markdown'\n")
    assert run(["--config", toml, CRASH]).stdout.startswith("## sglang-doctor")


def test_enable_is_an_allowlist_and_disable_takes_away(tree, monkeypatch):
    monkeypatch.chdir(tree)
    cfg = tree / ".sglang-doctor.yaml"
    cfg.write_text("format: json\nenable: [index-put-dtype-mismatch, SGD402]\n")
    assert sorted(_codes(run([CRASH]))) == ["SGD401", "SGD402"]
    cfg.write_text("format: json\nenable: [index-put-dtype-mismatch, SGD402]\ndisable: [SGD401]\n")
    r = run([CRASH])
    assert _codes(r) == ["SGD402"] and r.exit_code == 0


def test_severity_override_changes_the_exit_code(tree, monkeypatch):
    monkeypatch.chdir(tree)
    (tree / ".sglang-doctor.yaml").write_text("severity:\n  SGD401: warning\nformat: json\n")
    r = run([CRASH])
    data = json.loads(r.stdout)
    f = next(f for f in data["findings"] if f["code"] == "SGD401")
    assert f["severity"] == "warning" and r.exit_code == 0
    assert data["summary"]["error"] == 0
    # still the root cause: the generic "scheduler crashed" fallback stays hidden behind it
    assert all(f["severity"] != "error" for f in data["findings"])
    assert run(["--fail-on", "warning", CRASH]).exit_code == 1


def test_cli_options_override_the_config(tree, monkeypatch):
    monkeypatch.chdir(tree)
    (tree / ".sglang-doctor.yaml").write_text("format: json\nfail-on: never\n")
    r = run([CRASH])
    assert r.exit_code == 0 and r.stdout.lstrip().startswith("{")
    r = run(["--format", "text", "--fail-on", "error", CRASH])
    assert r.exit_code == 1 and "corrected command" in r.stdout
    # an option given on the command line wins even when it equals the default
    r = run(["--fail-on", "error", CRASH])
    assert r.exit_code == 1


_USER_RULE = """\
id: custom-boom
code: SGD998
title: A custom rule from the project's rule directory
severity: error
family: custom
match:
  any:
    - regex: "CUSTOM BOOM happened"
explanation: "The custom thing happened."
fix_none: "nothing to change"
docs:
  what: w
  why: y
  fix: f
"""


def test_rules_directories_relative_to_the_config_file(tree, monkeypatch):
    root = tree.parent.parent
    (root / "team-rules" / "custom").mkdir(parents=True)
    (root / "team-rules" / "custom" / "custom-boom.yaml").write_text(_USER_RULE)
    (root / "pyproject.toml").write_text("[tool.sglang-doctor]\nrules = ['team-rules']\nformat = 'json'\n")
    (tree / "x.log").write_text("[2025-01-01 10:00:00] CUSTOM BOOM happened\n")
    monkeypatch.chdir(tree)
    r = run(["x.log"])
    assert _codes(r) == ["SGD998"] and r.exit_code == 1


@pytest.mark.parametrize("body, key", [
    ("fail_on: never\n", "fail_on"),
    ("colour: red\n", "colour"),
    ("fail-on: fatal\n", "fail-on"),
    ("format: html\n", "format"),
    ("disable: SGD401\n", "disable"),
    ("enable: [1, 2]\n", "enable"),
    ("disable: [no-such-rule]\n", "disable"),
    ("severity: {SGD401: critical}\n", "severity.SGD401"),
    ("severity: [SGD401]\n", "severity"),
    ("severity: {nope: info}\n", "severity.nope"),
    ("rules: [does-not-exist]\n", "rules"),
    ("rules: team\n", "rules"),
])
def test_bad_yaml_config_is_a_one_line_exit_2(tree, monkeypatch, body, key):
    (tree / ".sglang-doctor.yaml").write_text(body)
    monkeypatch.chdir(tree)
    r = run([CRASH])
    assert r.exit_code == 2 and r.stdout == ""
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and ".sglang-doctor.yaml" in err and key in err


@pytest.mark.parametrize("body, needle", [
    ("[tool.sglang-doctor]\nfail_on = 'never'\n", "unknown key 'fail_on' (did you mean 'fail-on'?)"),
    ("[tool.sglang-doctor]\nformat = 3\n", "[tool.sglang-doctor] format: must be one of"),
    ("[tool.sglang-doctor\n", "invalid TOML"),
    ("[tool]\nsglang-doctor = 3\n", "must be a table"),
])
def test_bad_pyproject_is_a_one_line_exit_2(tree, monkeypatch, body, needle):
    (tree / "pyproject.toml").write_text(body)
    monkeypatch.chdir(tree)
    r = run(["--config", "pyproject.toml", CRASH])
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr


@pytest.mark.parametrize("body, line", [
    ("[project]\nname = 'x'\n\n[tool.sglang-doctor]\nfail-on = never\n", 5),  # a bare word is no TOML value
    ("[tool.sglang-doctor\ndisable = ['SGD402']\n", 1),
])
def test_a_pyproject_with_our_table_and_a_toml_error_is_exit_2_naming_file_and_line(tree, monkeypatch, body, line):
    """Found walking up (no --config): never skipped silently as if it had no table."""
    (tree.parent / "pyproject.toml").write_text(body)
    monkeypatch.chdir(tree)
    r = run([CRASH])
    assert r.exit_code == 2 and r.stdout == ""
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and f"pyproject.toml:{line}: invalid TOML" in err, err


@pytest.mark.parametrize("body, ours", [
    ("[project.scripts]\nsglang-doctor = 'sglang_doctor.cli.entry:main'\n", False),  # this tool's own project
    ("[tool]\nsglang-doctor = { fail-on = 'never' }\n", True),
    ("[tool]\n'sglang-doctor'.fail-on = 'never'\n", True),
    ("tool.sglang-doctor.fail-on = 'never'\n", True),
])
def test_a_pyproject_is_parsed_only_when_it_may_hold_our_table(tree, monkeypatch, body, ours):
    """Each run looks for a config from the cwd up: a pyproject.toml that cannot hold the table is
    skipped without importing and running the TOML parser (~2 ms of a cold start)."""
    import sglang_doctor.policy.config as config

    real = config._toml
    parsed = []
    monkeypatch.setattr(config, "_toml", lambda: parsed.append(1) or real())
    (tree / "pyproject.toml").write_text(body)
    assert (find_config(tree) == tree / "pyproject.toml") is ours
    assert bool(parsed) is ours
    if ours:
        assert resolve_config(None, tree).fail_on == "never"


def test_a_broken_pyproject_of_another_tool_is_not_ours(tree, monkeypatch):
    (tree / "pyproject.toml").write_text("[project\nname = 'x'\n")
    monkeypatch.chdir(tree)
    assert run([CRASH]).exit_code == 1  # the report, as without any config


def test_explicit_config_problems(tmp_path):
    r = run(["--config", tmp_path / "none.yaml", "x.log"])
    assert r.exit_code == 2 and "config file not found" in r.stderr
    p = tmp_path / "pyproject.toml"
    p.write_text("[project]\nname = 'x'\n")
    r = run(["--config", p, "x.log"])
    assert r.exit_code == 2 and "no [tool.sglang-doctor] table" in r.stderr
    y = tmp_path / "bad.yaml"
    y.write_text("disable: [a\n")
    r = run(["--config", y, "x.log"])
    assert r.exit_code == 2 and "invalid YAML" in r.stderr
    y.write_text("- just\n- a list\n")
    assert run(["--config", y, "x.log"]).exit_code == 2


def test_empty_yaml_is_an_empty_config(tmp_path):
    p = tmp_path / ".sglang-doctor.yaml"
    p.write_text("# nothing yet\n")
    assert load_config(p).fail_on is None


def test_apply_to_rules_unit(rules):
    cfg = Config(path=Path("x.yaml"), enable=["SGD401", "compressed-tensors-unquantized-fallback"],
                 severity={"index-put-dtype-mismatch": "info"})
    kept, severity = apply_to_rules(cfg, rules)
    assert sorted(r.code for r in kept) == ["SGD401", "SGD402"]
    assert severity == {"index-put-dtype-mismatch": "info"}
    with pytest.raises(ConfigError, match="did you mean"):
        apply_to_rules(Config(path=Path("x.yaml"), disable=["SGD40l"]), rules)


def test_config_applies_to_demo_and_explain(tmp_path):
    (tmp_path / ".sglang-doctor.yaml").write_text("disable: [SGD401]\nformat: json\n")
    assert "SGD401" not in _codes(run(["demo"]))
    r = run(["explain", "RuntimeError: Index put requires the source and destination dtypes match, "
             "got BFloat16 for the destination and Half for the source."])
    # the disabled rule is gone; the pasted error is still a failure (the crash net quotes it)
    assert "SGD401" not in _codes(r) and _codes(r) == ["SGD739"]
