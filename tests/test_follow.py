"""--follow on a growing file and on a pipe: findings appear within 0.5 s of their last line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "sglang-doctor"
pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX signals")

HEAD = """[2026-05-02 09:14:12] Load weight begin. avail mem=23.21 GB
[2026-05-02 09:14:25] Load weight end. elapsed=13.30 s, type=Qwen3_5ForConditionalGeneration, quant=compressed-tensors, avail mem=4.16 GB, mem usage=19.05 GB.
[2026-05-02 09:14:25] KV Cache is allocated. dtype: torch.float16, #tokens: 21482, K size: 0.66 GB, V size: 0.66 GB
"""
CRASH = """[2026-05-02 09:14:33] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/linear/gdn_backend.py", line 438, in forward_extend
    conv_states[forward_metadata.conv_states_mask_indices] = mixed_qkv_to_track
RuntimeError: Index put requires the source and destination dtypes match, got BFloat16 for the destination and Half for the source.
"""


def _read_lines(proc: subprocess.Popen, sink: list[tuple[float, str]]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        sink.append((time.monotonic(), line))


def _wait_until_open(proc: subprocess.Popen, path: Path, timeout: float = 60) -> None:
    """Until the follower has the file open (Linux's /proc; elsewhere a fixed wait)."""
    fds = Path(f"/proc/{proc.pid}/fd")
    if not fds.is_dir():
        time.sleep(3)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for fd in list(fds.iterdir()) if fds.is_dir() else []:
            try:
                if os.readlink(fd) == str(path):
                    return
            except OSError:
                pass
        time.sleep(0.05)


def test_follow_file_prints_finding_within_half_a_second(tmp_path):
    log = tmp_path / "live.log"
    log.write_text(HEAD)
    # The latency measured is the follower's, not its start-up: a first run on a fresh clone validates
    # the rules and compiles the scanner (seconds on a loaded CI machine), so that happens here first.
    subprocess.run([str(SCRIPT), "--format", "json", str(log)], capture_output=True, timeout=120)
    # (Ctrl-C as a terminal delivers it: a suite started as a background job inherits SIGINT ignored)
    proc = subprocess.Popen([str(SCRIPT), "--follow", "--format", "json", str(log)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    got: list[tuple[float, str]] = []
    t = threading.Thread(target=_read_lines, args=(proc, got), daemon=True)
    t.start()
    _wait_until_open(proc, log)
    time.sleep(1.0)  # the tool has read the head
    with open(log, "a") as fh:  # a writer appending, as a server would
        fh.write(CRASH)
        fh.flush()
        written = time.monotonic()
    deadline = written + 5
    while time.monotonic() < deadline and not any("index-put-dtype-mismatch" in ln for _, ln in got):
        time.sleep(0.02)
    hit = [ts for ts, ln in got if "index-put-dtype-mismatch" in ln]
    assert hit, got
    latency = hit[0] - written
    assert latency < 0.5, latency
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    t.join(timeout=5)
    summary = json.loads(got[-1][1])
    assert summary["summary"]["error"] == 1
    assert proc.returncode == 1
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")


def test_follow_pipe_ends_with_summary_at_eof():
    proc = subprocess.run([str(SCRIPT), "--follow"], input=HEAD + CRASH, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "SGD401" in proc.stdout and "1 error" in proc.stdout


RULES = Path(__file__).resolve().parent.parent / "sglang_doctor" / "rules"
DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"
LOGS = [DEMO / "qwen3.6-27b-awq-dtype-crash.log", DEMO / "qwen3.6-27b-mamba-mfs-0.80.log",
        next(RULES.glob("*/*/fires-0.5.23-breakable-logged.log"))]


def _both(fmt: str, log: Path) -> tuple[str, str]:
    """(batch output, --follow output) for the same log on stdin."""
    text = log.read_text(encoding="utf-8")
    batch = subprocess.run([str(SCRIPT), "--format", fmt, "--no-color", "-"], input=text, capture_output=True,
                           text=True, timeout=60)
    fol = subprocess.run([str(SCRIPT), "--follow", "--format", fmt, "--no-color", "-"], input=text,
                         capture_output=True, text=True, timeout=60)
    assert batch.returncode == fol.returncode, (batch.stderr, fol.stderr)
    return batch.stdout, fol.stdout


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", ["sarif", "junit", "markdown", "github"])
def test_follow_ends_with_the_batch_report(fmt, log):
    batch, fol = _both(fmt, log)
    assert fol == batch


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_follow_json_streams_findings_then_the_batch_report(log):
    batch, fol = _both("json", log)
    *streamed, last = fol.strip().splitlines()
    report = json.loads(batch)
    assert json.loads(last) == report
    findings = {(f["rule"], f["evidence"][0]["line"]) for f in report["findings"]}
    streamed_keys = {(f["rule"], f["evidence"][0]["line"]) for f in map(json.loads, streamed)}
    assert streamed_keys and streamed_keys <= findings  # nothing streamed that the report does not stand by


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_follow_text_has_every_finding_the_startup_line_and_the_command(log):
    batch, fol = _both("text", log)
    # every finding, as its own block or as a consequence's `then:` line under its cause (a streamed
    # consequence comes as a block: when it happens its cause's block is already printed)
    codes = lambda out: sorted(set(re.findall(r"(?m)^(?:(?:error|warning|info) |  then: )(SGD\d+)", out)))  # noqa: E731
    assert codes(fol) == codes(batch) and codes(batch)
    for marker in ("startup:", "corrected command:"):
        got = [ln for ln in batch.splitlines() if ln.startswith(marker)]
        assert got == [ln for ln in fol.splitlines() if ln.startswith(marker)]
    command = batch.split("corrected command:\n", 1)[1].splitlines()[0] if "corrected command:" in batch else None
    assert command is None or command in fol
    assert batch.strip().splitlines()[-1] == fol.strip().splitlines()[-1]  # the summary line


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_sigterm_ends_follow_with_the_summary(tmp_path, fmt):
    """Kubernetes and systemd stop a follower with SIGTERM: it ends like the end of its stream."""
    log = tmp_path / "live.log"
    log.write_text(HEAD + CRASH)
    proc = subprocess.Popen([str(SCRIPT), "--follow", "--format", fmt, "--no-color", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    got: list[tuple[float, str]] = []
    t = threading.Thread(target=_read_lines, args=(proc, got), daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any("SGD401" in ln for _, ln in got):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    t.join(timeout=5)
    last = got[-1][1]
    if fmt == "json":
        assert json.loads(last)["summary"]["error"] == 1
    else:
        assert any(ln.startswith("1 error") for _, ln in got), got  # the batch report's summary line
    assert proc.returncode == 1  # the findings' status, as at the end of a stream


def test_a_rule_waiting_for_its_conditions_is_not_rechecked_after_every_block(tmp_path, monkeypatch):
    """A backlog read block by block: a matched rule whose conditions do not hold yet is checked again
    when the stream pauses (or after RECHECK_S), not after each block (each check recomputes the
    context, the decode summary of the whole history among it)."""
    from rule_helpers import GOOD, write_rule

    from sglang_doctor.engine.rules import load_rules
    from sglang_doctor.facts.context import Context
    from sglang_doctor.pipeline.follow import Follower

    waiting = GOOD.replace("explanation: odd", "conditions:\n  - {fact: server.ready, op: eq, value: true}\nexplanation: odd")
    rules = load_rules([write_rule(tmp_path, waiting)], builtin=False, cache=False)
    calls = []
    real_finish = Context.finish
    monkeypatch.setattr(Context, "finish", lambda self, *a, **k: (calls.append(1), real_finish(self, *a, **k))[1])
    seen: list[str] = []
    fol = Follower(rules, lambda f: seen.append(f.rule))
    block = ("".join(f"[2026-05-02 09:20:{i % 60:02d} TP0] Decode batch, #running-req: 3, #token: {900 + i}, "
                     f"token usage: 0.04, cuda graph: True, gen throughput (token/s): {40 + i % 7}.00, #queue-req: 0\n"
                     for i in range(2000)) + "Something odd happened\n").encode()
    for _ in range(40):
        fol.feed_bytes(block)
    assert len(calls) <= 3, f"{len(calls)} context checks for 40 blocks"
    assert seen == []  # its condition does not hold
    fol.feed_bytes(b"[2026-05-02 09:21:00] The server is fired up and ready to roll!\n")
    fol.idle()  # a pause: the waiting rule is checked, and now holds
    assert seen == ["my-rule"]
