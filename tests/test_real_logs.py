"""Unseen real failure logs (tests/data/real): each is diagnosed with an expected fix, root cause first.

The matching follows the shared evaluation (shared/eval/score.py), re-stated here because the product's
tests must not read from ../shared: an expected fix matches a finding's fix by kind, flag/env/package name
(aliases folded) and direction; 'evidence' is met by an error/warning finding citing a key line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from helpers_cli import run

REAL = Path(__file__).resolve().parent / "data" / "real"
CASES = yaml.safe_load((REAL / "cases.yaml").read_text())

ALIASES = {"--tp": "--tp-size", "--tensor-parallel-size": "--tp-size", "--dp": "--dp-size",
           "--data-parallel-size": "--dp-size", "--ep": "--ep-size", "--expert-parallel-size": "--ep-size",
           "--pp": "--pp-size", "--pipeline-parallel-size": "--pp-size", "--model": "--model-path",
           "--mem-frac": "--mem-fraction-static"}
DIRECTION = {"raise": "raise", "increase": "raise", "higher": "raise", "up": "raise", "lower": "lower",
             "decrease": "lower", "reduce": "lower", "down": "lower", "add": "add", "enable": "add",
             "remove": "remove", "disable": "remove", "set": "set"}


def parse_expected(item: str):
    s = str(item).strip()
    m = re.match(r"(package|system)\s+([\w.\-\[\]]+)\s*(?::\s*(\w+))?$", s)
    if m:
        return (m.group(1), m.group(2).lower(), DIRECTION.get((m.group(3) or "").lower()))
    if s.startswith("note"):
        return ("note", s, None)
    if s.startswith("env "):
        return ("env", s[4:].split("=")[0].split(":")[0].strip(), None)
    kind = "flag"
    if s.startswith("docker "):
        kind, s = "docker", s[len("docker "):].strip()
    m = re.match(r"(--?[\w-]+)\s*(?::\s*(\w+))?", s)
    if not m:
        return ("note", s, None)
    return (kind, ALIASES.get(m.group(1), m.group(1)), DIRECTION.get((m.group(2) or "").lower()))


def fix_keys(fix: dict):
    kind = fix.get("kind", "flag")
    action = DIRECTION.get(str(fix.get("action", "")).lower())
    if kind == "env":
        return ("env", str(fix.get("name", "")), action)
    if kind in ("flag", "docker"):
        flag = str(fix.get("flag", ""))
        return (kind, ALIASES.get(flag, flag), action)
    if kind in ("package", "system"):
        return (kind, str(fix.get("name", "")).lower(), action)
    return (kind, "", action)


def matches(expected, fix) -> bool:
    ek, ename, edir = expected
    fk, fname, fdir = fix
    if ename != fname:
        return False
    if ek == "docker" and fk not in ("docker", "flag"):
        return False
    if ek in ("flag", "env", "package", "system", "note") and fk != ek:
        return False
    if edir is None or edir == "set" or fdir is None:
        return True
    if edir in ("add", "remove") and fdir == "set":
        return True
    return edir == fdir


def diagnosed(case: dict, finding: dict) -> bool:
    expected = [parse_expected(x) for x in case.get("expected_fix", [])]
    if any(matches(e, fix_keys(fx)) for e in expected for fx in finding.get("fixes", [])):
        return True
    if "evidence" in case.get("expected_fix", []):
        keys = [k.strip() for k in case.get("key_lines", []) if k.strip()]
        return any(k in ev.get("text", "") for ev in finding.get("evidence", []) for k in keys)
    return False


def test_cases_are_unique_real_issue_threads():
    files = sorted(p.name for p in REAL.glob("*.log"))
    assert files == sorted(c["file"] for c in CASES)
    sources = [c["source"] for c in CASES]
    assert len(set(sources)) == len(sources)
    assert all(s.startswith("https://github.com/sgl-project/sglang/") for s in sources)


def case_problem(case: dict, findings: list[dict]) -> str | None:
    """Why the report's findings miss the case (None: diagnosed)."""
    serious = [f for f in findings if f["severity"] in ("error", "warning")]
    if not serious:
        return "no error or warning finding"
    if not any(diagnosed(case, f) for f in serious):
        return f"no finding carries {case['expected_fix']}: {[f['rule'] for f in serious]}"
    # As in the shared scoring: for 'evidence' cases (a peer failed first) citing the key line anywhere is
    # the diagnosis; otherwise the first error/warning finding must carry an expected fix.
    if "evidence" not in case.get("expected_fix", []) and not diagnosed(case, serious[0]):
        return f"root cause not first: {serious[0]['rule']} leads"
    return None


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_real_failure_is_diagnosed_root_cause_first(case):
    res = run(["--format", "json", "--no-baseline", REAL / case["file"]])
    assert res.exit_code in (0, 1), res.output
    problem = case_problem(case, json.loads(res.stdout)["findings"])
    assert problem is None, problem
