"""The progress bar: on a terminal, for long inputs, text format only; never in pipes, never
in machine formats, never with --quiet; redrawn only a few times per second."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sglang_doctor.cli.progress as progress
from helpers_cli import cache_builtin_rules, run

BIN = Path(sys.executable).parent


@pytest.fixture
def long_log(tmp_path, demo_dir) -> Path:
    """A 3 MB log (three 1 MB blocks) ending in the demo crash."""
    filler = "[2026-05-02 09:14:32] INFO:     127.0.0.1:40522 - \"GET /health HTTP/1.1\" 200 OK\n"
    path = tmp_path / "long.log"
    path.write_text(filler * (3 * 1024 * 1024 // len(filler)) + (demo_dir / "qwen3.6-27b-awq-dtype-crash.log")
                    .read_text(encoding="utf-8"), encoding="utf-8")
    return path


@pytest.fixture
def small_threshold(monkeypatch):
    """1 MB counts as long here, and every block redraws."""
    monkeypatch.setattr(progress, "MIN_BYTES", 1024 * 1024)
    monkeypatch.setattr(progress, "REFRESH_S", 0.0)


def tty(monkeypatch, is_tty: bool) -> None:
    monkeypatch.setattr(progress, "stderr_is_tty", lambda: is_tty)


def test_bar_with_bytes_per_second_on_a_terminal(monkeypatch, long_log, small_threshold):
    cache_builtin_rules(monkeypatch)
    tty(monkeypatch, True)
    r = run([long_log, "--no-baseline"])
    assert r.exit_code == 1
    assert "long.log" in r.stderr and "MB/s" in r.stderr and "/3.2 MB" in r.stderr  # bytes read / file size
    assert "\x1b[?25h" in r.stderr  # the cursor is given back
    assert "\x1b" not in r.stdout and "error SGD401" in r.stdout  # the report itself is untouched


@pytest.mark.parametrize("extra", [["--format", "json"], ["--format", "sarif"], ["--format", "github"], ["-q"]])
def test_no_bar_in_machine_formats_or_quiet(monkeypatch, long_log, small_threshold, extra):
    cache_builtin_rules(monkeypatch)
    tty(monkeypatch, True)
    r = run([long_log, "--no-baseline", *extra])
    assert r.exit_code == 1
    assert "MB/s" not in r.stderr and "\x1b" not in r.stderr


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch, long_log, small_threshold):
    cache_builtin_rules(monkeypatch)
    r = run([long_log, "--no-baseline"])  # CliRunner's stderr is no terminal
    assert "MB/s" not in r.stderr and "\x1b" not in r.stderr


def test_short_files_get_no_callback(tmp_path, demo_dir):
    with open(demo_dir / "qwen3.6-27b-awq-dtype-crash.log", "rb") as fh:
        assert progress.ScanProgress(file=open(os.devnull, "w")).start("x.log", fh) is None


def test_no_bar_for_an_input_read_quickly(monkeypatch, long_log):
    # Long enough, but read within REFRESH_S: no flicker of a bar drawn and erased at once.
    cache_builtin_rules(monkeypatch)
    tty(monkeypatch, True)
    monkeypatch.setattr(progress, "MIN_BYTES", 1024 * 1024)
    monkeypatch.setattr(progress, "REFRESH_S", 60.0)
    r = run([long_log, "--no-baseline"])
    assert r.exit_code == 1 and r.stderr == ""


def test_redrawn_at_most_a_few_times_per_second(monkeypatch, long_log):
    import io

    monkeypatch.setattr(progress, "MIN_BYTES", 1024)
    bar = progress.ScanProgress(file=io.StringIO())
    with open(long_log, "rb") as fh:
        tick = bar.start("long.log", fh)
        assert tick is not None
        t0 = time.monotonic()
        while bar._bar is None:  # the first frame comes after REFRESH_S
            tick(1 << 20)
        assert time.monotonic() - t0 >= progress.REFRESH_S
        refreshes = []
        monkeypatch.setattr(bar._bar, "refresh", lambda: refreshes.append(time.monotonic()))
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < 0.6:
            tick(2 << 20)
            n += 1
    bar.close()
    assert n > 1000  # the engine calls once per 1 MB block; the callback costs next to nothing
    assert 1 <= len(refreshes) <= 3  # 0.6 s at one frame per 0.25 s


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal via the pty module")
def test_real_terminal_and_pipe(tmp_path, demo_dir):
    """The installed command, stderr on a pseudo-terminal, a > 50 MB log arriving on a pipe
    over ~1.5 s (too slow to be read before the first frame)."""
    import pty
    import threading

    line = b"[2026-05-02 09:14:32] Decode batch, #running-req: 1, #token: 100, token usage: 0.01, cuda graph: True\n"
    block = line * (1024 * 1024 // len(line))
    crash = (demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_bytes()
    blocks = progress.MIN_BYTES // len(block) + 20

    def run_on_pty(*args: str) -> tuple[int, str, str]:
        master, slave = pty.openpty()
        proc = subprocess.Popen([str(BIN / "sglang-doctor"), "--no-baseline", *args], cwd=tmp_path,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        out: list[bytes] = []

        def feed() -> None:
            assert proc.stdin is not None and proc.stdout is not None
            for _ in range(blocks):
                proc.stdin.write(block)
                time.sleep(0.02)
            proc.stdin.write(crash)
            proc.stdin.close()

        def drain() -> None:
            assert proc.stdout is not None
            out.append(proc.stdout.read())

        threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
        for t in threads:
            t.start()
        err = b""
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            err += data
        for t in threads:
            t.join(timeout=120)
        proc.wait(timeout=120)
        os.close(master)
        return proc.returncode, b"".join(out).decode(), err.decode(errors="replace")

    code, out, err = run_on_pty()
    assert code == 1 and "<stdin>" in err and "MB/s" in err and "\x1b[?25h" in err
    assert "error SGD401" in out and "\x1b" not in out  # stdout is a pipe: the plain report, no bar
    code, out, err = run_on_pty("--format", "json")
    assert code == 1 and out.startswith("{") and "MB/s" not in err
