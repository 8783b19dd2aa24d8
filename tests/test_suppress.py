"""Suppressions outside the logs (baseline file, with reasons and expiry) and inline
`# sglang-doctor: ignore …` lines; and --why."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil
from pathlib import Path

import pytest

from helpers_cli import isolate, run
from sglang_doctor.report import FORMATS
from sglang_doctor.policy.suppress import (BaselineError, fingerprint, inline_ignores, input_key, load_baseline,
                                    read_head)

DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"
CRASH = "qwen3.6-27b-awq-dtype-crash.log"
MFS = "qwen3.6-27b-mamba-mfs-0.80.log"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)


def _copy(tmp_path: Path, name: str = CRASH, to: str | None = None) -> Path:
    dst = tmp_path / (to or name)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEMO / name, dst)
    return dst


def _report(args) -> dict:
    r = run(["--format", "json", *args])
    return json.loads(r.stdout)


# --- fingerprint ---------------------------------------------------------------------


def test_fingerprint_ignores_numbers_spacing_and_redaction():
    a = fingerprint("[2026-05-02 09:14:33] RuntimeError: Not enough memory: 1234 MiB at 0x7f3a9c")
    b = fingerprint("[2027-01-09 23:59:01]  RuntimeError: Not enough memory: 99 MiB at 0xdeadbeef ")
    assert a == b
    assert fingerprint("RuntimeError: Not enough memory") != fingerprint("RuntimeError: Not enough disk")
    raw = "auth failed for --api-key sk-live-9f8e7d6c5b4a3210ZZyy on db.corp.internal"
    assert fingerprint(raw) == fingerprint("auth failed for --api-key <redacted> on <host>")


def test_input_key_is_the_file_name():
    assert input_key("/var/log/run1/launch.log") == "launch.log"
    assert input_key("C:\\logs\\launch.log") == "launch.log"
    assert input_key("<stdin>") == "<stdin>"


# --- baseline ----------------------------------------------------------------------------


def test_write_then_use_baseline(tmp_path):
    log = _copy(tmp_path)
    before = _report([log.name])
    assert before["summary"]["error"] == 1
    n = len(before["findings"])
    r = run(["--write-baseline", "base.json", log.name])
    assert r.exit_code == 0 and f"wrote {n} baseline entries to base.json" in r.stderr
    assert f"{n} suppressed" in r.stdout
    data = json.loads((tmp_path / "base.json").read_text())
    assert data["schema"] == "sglang-doctor/baseline/v1"
    keys = {(e["rule"], e["code"], e["input"]) for e in data["suppressions"]}
    assert keys == {(f["rule"], f["code"], log.name) for f in before["findings"]}
    assert all(len(e["fingerprint"]) == 16 for e in data["suppressions"])

    after = _report(["--baseline", "base.json", log.name])
    assert after["findings"] == [] and after["suppressed"] == n
    assert after["summary"] == {"error": 0, "warning": 0, "info": 0}
    for fmt in FORMATS:
        assert run(["--format", fmt, "--baseline", "base.json", log.name]).exit_code == 0
    text = run(["--baseline", "base.json", log.name]).stdout
    assert "no known problem found" in text and f"({n} suppressed)" in text


def test_baseline_survives_line_shifts_and_moves(tmp_path):
    log = _copy(tmp_path)
    n = len(_report([log.name])["findings"])
    run(["--write-baseline", "base.json", log.name])
    moved = tmp_path / "runs" / "2026-05-03" / CRASH
    moved.parent.mkdir(parents=True)
    moved.write_text("[2026-05-03 08:00:00] an extra line\n" * 7 + log.read_text())
    rep = _report(["--baseline", "base.json", moved])
    assert rep["findings"] == [] and rep["suppressed"] == n


def test_baseline_is_specific_to_the_message_and_the_file(tmp_path):
    log = _copy(tmp_path)
    run(["--write-baseline", "base.json", log.name])
    other_name = _copy(tmp_path, to="other.log")
    assert _report(["--baseline", "base.json", other_name.name])["summary"]["error"] == 1
    changed = tmp_path / "changed" / CRASH
    changed.parent.mkdir()
    changed.write_text(log.read_text().replace("got BFloat16 for the destination", "got Float for the destination"))
    rep = _report(["--baseline", "base.json", changed])
    assert [f["code"] for f in rep["findings"] if f["severity"] == "error"] == ["SGD401"]


def test_partial_baseline_only_hides_its_entries_and_recomputes_the_command(tmp_path):
    log = _copy(tmp_path)
    run(["--write-baseline", "base.json", log.name])
    data = json.loads((tmp_path / "base.json").read_text())
    data["suppressions"] = [e for e in data["suppressions"] if e["code"] == "SGD401"]
    (tmp_path / "base.json").write_text(json.dumps(data))
    full = _report([log.name])
    rep = _report(["--baseline", "base.json", log.name])
    assert "SGD401" not in [f["code"] for f in rep["findings"]] and rep["suppressed"] == 1
    assert "--dtype bfloat16" in full["corrected_command"]
    assert "--dtype bfloat16" not in (rep.get("corrected_command") or "")


def test_expired_entries_stop_suppressing_with_a_warning(tmp_path):
    log = _copy(tmp_path)
    run(["--write-baseline", "base.json", log.name])
    data = json.loads((tmp_path / "base.json").read_text())
    yesterday = (dt.date.today() - dt.timedelta(days=1)).isoformat()
    today = dt.date.today().isoformat()
    for e in data["suppressions"]:
        e["reason"] = "tracked in #42"
        e["expires"] = yesterday if e["code"] == "SGD401" else today
    (tmp_path / "base.json").write_text(json.dumps(data))
    r = run(["--format", "json", "--baseline", "base.json", log.name])
    rep = json.loads(r.stdout)
    assert [f["code"] for f in rep["findings"]] == ["SGD401"] and rep["suppressed"] == len(data["suppressions"]) - 1
    assert r.exit_code == 1
    assert f"expired on {yesterday}" in r.stderr and "SGD401" in r.stderr
    assert "SGD402" not in r.stderr  # expiring today still suppresses


def test_rewriting_keeps_reasons_and_expiry(tmp_path):
    log = _copy(tmp_path)
    run(["--write-baseline", "base.json", log.name])
    data = json.loads((tmp_path / "base.json").read_text())
    data["suppressions"][0]["reason"] = "known, fixed in the next image"
    data["suppressions"][0]["expires"] = "2099-12-31"
    (tmp_path / "base.json").write_text(json.dumps(data))
    run(["--write-baseline", "base.json", log.name])
    again = json.loads((tmp_path / "base.json").read_text())
    assert again["suppressions"][0]["reason"] == "known, fixed in the next image"
    assert again["suppressions"][0]["expires"] == "2099-12-31"
    assert len(again["suppressions"]) == len(data["suppressions"])


def test_default_baseline_in_the_current_directory(tmp_path):
    log = _copy(tmp_path)
    n = len(_report([log.name])["findings"])
    run(["--write-baseline", ".sglang-doctor-baseline.json", log.name])
    assert run([log.name]).exit_code == 0
    assert _report([log.name])["suppressed"] == n
    assert run(["--no-baseline", log.name]).exit_code == 1


@pytest.mark.parametrize("content, needle", [
    ("{not json", "invalid JSON"),
    ('{"suppressions": {}}', "'suppressions' list"),
    ('{"suppressions": [{"rule": "x", "input": "a.log"}]}', "suppressions[1]: missing or empty 'fingerprint'"),
    ('{"suppressions": [{"rule": "x", "input": "a.log", "fingerprint": "f", "expires": "next week"}]}',
     "not an ISO date"),
    ('{"suppressions": [{"rule": "x", "input": "a.log", "fingerprint": "f", "reason": 3}]}', "reason must be"),
])
def test_bad_baseline_is_exit_2(tmp_path, content, needle):
    log = _copy(tmp_path)
    (tmp_path / "b.json").write_text(content)
    r = run(["--baseline", "b.json", log.name])
    assert r.exit_code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    with pytest.raises(BaselineError):
        load_baseline(tmp_path / "b.json")


def test_missing_baseline_given_explicitly_is_exit_2(tmp_path):
    r = run(["--baseline", "nope.json", _copy(tmp_path).name])
    assert r.exit_code == 2 and "baseline file not found" in r.stderr


# --- inline -------------------------------------------------------------------------------


def _with_header(tmp_path: Path, header: str, name: str = CRASH, at: int = 1) -> Path:
    lines = (DEMO / name).read_text().splitlines()
    lines.insert(at - 1, header)
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_inline_ignore_by_code_and_id(tmp_path):
    codes = [f["code"] for f in _report([_copy(tmp_path).name])["findings"]]
    log = _with_header(tmp_path, "# sglang-doctor: ignore SGD402, index-put-dtype-mismatch", at=2)
    rep = _report([log.name])
    assert [f["code"] for f in rep["findings"]] == [c for c in codes if c not in ("SGD401", "SGD402")]
    assert rep["suppressed"] == 2


def test_inline_ignore_all_and_exit_code(tmp_path):
    log = _with_header(tmp_path, "2026-05-02T09:14:03.123456789Z # sglang-doctor: ignore-all", at=5)
    n = len(_report([_copy(tmp_path, to="plain.log").name])["findings"])
    for fmt in FORMATS:
        assert run(["--format", fmt, log.name]).exit_code == 0
    assert _report([log.name])["suppressed"] == n


def test_inline_only_in_the_first_20_lines(tmp_path):
    log = _with_header(tmp_path, "# sglang-doctor: ignore-all", at=21)
    assert run([log.name]).exit_code == 1
    log = _with_header(tmp_path, "# sglang-doctor: ignore-all", at=20)
    assert run([log.name]).exit_code == 0


def test_inline_in_a_gzip_log_and_only_for_that_log(tmp_path):
    plain = _with_header(tmp_path, "# sglang-doctor: ignore SGD401")
    gz = tmp_path / "rank0.log.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    other = _copy(tmp_path, to="rank1.log")
    rep = _report([gz.name, other.name])
    errors = [(f["code"], f["evidence"][0]["input"]) for f in rep["findings"] if f["severity"] == "error"]
    assert errors == [("SGD401", 1)] and rep["suppressed"] == 1


def test_inline_parsing():
    assert inline_ignores(["x", "# sglang-doctor: ignore SGD101,SGD102"]) == {"SGD101", "SGD102"}
    assert inline_ignores(["# sglang-doctor:ignore  SGD101 , cuda-out-of-memory"]) == {"SGD101", "cuda-out-of-memory"}
    assert inline_ignores(["# sglang-doctor: ignore-all"]) == {"*"}
    assert inline_ignores(["# sglang-doctor: nothing here", "sglang-doctor: ignore SGD1"]) is None
    assert read_head("-") == [] and read_head("<pasted>") == [] and read_head("/nonexistent/x.log") == []


def test_inline_and_baseline_together(tmp_path):
    n = len(_report([_copy(tmp_path, to="plain.log").name])["findings"])
    log = _with_header(tmp_path, "# sglang-doctor: ignore SGD402")
    r = run(["--write-baseline", "b.json", log.name])
    entries = json.loads((tmp_path / "b.json").read_text())["suppressions"]
    assert "SGD402" not in [e["code"] for e in entries] and len(entries) == n - 1
    assert _report(["--baseline", "b.json", log.name])["suppressed"] == n
    assert r.exit_code == 0


# --- --why --------------------------------------------------------------------------------


def test_why_explains_prefilter_matches_conditions_and_outcome(tmp_path):
    log = _with_header(tmp_path, "# sglang-doctor: ignore SGD402")
    r = run(["--why", log.name])
    out = r.stdout[r.stdout.index("why: "):]
    assert f"{log.name}:" in out
    assert "SGD401 index-put-dtype-mismatch (error): prefilter passed 1 record(s); 1 matched" in out
    assert "finding reported" in out
    assert "finding suppressed (inline)" in out
    assert "✓ expr tokens < ctx [tokens = 21482, ctx = 32768]" in out
    assert "not reached, no record holds their prefilter literal" in out and "SGD104" in out


def test_why_goes_to_stderr_for_machine_formats(tmp_path):
    log = _copy(tmp_path, "qwen3.6-27b-mamba-mfs-0.88.log")
    r = run(["--why", "--format", "json", log.name])
    json.loads(r.stdout)  # --why goes to stderr for machine formats
    assert "why: how each of the" in r.stderr and "prefilter passed" in r.stderr


def test_why_condition_failure_is_explained(tmp_path):
    rules_dir = tmp_path / "rules" / "custom"
    rules_dir.mkdir(parents=True)
    (rules_dir / "custom-cond.yaml").write_text("""\
