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
