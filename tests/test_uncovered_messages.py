"""tools/uncovered_messages.py: the catalog messages no rule recognises, as rule candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers_tools import load_tool

TOOL = load_tool("uncovered_messages")

# sglang srt/distributed/device_communicators/shm_broadcast.py MessageQueue.dequeue (every sampled release):
#   raise RuntimeError("Only readers can dequeue")
RULE = """id: reader-dequeue
code: SGD1999
title: A writer dequeued
severity: error
family: distributed
versions: "*"
sources:
  - "sglang srt/distributed/device_communicators/shm_broadcast.py"
match:
  any:
    - regex: '^RuntimeError: Only readers can dequeue'
explanation: A writer dequeued.
fix_none: a test rule
docs: {what: a crash, why: a bug, fix: report it}
"""


def test_lists_what_no_rule_recognises(capsys: pytest.CaptureFixture[str]) -> None:
    assert TOOL.main(["--json", "--top", "50", "--grep", "only readers can dequeue"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [c["template"] for c in found] == ["Only readers can dequeue"]
    assert found[0]["class"] == "RuntimeError" and found[0]["origin"]["file"].endswith("shm_broadcast.py")


def test_a_rule_recognising_a_message_covers_it(tmp_path: Path) -> None:
    cat = TOOL.messages.load()
    dequeue = {e.id for e in cat.entries if e.template == "Only readers can dequeue"}
    (tmp_path / "reader-dequeue.yaml").write_text(RULE)
    mine = [(rid, rx) for rid, rx in TOOL.rule_regexes([str(tmp_path)]) if rid == "reader-dequeue"]
    assert mine and dequeue <= set(TOOL.covered(cat, mine))
    # SGD130 pool-leak-detected: 'ValueError: (?P<pool>\\w+) memory leak detected!'
    leak = [(rid, rx) for rid, rx in TOOL.rule_regexes() if rid == "pool-leak-detected"]
    # (the raised ones: raise_error_or_warn also logs them as warnings when not strict, which SGD130 does not quote)
    leaks = {e.id for e in cat.entries if "memory leak detected!" in e.template and e.kind == "raise"}
    assert leaks and leaks <= set(TOOL.covered(cat, leak))
    assert not dequeue & set(TOOL.covered(cat, leak))
