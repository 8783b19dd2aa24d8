"""The command's own exit (entry.exit_now): same statuses and complete output as a normal exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo" / "qwen3.6-27b-awq-dtype-crash.log"


def _run(args: list[str], tmp_path: Path, code: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(tmp_path / "cache"))
    cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "sglang_doctor", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("args, status", [(["--format", "json", str(DEMO)], 1),
                                          (["--fail-on", "never", str(DEMO)], 0),
                                          (["missing.log"], 2),
                                          (["--format", "nope", str(DEMO)], 2)],
                         ids=["error-found", "fail-on-never", "missing-file", "usage"])
def test_statuses_are_those_of_a_normal_exit(tmp_path, args, status):
    assert _run(args, tmp_path).returncode == status


def test_a_long_report_reaches_a_pipe_whole(tmp_path):
    many = tmp_path / "logs"
    many.mkdir()
    for i in range(40):
        (many / f"{i:02d}.log").write_bytes(DEMO.read_bytes())
    p = _run(["--format", "json", str(many)], tmp_path)
    report = json.loads(p.stdout)  # cut output would not parse
    assert len(report["inputs"]) == 40 and p.stdout.endswith("\n")


def test_messages_on_stderr_are_flushed(tmp_path):
    p = _run(["missing.log"], tmp_path)
    assert "missing.log" in p.stderr and p.stderr.endswith("\n")


def test_exit_functions_run_and_a_message_exit_is_status_1(tmp_path):
    code = ("import atexit, sys\nfrom sglang_doctor.cli.entry import exit_now\n"
            "atexit.register(lambda: print('exit function ran'))\nprint('partial', end='')\nexit_now('gave up')")
    p = _run([], tmp_path, code)
    assert p.returncode == 1 and p.stdout == "partialexit function ran\n" and p.stderr == "gave up\n"
