"""The text report reads at a glance: summary and root cause first, consequences folded under
their root cause, the same evidence on many ranks on one line, lines wrapped to the terminal,
and where to read more at the end."""

from __future__ import annotations

import io
import json

import pytest

from helpers_cli import DEMO_LOG, isolate, run
from sglang_doctor.model import Evidence, Finding, FixOut, Report
from sglang_doctor.report.text import _ranks, write


@pytest.fixture
def demo(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    log = tmp_path / DEMO_LOG.name
    log.write_text(DEMO_LOG.read_text())
    return log


def test_summary_and_root_cause_come_first(demo):
    out = run(["--no-color", demo.name]).stdout
    assert out.splitlines()[0] == ("1 error, 1 warning, 3 info — root cause: SGD401 Model runs in float16 but the "
                                   "hybrid conv-state cache is bfloat16")


def test_consequences_are_one_line_under_their_root_cause(demo):
    out = run(["--no-color", demo.name]).stdout
    blocks = out.split("\n\n")
    root = next(b for b in blocks if b.startswith("error SGD401"))
    assert root.splitlines()[-2:] == ["  then: SGD730 child-failed-sigquit (line 36)",
                                      "  then: SGD732 kill-process-tree-called (line 37)"]
    assert not any(b.startswith(("info SGD730", "info SGD732")) for b in blocks)
    codes = [f["code"] for f in json.loads(run(["--format", "json", demo.name]).stdout)["findings"]]
    assert {"SGD730", "SGD732"} <= set(codes)  # the JSON keeps every finding


def test_the_report_ends_with_where_to_read_more(demo):
    out = run(["--no-color", demo.name]).stdout
    assert out.rstrip().splitlines()[-1] == (
        "more: sglang-doctor rules show SGD401  ·  "
        "https://github.com/sglang-doctor/sglang-doctor/blob/main/docs/rules/SGD401-index-put-dtype-mismatch.md")


def _tp8(tmp_path):
    lines = ["[2026-05-02 09:14:03] server_args=ServerArgs(model_path='/m', tp_size=8)"]
    for r in range(8):
        lines += [f"[2026-05-02 09:14:3{r} TP{r}] Scheduler hit an exception: Traceback (most recent call last):",
                  '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2302, in '
                  "run_scheduler_process", "    scheduler.event_loop_overlap()",
                  "RuntimeError: CUDA error: an illegal memory access was encountered", ""]
    log = tmp_path / "tp8.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_the_same_evidence_on_every_rank_is_one_line(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    out = run(["--no-color", _tp8(tmp_path).name]).stdout
    ev = [ln for ln in out.splitlines() if "│" in ln]
    assert ev == ["  tp8.log:5 ×5 [TP0-TP4] │ RuntimeError: CUDA error: an illegal memory access"]
    assert "  … and 3 more" in out


@pytest.mark.parametrize("ranks, shown", [
    (["TP0", "TP1", "TP2", "TP3"], "TP0-TP3"), (["TP0", "TP1", "TP3"], "TP0-TP1, TP3"), (["TP5"], "TP5"),
    (["DP0 TP0", "DP0 TP1", "DP1 TP0"], "DP0 TP0-TP1, DP1 TP0"), (["TP0", "EP1"], "TP0, EP1"),
])
def test_rank_lists(ranks, shown):
    assert _ranks(ranks) == shown


def test_long_evidence_and_fix_lines_wrap_to_the_width():
    text = "RuntimeError: " + " ".join(f"word{i}" for i in range(25))  # (under the 220-character cut)
    f = Finding(rule="r", code="SGD1", severity="error", title="t", explanation="e " * 50,
                evidence=[Evidence(input=0, line=3, text=text)],
                fixes=[FixOut(kind="flag", flag="--mem-fraction-static", action="raise", from_="0.8", value="0.9",
                              text="because " * 20)])
    rep = Report(findings=[f])
    rep.inputs.append(__import__("sglang_doctor.model", fromlist=["InputInfo"]).InputInfo(name="x.log"))
    rep.count()
    buf = io.StringIO()
    write(rep, buf, color=False, width=60)
    body = [ln for ln in buf.getvalue().splitlines() if not ln.startswith(("more:", "1 error", "error SGD1"))]
    assert max(len(ln) for ln in body) <= 60, body
    assert sum("word" in ln for ln in body) >= 3  # the evidence went on over several lines, all kept
    assert " ".join(ln.strip() for ln in body if "word" in ln).endswith("word23 word24")


def test_evidence_from_the_given_command_is_never_line_0(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    log = tmp_path / "x.log"
    log.write_text("".join(DEMO_LOG.read_text().splitlines(keepends=True)[1:]))  # no `# cmd:` line
    cmd = "python3 -m sglang.launch_server --model-path x --enable-foo-bar --tp 2"
    for fmt in ("text", "junit", "markdown"):
        out = run(["--format", fmt, "--no-color", "--cmd", cmd, log.name]).stdout
        assert "--enable-foo-bar" in out and ":0 " not in out and "line 0" not in out, (fmt, out)
    text = run(["--no-color", "--cmd", cmd, log.name]).stdout
    assert "  --cmd │ --enable-foo-bar\n" in text  # the flag itself: its own evidence (issue 16)
    sarif = json.loads(run(["--format", "sarif", "--cmd", cmd, log.name]).stdout)
    regions = [loc["physicalLocation"].get("region") for r in sarif["runs"][0]["results"] for loc in r["locations"]]
    assert all(r is None or r["startLine"] >= 1 for r in regions) and None in regions


def test_the_same_text_is_quoted_once_in_every_human_format(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    line = "RuntimeError: CUDA error: an illegal memory access was encountered"
    log = tmp_path / "x.log"
    log.write_text("".join(f"[2026-05-02 09:14:3{i}] {line}\n" for i in range(3)))
    for fmt, quote in (("text", "│ RuntimeError"), ("junit", "| RuntimeError"), ("markdown", ": RuntimeError")):
        out = run(["--format", fmt, "--no-color", log.name]).stdout
        assert out.count(quote) == 1, (fmt, out)
    assert "x.log:1 ×3 │" in run(["--no-color", log.name]).stdout
    assert len(json.loads(run(["--format", "json", log.name]).stdout)["findings"][0]["evidence"]) == 3  # JSON: each
