"""`sglang-doctor rules test`: every rule against its own fixtures.

A `fires-*.log` must make its rule fire (after conditions); a `quiet-*.log` must not.
Fixtures are analyzed with the whole rule set, as a real run would.
"""

from __future__ import annotations

from pathlib import Path

from .doctor import diagnose
from .rules import Rule


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
            run = diagnose([str(path)], rules)
            fired = any(f.rule == rule.id for f in run.report.findings)
            want = path.name.startswith("fires")
            if fired != want:
                failures.append(f"{rule.id}: {path.name}: expected the rule {'to fire' if want else 'to stay quiet'}")
    return failures, checked
