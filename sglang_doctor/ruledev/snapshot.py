"""Whole-output snapshots: what a rule says on each of its fires fixtures, pinned beside it.

`fires-0.5.14.log` has `fires-0.5.14.snap.yaml`: the rule's finding on it (title, severity,
explanation, evidence, captures, fixes with `from`/`value`/`action`, the `fix:` lines the text
report prints) and, when the fixture carries a launch command, the corrected command. `rules test`
fails when the finding differs from its snapshot; `rules test --update` rewrites the snapshots, so
a changed explanation or value is a diff to review, not a silent change. Nothing in a snapshot
depends on where the fixture lies or which build of the tool wrote it.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from sglang_doctor.model import Finding, Report, to_json
from sglang_doctor.report.fixes import fix_lines

SUFFIX = ".snap.yaml"
MAX_DIFF_LINES = 24
_FIX_KEYS = ("kind", "flag", "name", "action", "from", "value", "replaces", "text")


def snapshot_path(fixture: Path) -> Path:
    return fixture.with_name(fixture.stem + SUFFIX)


def fixture_of(snapshot: Path) -> Path:
    return snapshot.with_name(snapshot.name[: -len(SUFFIX)] + ".log")


def snapshot_text(rule_id: str, fixture: Path, finding: Finding, report: Report) -> str:
    """The snapshot file's content for `finding` (the rule's finding on `fixture`) in `report`."""
    got = to_json(finding)
    data: dict[str, Any] = {
        "rule": finding.rule,
        "code": finding.code,
        "severity": finding.severity,
        "title": finding.title,
    }
    if finding.consequence_of:
        data["consequence_of"] = finding.consequence_of
    data["explanation"] = finding.explanation
    data["evidence"] = [f"{ev['line']}: {ev['text']}" for ev in got["evidence"]]
    if got["captures"]:
        data["captures"] = dict(sorted(got["captures"].items()))
    data["fixes"] = [{k: fx[k] for k in _FIX_KEYS if fx.get(k) is not None} for fx in got["fixes"]]
    data["shown"] = fix_lines(finding.fixes)
    command = report.context.get("command")
    if command and report.corrected_command:
        data["command"] = command
        data["corrected_command"] = report.corrected_command
    head = (f"# `sglang-doctor rules test --update` writes this file: what {rule_id} says on {fixture.name}.\n"
            "# Review its diff like code: a changed value or explanation is a change of advice.\n")
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


def compare(path: Path, text: str) -> list[str]:
    """What differs between the stored snapshot at `path` and `text` ([] when equal)."""
    try:
        stored = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [f"no snapshot {path.name} (run `sglang-doctor rules test --update` and review it)"]
    except OSError as e:
        return [f"cannot read {path.name}: {e}"]
    if stored == text:
        return []
    diff = [ln for ln in difflib.unified_diff(stored.splitlines(), text.splitlines(), lineterm="", n=0)
            if not ln.startswith(("---", "+++", "@@"))]
    shown = diff[:MAX_DIFF_LINES] + ([f"… {len(diff) - MAX_DIFF_LINES} more"] if len(diff) > MAX_DIFF_LINES else [])
    return [f"differs from {path.name} (review, then `sglang-doctor rules test --update`):\n    "
            + "\n    ".join(shown)]


def write(path: Path, text: str) -> bool:
    """Store `text` as the snapshot; True when the file changed."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except OSError:
        pass
    path.write_text(text, encoding="utf-8")
    return True


def orphans(fixture_dir: Path | None) -> list[Path]:
    """Snapshots in a rule's fixture directory whose fires fixture is gone."""
    if fixture_dir is None or not fixture_dir.is_dir():
        return []
    return [p for p in sorted(fixture_dir.glob("*" + SUFFIX)) if not fixture_of(p).is_file()
            or not p.name.startswith("fires")]
