"""`rules lint --catalog`: a rule citing SGLang whose message text has a typo matches no catalog
template of its releases and is reported; `catalog_exempt` opts a rule out with a reason."""

from __future__ import annotations

from pathlib import Path

from sglang_doctor.engine.rules import load_rule_file
from sglang_doctor.ruledev.catalog_lint import catalog_problems

RULE = """id: {id}
code: SGD999
title: The scheduler crashed
severity: error
family: model
versions: 0.5.5-0.5.23
sources:
  - "{source}"
match:
  any:
    - regex: '{regex}'
{extra}explanation: The scheduler crashed.
fix_none: a test rule
docs: {{what: a crash, why: a bug, fix: report it}}
"""
# sglang srt/managers/scheduler.py et al.: logger.error(f"Scheduler hit an exception: {traceback}")
GOOD = "Scheduler hit an exception: "


def _rule(tmp_path: Path, regex: str, source: str = "sglang srt/managers/scheduler.py", extra: str = ""):
    path = tmp_path / "typo-rule.yaml"
    path.write_text(RULE.format(id="typo-rule", regex=regex, source=source, extra=extra))
    return load_rule_file(path)


def test_a_message_sglang_prints_passes(tmp_path: Path) -> None:
    assert catalog_problems(_rule(tmp_path, GOOD)) == []


def test_a_typo_is_reported(tmp_path: Path) -> None:
    assert catalog_problems(_rule(tmp_path, "Scheduler hit an excepton: "))


def test_rules_quoting_other_projects_or_exempt_are_not_checked(tmp_path: Path) -> None:
    assert catalog_problems(_rule(tmp_path, "Scheduler hit an excepton: ", source="pytorch c10/cuda")) == []
    exempt = "catalog_exempt: the message is formatted at run time\n"
    assert catalog_problems(_rule(tmp_path, "Scheduler hit an excepton: ", extra=exempt)) == []


def _rule_with(tmp_path: Path, regex: str, versions: str = "0.4.6-0.5.23", fires: str | None = None):
    """A test rule quoting SGLang with ``regex`` (single-quoted YAML), and a fires fixture when given."""
    text = RULE.format(id="typo-rule", regex=regex.replace("'", "''"), source="sglang srt/managers/scheduler.py",
                       extra="").replace("versions: 0.5.5-0.5.23", f"versions: {versions}")
    path = tmp_path / "typo-rule.yaml"
    path.write_text(text)
    if fires is not None:
        (tmp_path / "typo-rule").mkdir(exist_ok=True)
        (tmp_path / "typo-rule" / "fires-x.log").write_text(fires)
    return load_rule_file(path)


# sglang srt/managers/scheduler.py Scheduler.check_memory (0.4.6.post5-0.5.3.post3):
#   raise ValueError(f"req_to_token_pool memory leak detected!available_size={...}, total_size={...}")
def test_a_pattern_may_quote_the_exception_class_or_the_logger_prefix(tmp_path: Path) -> None:
    assert catalog_problems(_rule_with(tmp_path, r"^ValueError: (?P<pool>\w+) memory leak detected!")) == []
    # logger.error(f"Scheduler hit an exception: {traceback}") as SGLang's logger prints it
    assert catalog_problems(_rule_with(tmp_path, r"^\[[^\]]*TP\d+\] Scheduler hit an exception: ")) == []
    assert catalog_problems(_rule_with(tmp_path, r"^ValueError: (?P<pool>\w+) memory leek detected!"))


def test_a_trailing_field_may_hold_what_the_rule_wants(tmp_path: Path) -> None:
    # logger.error(f"Initialization failed. warmup error: {last_traceback}") (http_server.py)
    rx = r"Initialization failed\. warmup error: (?s:.*?)Read timed out"
    assert catalog_problems(_rule_with(tmp_path, rx)) == []
    assert catalog_problems(_rule_with(tmp_path, rx.replace("warmup", "warm-up")))


def test_a_frame_counts_when_it_names_the_function(tmp_path: Path) -> None:
    # Scheduler.check_memory raises the leak messages above (0.4.6.post5-0.5.3.post3)
    assert catalog_problems(_rule_with(tmp_path, r'scheduler\.py", line \d+, in check_memory\b')) == []
    assert catalog_problems(_rule_with(tmp_path, r'scheduler\.py", line \d+, in check_memroy\b'))
    # a file name alone names a kind of module, not a call site
    assert catalog_problems(_rule_with(tmp_path, r'managers/scheduler\.py", line \d+'))


# sglang srt/model_loader/weight_utils.py get_quant_config (0.4.0-0.5.3.post3): raise ValueError(
#   f"Unsupported quantization config found for {quantization} in {f}.")
# (The leak message above lives on: from 0.5.5 through raise_error_or_warn(..., message), a helper.)
def test_a_release_range_without_the_message_is_reported(tmp_path: Path) -> None:
    rx = r"Unsupported quantization config found for (?P<method>\w+) in "
    assert catalog_problems(_rule_with(tmp_path, rx, versions="0.5.0-0.5.3")) == []
    assert catalog_problems(_rule_with(tmp_path, rx, versions="0.5.20-0.5.23"))


# logger.warning(f"max_total_tokens={max_total_tokens} is larger than the profiled value "
#                f"{max_total_num_tokens}. Use the profiled value instead.") (model_runner.py 0.4.x)
PROFILED = r"max_total_tokens=(?P<requested>\d+) is larger than the profiled value (?P<profiled>-\d+)\."
PROFILED_LOG = ("[2025-05-01 10:00:00 TP0] max_total_tokens=200000 is larger than the profiled value -1024. "
                "Use the profiled value instead.\n")


def test_a_field_value_the_pattern_wants_is_read_from_the_fires_fixture(tmp_path: Path) -> None:
    # "1" in the field does not match `-\d+`: without a fixture the pattern looks wrong ...
    assert catalog_problems(_rule_with(tmp_path, PROFILED))
    # ... with one, the pattern's match on it is SGLang's message with a real value
    assert catalog_problems(_rule_with(tmp_path, PROFILED, fires=PROFILED_LOG)) == []
    typo_log = PROFILED_LOG.replace("profiled value -", "profiled valeu -")
    assert catalog_problems(_rule_with(tmp_path, PROFILED.replace("value", "valeu"), fires=typo_log))


def test_a_match_inside_a_wrappers_field_is_not_sglangs_message(tmp_path: Path) -> None:
    # 'Capture cuda graph failed: {e}' wraps PyTorch's text: matching that text is not quoting SGLang
    log = "Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream is capturing\n"
    assert catalog_problems(_rule_with(tmp_path, r"CUDA error: operation not permitted when stream is capturing",
                                       fires=log))


def test_rules_lint_runs_the_catalog_check_by_default(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sglang_doctor.cli.main import main

    _rule_with(tmp_path, r"^ValueError: (?P<pool>\w+) memory leek detected!")
    args = ["rules", "lint", "--rules", str(tmp_path), "--only-user"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1 and "typo-rule: no match.any pattern matches an SGLang message" in r.output
    assert CliRunner().invoke(main, args + ["--no-catalog"]).exit_code == 0