id: custom-cond
code: SGD997
title: A custom rule with a condition on the tensor-parallel size
severity: error
family: custom
match:
  any:
    - regex: "Index put requires"
conditions:
  - fact: server_args.tp_size
    op: gt
    value: 1
explanation: "x"
fix_none: "nothing"
docs: {what: w, why: y, fix: f}
""")
    log = _copy(tmp_path)
    r = run(["--why", "--rules", tmp_path / "rules", log.name])
    out = r.stdout
    assert "SGD997 custom-cond (error): prefilter passed 1 record(s); 1 matched" in out
    assert "✗ server_args.tp_size gt 1 [server_args.tp_size = 1]" in out
    assert "a condition failed → no finding" in out


def test_why_lists_rules_the_config_disabled(tmp_path):
    (tmp_path / ".sglang-doctor.yaml").write_text("disable: [SGD402]\n")
    r = run(["--why", _copy(tmp_path).name])
    assert "not run (config enable/disable): compressed-tensors-unquantized-fallback" in r.stdout


def test_an_inline_ignore_naming_no_rule_is_a_warning(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("# sglang-doctor: ignore SGD12, SGD402, index-put-dtype-mismatchh\n" + (DEMO / CRASH).read_text())
    r = run(["--format", "json", log.name])
    warnings = [ln for ln in r.stderr.splitlines() if "warning:" in ln]
    assert len(warnings) == 2, r.stderr
    assert "ignore SGD12` names no rule id or code" in warnings[0]
    assert "did you mean index-put-dtype-mismatch?" in warnings[1]
    data = json.loads(r.stdout)
    assert "SGD402" not in [f["code"] for f in data["findings"]] and data["suppressed"] == 1  # the known one works
