"""Healthy logs: no error finding, and no warning beyond the ones documented in tests/data/healthy/index.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers_cli import run

HEALTHY = Path(__file__).resolve().parent / "data" / "healthy"
INDEX = yaml.safe_load((HEALTHY / "index.yaml").read_text())


_REPORTS: dict[str, dict] = {}


def _report(path: Path) -> dict:
    if path.name not in _REPORTS:
        res = run(["--format", "json", "--no-baseline", path])
        assert res.exit_code in (0, 1), res.output
        _REPORTS[path.name] = json.loads(res.stdout)
    return _REPORTS[path.name]


def test_index_lists_every_file():
    listed = {c["file"] for c in INDEX}
    present = {p.name for p in HEALTHY.iterdir() if p.name != "index.yaml"}
    assert listed == present
    assert len([c for c in INDEX if not c["file"].startswith("real-")]) >= 8


@pytest.mark.parametrize("case", INDEX, ids=[c["file"] for c in INDEX])
def test_healthy_log_has_no_error_and_only_expected_warnings(case):
    report = _report(HEALTHY / case["file"])
    findings = report["findings"]
    errors = [f["rule"] for f in findings if f["severity"] == "error"]
    assert not errors, f"false alarm on a healthy log: {errors}"
    warnings = {f["rule"] for f in findings if f["severity"] == "warning"}
    expected = set(case.get("expected_warnings") or {})
    assert warnings == expected, f"warnings {sorted(warnings)} != documented {sorted(expected)}"


@pytest.mark.parametrize("case", [c for c in INDEX if not c["file"].startswith("real-") and "excerpt" not in c["file"]],
                         ids=lambda c: c["file"])
def test_healthy_startup_facts_are_read(case):
    report = _report(HEALTHY / case["file"])
    ctx = report["context"]
    assert ctx.get("sglang_version"), "release not recognised"
    assert report.get("startup"), "no startup summary"
