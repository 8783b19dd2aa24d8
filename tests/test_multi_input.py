"""Logs of one deployment read together (one per node): the crash on one node is the root
cause, the other node's NCCL timeout and shutdown are its consequences."""

from __future__ import annotations

import json
import re

import pytest

from helpers_cli import cache_builtin_rules, run
from sglang_doctor.engine.attribution import attribute
from sglang_doctor.pipeline.run import Options, diagnose
from sglang_doctor.model import Evidence, Finding

ROOT = "index-put-dtype-mismatch"
NODE1_CONSEQUENCES = {"nccl-collective-timeout", "scheduler-died", "child-failed-sigquit"}


def node0_log(demo_dir) -> str:
    """TP0 crashes with a real error at 09:14:33 (the bundled demo log, rank-tagged)."""
    text = (demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_text(encoding="utf-8")
    return re.sub(r"^\[(2026-05-02 [\d:]+)\] ", r"[\1 TP0] ", text, flags=re.M)


def node1_log(hang_until: str = "09:24", padding: int = 0) -> str:
    """TP1 waits in an all-reduce until the NCCL watchdog aborts it (its C++ line has no
    SGLang header), then the launcher notices (exit code -6) and shuts down."""
    lines = [
        "[2026-05-02 09:14:10 TP1] Init torch distributed begin.",
        "[2026-05-02 09:14:11 TP1] Init torch distributed ends. elapsed=0.62 s, mem usage=0.09 GB",
        "[2026-05-02 09:14:25 TP1] Load weight end. elapsed=13.30 s, type=Qwen3_5ForConditionalGeneration, "
        "avail mem=4.16 GB, mem usage=19.05 GB.",
    ]
    lines += [f"[2026-05-02 09:14:{26 + i % 7:02d} TP1] Prefill batch, #new-seq: 1, #new-token: {i}, "
              f"#cached-token: 0, #running-req: 0, #queue-req: 0" for i in range(padding)]
    day = "0502"
    lines += [
        f"[rank1]:[E{day} {hang_until}:33.512345678 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=57, OpType=ALLREDUCE, NumelIn=5120, NumelOut=5120, Timeout(ms)=600000) "
        "ran for 600012 milliseconds before timing out.",
        f"[2026-05-02 {hang_until}:34] Subprocess scheduler_1 (pid=231) crashed with exit code -6. "
        "Triggering SIGQUIT for cleanup...",
        f"[2026-05-02 {hang_until}:34] Received sigquit from a child process. It usually means the child failed.",
    ]
    return "\n".join(lines) + "\n"


def diagnose_texts(rules, texts: dict[str, str]):
    return diagnose(list(texts), rules, Options(), texts=texts).report


def by_input(report, index: int) -> list[Finding]:
    return [f for f in report.findings if f.evidence and f.evidence[0].input == index]


def assert_attributed(report, root_input: int, other_input: int, root_name: str) -> None:
    first = report.findings[0]
    assert first.rule == ROOT and first.severity == "error" and first.evidence[0].input == root_input
    others = by_input(report, other_input)
    assert {f.rule for f in others} == NODE1_CONSEQUENCES
    for f in others:
        assert f.consequence_of == ROOT
        assert f.severity == "info"
        assert f"{root_name} line 34" in f.explanation and "on TP0" in f.explanation
    assert report.summary["error"] == 1


def test_each_node_alone_blames_nothing_else(rules, demo_dir):
    alone = diagnose_texts(rules, {"node1.log": node1_log()})
    # Only symptoms here: the most telling one stays the error, the others follow from it.
    errors = [f for f in alone.findings if f.severity == "error"]
    assert [f.rule for f in errors] == ["nccl-collective-timeout"]
    others = {f.rule for f in alone.findings if f.consequence_of == "nccl-collective-timeout"}
    assert others == NODE1_CONSEQUENCES - {"nccl-collective-timeout"}


def test_crash_on_tp0_is_the_root_of_tp1s_nccl_timeout(rules, demo_dir):
    rep = diagnose_texts(rules, {"node0.log": node0_log(demo_dir), "node1.log": node1_log()})
    assert_attributed(rep, root_input=0, other_input=1, root_name="node0.log")
    # Evidence carries the time of its line: the SGLang header, or the C++ log line's own time.
    assert rep.findings[0].evidence[0].ts == "2026-05-02T09:14:33"
    timeout = next(f for f in rep.findings if f.rule == "nccl-collective-timeout")
    assert timeout.evidence[0].ts == "2026-05-02T09:24:33"
    # The consequences are listed after the root cause, in the order they were logged.
    order = [f.rule for f in by_input(rep, 1)]
    assert order == ["nccl-collective-timeout", "scheduler-died", "child-failed-sigquit"]
    # The watchdog's "raise --dist-timeout" is not applied to the command: the timeout was a symptom.
    assert rep.corrected_command and "--dist-timeout" not in rep.corrected_command
    assert "--dtype bfloat16" in rep.corrected_command


def test_input_order_does_not_matter(rules, demo_dir):
    rep = diagnose_texts(rules, {"node1.log": node1_log(), "node0.log": node0_log(demo_dir)})
    assert_attributed(rep, root_input=1, other_input=0, root_name="node0.log")


def test_a_timeout_logged_before_the_crash_is_not_its_consequence(rules, demo_dir):
    # TP1 gave up at 09:04, ten minutes before TP0's error: TP0's crash cannot explain it.
    rep = diagnose_texts(rules, {"node1.log": node1_log(hang_until="09:04"), "node0.log": node0_log(demo_dir)})
    assert rep.findings[0].rule == ROOT  # still the earliest error that is not a consequence
    for f in by_input(rep, 0):  # TP1's symptoms: the lead one stays an error, none blames TP0
        assert f.consequence_of in (None, "nccl-collective-timeout")
        assert (f.severity == "error") == (f.rule == "nccl-collective-timeout")
    assert rep.summary["error"] == 2


def test_long_logs_take_the_fast_path_and_agree(rules, demo_dir, tmp_path):
    # > 256 KB: only the scanner's hit lines are decoded; the times must be the same.
    (tmp_path / "node0.log").write_text(node0_log(demo_dir), encoding="utf-8")
    (tmp_path / "node1.log").write_text(node1_log(padding=4000), encoding="utf-8")
    assert (tmp_path / "node1.log").stat().st_size > 256 * 1024
    names = [str(tmp_path / "node1.log"), str(tmp_path / "node0.log")]
    rep = diagnose(names, rules, Options()).report
    assert_attributed(rep, root_input=1, other_input=0, root_name=names[1])


def test_without_timestamps_each_input_keeps_its_own_order(rules):
    texts = {
        "a.log": "RuntimeError: Index put requires the source and destination dtypes match, got BFloat16 for "
                 "the destination and Half for the source.\n",
        "b.log": "Received sigquit from a child process. It usually means the child failed.\n",
    }
    rep = diagnose_texts(rules, texts)
    assert [f.evidence[0].input for f in rep.findings] == sorted(f.evidence[0].input for f in rep.findings)
    sigquit = next(f for f in rep.findings if f.rule == "child-failed-sigquit")
    assert sigquit.consequence_of is None and sigquit.severity == "error"


def _f(rule: str, severity: str, input_: int, line: int, ts: str | None) -> Finding:
    return Finding(rule=rule, code="SGD000", severity=severity, title=rule, explanation="",
                   evidence=[Evidence(input=input_, line=line, text="x", ts=ts)])


def test_merged_order_is_by_time_within_a_severity(rules):
    findings = [
        _f("kv-pool-smaller-than-context", "warning", 0, 50, "2026-05-02T10:00:09"),
        _f("compressed-tensors-unquantized-fallback", "info", 0, 7, "2026-05-02T10:00:01"),
        _f("kv-pool-smaller-than-context", "warning", 1, 3, "2026-05-02T10:00:02"),
        _f("cuda-out-of-memory", "error", 1, 90, "2026-05-02T10:00:30"),
    ]
    out = attribute(findings, rules, ["a.log", "b.log"])
    assert [(f.severity, f.evidence[0].input) for f in out] == [
        ("error", 1), ("warning", 1), ("warning", 0), ("info", 0)]


def test_text_report_names_each_file_and_json_has_the_times(tmp_path, monkeypatch, demo_dir):
    cache_builtin_rules(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "node0.log").write_text(node0_log(demo_dir), encoding="utf-8")
    (tmp_path / "node1.log").write_text(node1_log(), encoding="utf-8")
    r = run(["node1.log", "node0.log", "--no-color"])
    assert r.exit_code == 1
    findings = [ln for ln in r.stdout.splitlines() if re.match(r"^(error|warning|info) SGD", ln)]
    assert findings[0].startswith("error SGD401")
    assert "node0.log:34 │" in r.stdout
    # node1's consequences are one line each under the root cause on node0
    assert re.search(r"^  then: SGD\d+ [\w-]+ \(node1\.log:5\)$", r.stdout, re.M), r.stdout
    r = run(["node1.log", "node0.log", "--format", "json"])
    data = json.loads(r.stdout)
    assert [i["name"] for i in data["inputs"]] == ["node1.log", "node0.log"]
    first = data["findings"][0]
    assert first["rule"] == ROOT and first["evidence"][0] == {
        "input": 1, "line": 34, "ts": "2026-05-02T09:14:33", "rank": "TP0",
        "text": first["evidence"][0]["text"]}
    assert all(f["consequence_of"] == ROOT for f in data["findings"] if f["evidence"][0]["input"] == 0)


@pytest.mark.parametrize("before,text,expected", [
    ("2026-05-02 09:14:00", "[rank1]:[E0502 09:24:33.512345678 ProcessGroupNCCL.cpp:629] x", "2026-05-02 09:24:33"),
    ("2025-12-31T23:59:59", "E0101 00:00:01.5 123 pair.cc:12] x", "2026-01-01 00:00:01"),
    (None, "[rank1]:[E0502 09:24:33.5 ProcessGroupNCCL.cpp:629] x", None),
    ("2026-05-02 09:14:00", "Received sigquit from a child process.", None),
])
def test_pytorch_cpp_log_time(before, text, expected):
    from sglang_doctor.read.records import glog_time

    assert glog_time(text, before) == expected


def test_header_less_line_gets_the_time_of_the_header_before_it_on_both_paths(rules, tmp_path):
    # gloo's message has no SGLang header and no time of its own; the scanner skips the decode
    # lines before it, yet it must get the same time as when every line is read.
    from datetime import datetime, timedelta

    start = datetime(2026, 5, 2, 9, 15)
    decode = [f"[{start + timedelta(seconds=i):%Y-%m-%d %H:%M:%S} TP1] Decode batch, #running-req: 1, #token: 100, "
              f"token usage: 0.01, cuda graph: True, gen throughput (token/s): 50.0, #queue-req: 0" for i in range(3000)]
    text = "\n".join(decode + ["[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
                               "[10.0.0.1]:1234", ""])
    path = tmp_path / "node1.log"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size > 256 * 1024
    times = {}
    for fast in (True, False):
        rep = diagnose([str(path)], rules, Options(fast=fast)).report
        gloo = next(f for f in rep.findings if f.rule == "gloo-connection-closed")
        times[fast] = gloo.evidence[0].ts
    assert times == {True: "2026-05-02T10:04:59", False: "2026-05-02T10:04:59"}
