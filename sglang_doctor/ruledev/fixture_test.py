"""`sglang-doctor rules test`: every rule against its own fixtures.

A `fires-*.log` must make its rule fire (after conditions); a `quiet-*.log` must not.
Fixtures are analyzed with the whole rule set, as a real run would.

A fires fixture may carry what the finding must say beside it, in `<fixture>.expect.yaml`:

    severity: error                     # the finding's severity
    captures: {tp_size: "4"}            # these captures, with these values
    fixes:                              # the finding's first fixes, in this order; each
      - {flag: --tp-size, action: lower, value: "2"}   # names only the fields it checks

so a value the rule computes from the log's numbers is checked, not only that it fired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sglang_doctor.pipeline.run import diagnose
from sglang_doctor.model import Finding, to_json
from sglang_doctor.engine.rules import Rule

EXPECT_KEYS = {"severity", "captures", "fixes"}
FIX_KEYS = {"kind", "flag", "name", "action", "from", "value", "text", "replaces"}


def expect_path(fixture: Path) -> Path:
    return fixture.with_name(fixture.stem + ".expect.yaml")


def run_fixture_tests(rules: list[Rule], only_dirs: tuple[str, ...] | None = None) -> tuple[list[str], int]:
    failures: list[str] = []
    checked = 0
    roots = [Path(d).resolve() for d in only_dirs] if only_dirs else None
    for rule in rules:
        if roots and not any(Path(rule.path or "").resolve().is_relative_to(r) for r in roots):
            continue
        fires, quiet = rule.fixtures()
        if not fires:
            failures.append(f"{rule.id}: no fires-*.log fixture in {rule.fixture_dir}")
        if not quiet:
            failures.append(f"{rule.id}: no quiet-*.log fixture in {rule.fixture_dir}")
        for path in fires + quiet:
            checked += 1
            findings = diagnose([str(path)], rules).report.findings
            failures += [f"{rule.id}: {path.name}: {p}" for p in check_fixture(rule, path, findings)]
    return failures, checked


def check_fixture(rule: Rule, path: Path, findings: list[Finding]) -> list[str]:
    """What is wrong with `rule` on one of its fixtures, given the findings of the whole rule set on it
    ([]: it passes)."""
    found = next((f for f in findings if f.rule == rule.id), None)
    want = path.name.startswith("fires")
    if (found is not None) != want:
        return [f"expected the rule {'to fire' if want else 'to stay quiet'}"]
    if found is not None and expect_path(path).is_file():
        return check_expectations(found, expect_path(path))
    return []


def check_expectations(finding: Finding, path: Path) -> list[str]:
    """What differs between the finding and `path` (an .expect.yaml); [] when it all holds."""
    from sglang_doctor.read.safe_yaml import YamlError, load_yaml

    try:
        want = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, YamlError) as e:
        return [f"{path.name}: cannot read: {e}"]
    if not isinstance(want, dict) or set(want) - EXPECT_KEYS:
        return [f"{path.name}: a mapping with only {', '.join(sorted(EXPECT_KEYS))}"]
    got = to_json(finding)
    problems: list[str] = []
    if "severity" in want and got["severity"] != want["severity"]:
        problems.append(f"severity {got['severity']}, expected {want['severity']}")
    for key, value in (want.get("captures") or {}).items():
        if got["captures"].get(key) != str(value):
            problems.append(f"capture {key}={got['captures'].get(key)!r}, expected {str(value)!r}")
    fixes: list[Any] = want.get("fixes") or []
    for i, expected in enumerate(fixes):
        if not isinstance(expected, dict) or set(expected) - FIX_KEYS:
            problems.append(f"{path.name}: fixes[{i}] is a mapping of {', '.join(sorted(FIX_KEYS))}")
            continue
        actual = got["fixes"][i] if i < len(got["fixes"]) else {}
        diff = {k: actual.get(k) for k, v in expected.items() if actual.get(k) != str(v)}
        if diff:
            problems.append(f"fix {i + 1} has {diff}, expected {expected}")
    return problems
