"""The installed tool, run as a real process from another directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).parent / ("sglang-doctor.exe" if os.name == "nt" else "sglang-doctor")


def run(args, cwd, input=None):
    return subprocess.run(args, cwd=cwd, input=input, capture_output=True, text=True, timeout=60)


def test_console_script_runs_the_bundled_demo(tmp_path):
    r = run([str(SCRIPT), "demo"], tmp_path)
    assert r.returncode == 0, r.stderr  # a demo is no failure of a first command (--fail-on asks for one)
    assert "SGD401" in r.stdout and "bfloat16" in r.stdout
    assert "Traceback" not in r.stderr


def test_python_dash_m_and_stdin(tmp_path, demo_dir):
    log = (demo_dir / "qwen3.6-27b-mamba-mfs-0.80.log").read_text()
    r = run([sys.executable, "-m", "sglang_doctor", "--format", "json"], tmp_path, input=log)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["findings"][0]["code"] == "SGD104"


def test_broken_pipe_is_quiet(tmp_path, demo_dir):
    big = tmp_path / "big.log"
    big.write_text((demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_text() * 200)
    p = subprocess.Popen(f'"{SCRIPT}" "{big}" | head -1', shell=True, cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err
