"""--follow on a growing file and on a pipe: findings appear within 0.5 s of their last line."""

from __future__ import annotations

import json
import re
import os
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


def test_follow_file_prints_finding_within_half_a_second(tmp_path):
    log = tmp_path / "live.log"
    log.write_text(HEAD)
    proc = subprocess.Popen([str(SCRIPT), "--follow", "--format", "json", str(log)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    got: list[tuple[float, str]] = []
    t = threading.Thread(target=_read_lines, args=(proc, got), daemon=True)
    t.start()
    time.sleep(1.0)  # the tool is up and has read the head
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
    heads = lambda out: sorted(ln for ln in out.splitlines() if re.match(r"^(error|warning|info) SGD", ln))  # noqa: E731
    assert heads(fol) == heads(batch)
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
