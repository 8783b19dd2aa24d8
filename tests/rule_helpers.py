"""A minimal valid user rule, and a helper writing rule files into a temporary rules directory."""

from __future__ import annotations

from pathlib import Path

GOOD = """id: my-rule
code: SGD1999
title: A user rule for a test
severity: warning
family: test
match:
  any:
    - regex: 'Something odd happened'
explanation: odd
fixes:
  - kind: flag
    flag: --disable-cuda-graph
    action: add
docs: {what: a, why: b, fix: c}
"""


def write_rule(tmp_path: Path, text: str, name: str = "my-rule") -> str:
    d = tmp_path / "rules" / "test"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.yaml").write_text(text)
    return str(tmp_path / "rules")
