"""`sglang-doctor rules test`: every rule against its own fixtures.

A `fires-*.log` must make its rule fire (after conditions); a `quiet-*.log` must not.
Fixtures are analyzed with the whole rule set, as a real run would.

A fires fixture may carry what the finding must say beside it, in `<fixture>.expect.yaml`:

    severity: error                     # the finding's severity
    captures: {tp_size: "4"}            # these captures, with these values
    fixes:                              # the finding's first fixes, in this order; each
      - {flag: --tp-size, action: lower, value: "2"}   # names only the fields it checks
    explains: ["= 1.61 GB"]             # phrases the explanation must contain

so a value the rule computes from the log's numbers is checked, not only that it fired.

The finding's fixes must also make sense whatever the rule (advice.py: a raise raises, the printed
verb is the action's). Every fires fixture also has a whole-output snapshot beside it (`<fixture>.snap.yaml`, see
snapshot.py): the finding must equal it, and `rules test --update` rewrites it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sglang_doctor.engine.rules import Rule
from sglang_doctor.model import Finding, Report, to_json
from sglang_doctor.pipeline.run import diagnose
from sglang_doctor.ruledev import advice, snapshot

EXPECT_KEYS = {"severity", "captures", "fixes", "explains"}
FIX_KEYS = {"kind", "flag", "name", "action", "from", "value", "text", "replaces", "combined"}


def expect_path(fixture: Path) -> Path:
    return fixture.with_name(fixture.stem + ".expect.yaml")


@dataclass
class FixtureRun:
    """The outcome of running the rules on their fixtures."""

    failures: list[str] = field(default_factory=list)
    checked: int = 0
    updated: list[Path] = field(default_factory=list)  # snapshots --update wrote or removed


def run_fixture_tests(rules: list[Rule], only_dirs: tuple[str, ...] | None = None,
                      update: bool = False) -> FixtureRun:
    """Every rule (of `only_dirs`, when given) on its fixtures; `update` rewrites the snapshots."""
    out = FixtureRun()
    roots = [Path(d).resolve() for d in only_dirs] if only_dirs else None
    for rule in rules:
        if roots and not any(Path(rule.path or "").resolve().is_relative_to(r) for r in roots):
            continue
        fires, quiet = rule.fixtures()
        if not fires:
            out.failures.append(f"{rule.id}: no fires-*.log fixture in {rule.fixture_dir}")
        if not quiet:
            out.failures.append(f"{rule.id}: no quiet-*.log fixture in {rule.fixture_dir}")
        for path in fires + quiet:
            out.checked += 1
            report = diagnose([str(path)], rules).report
            problems = check_fixture(rule, path, report, update=update)
            out.failures += [f"{rule.id}: {path.name}: {p}" for p in problems]
            snap = snapshot.snapshot_path(path)
            if update and not problems and path.name.startswith("fires"):
                finding = next(f for f in report.findings if f.rule == rule.id)
                if snapshot.write(snap, snapshot.snapshot_text(rule.id, path, finding, report)):
                    out.updated.append(snap)
        for orphan in snapshot.orphans(rule.fixture_dir):
            if update:
                orphan.unlink()
                out.updated.append(orphan)
            else:
                out.failures.append(f"{rule.id}: {orphan.name}: a snapshot without its fires fixture "
                                    "(`sglang-doctor rules test --update` removes it)")
    return out


def check_fixture(rule: Rule, path: Path, report: Report, update: bool = False) -> list[str]:
    """What is wrong with `rule` on one of its fixtures, given the report of the whole rule set on it
    ([]: it passes). The snapshot is compared unless `update` (which rewrites it instead)."""
    found = next((f for f in report.findings if f.rule == rule.id), None)
    want = path.name.startswith("fires")
    if (found is not None) != want:
        return [f"expected the rule {'to fire' if want else 'to stay quiet'}"]
    if found is None:
        return []
    problems = check_expectations(found, expect_path(path)) if expect_path(path).is_file() else []
    problems += advice.report_problems(report, only_rule=rule.id)
    if not update:
        problems += snapshot.compare(snapshot.snapshot_path(path),
                                     snapshot.snapshot_text(rule.id, path, found, report))
    return problems


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
        diff = {k: actual.get(k) for k, v in expected.items() if str(actual.get(k)) != str(v)}
        if diff:
            problems.append(f"fix {i + 1} has {diff}, expected {expected}")
    for phrase in want.get("explains") or []:
        if str(phrase) not in got["explanation"]:
            problems.append(f"explanation lacks {str(phrase)!r}")
    return problems
