"""SGLANG_DOCTOR_SPEEDUPS=0 turns off every cache and the stage-one scanner: the report is the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "sglang-doctor"
DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"


def _run(tmp_path: Path, log: Path, speedups: str) -> dict:
    env = {**os.environ, "SGLANG_DOCTOR_SPEEDUPS": speedups, "SGLANG_DOCTOR_CACHE": str(tmp_path / f"cache-{speedups}")}
    out = subprocess.run([str(SCRIPT), "--format", "json", str(log)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_the_switch_changes_nothing_but_speed(tmp_path):
    # A log long enough for the stage-one scanner (> 256 KB), and the demo.
    big = tmp_path / "big.log"
    head = (DEMO / "qwen3.6-27b-awq-dtype-crash.log").read_text(encoding="utf-8")
    lines = head.splitlines(keepends=True)
    decode = "".join(f"[2026-05-02 09:14:{30 + i % 3:02d}] Decode batch, #running-req: 1, #token: {100 + i}, token usage: "
                     f"0.01, cuda graph: True, gen throughput (token/s): {40 + i % 7}.0, #queue-req: 0\n" for i in range(3000))
    big.write_text("".join(lines[:30]) + decode + "".join(lines[30:]), encoding="utf-8")
    assert big.stat().st_size > 256 * 1024
    for log in (DEMO / "qwen3.6-27b-awq-dtype-crash.log", big):
        on, off = _run(tmp_path, log, "1"), _run(tmp_path, log, "0")
        assert on["findings"] and on == off
    assert (tmp_path / "cache-1").exists() and not (tmp_path / "cache-0").exists()  # the switch really is off
