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


def test_a_pure_build_runs_without_the_compiled_scan_and_reports_the_same(tmp_path):
    """SGLANG_DOCTOR_PURE=1 builds a py3-none-any wheel (no C compiler needed); that package takes the
    pure-Python decode path and gives the report the compiled one gives on a serving log."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, SGLANG_DOCTOR_PURE="1")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "w"),
                            str(root)], env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    wheels = list((tmp_path / "w").glob("*.whl"))
    assert len(wheels) == 1 and wheels[0].name.endswith("-py3-none-any.whl"), wheels
    target = tmp_path / "pure"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                    str(wheels[0])], check=True, timeout=600)
    assert not list(target.rglob("_native*.so")) and not list(target.rglob("_native*.pyd"))
    sys.path.insert(0, str(root / "bench"))
    try:
        from genlog import write_log
    finally:
        sys.path.remove(str(root / "bench"))
    log = tmp_path / "serving.log"
    write_log(log, 3_000_000)
    probe = "import sglang_doctor._speed._native"
    reports = {}
    for name, path in (("pure", str(target)), ("compiled", "")):
        penv = dict(os.environ, PYTHONPATH=path)
        if name == "pure":  # (whether the compiled one is built: test_native.py)
            assert subprocess.run([sys.executable, "-c", probe], env=penv, cwd=tmp_path).returncode != 0
        r = subprocess.run([sys.executable, "-m", "sglang_doctor", "--format", "json", str(log)], env=penv,
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        report = json.loads(r.stdout)
        report.pop("elapsed_s", None)
        reports[name] = report
    assert reports["pure"]["launches"][0]["startup"]["decode_throughput"]["lines"] > 5000
    assert reports["pure"]["launches"] == reports["compiled"]["launches"]
    assert reports["pure"]["findings"] == reports["compiled"]["findings"]
