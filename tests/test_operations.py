"""The tool as an operator meets it, in real processes: a closed pipe, Ctrl-C, unreadable
and missing files, directories, and a terminal on stdin."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "sglang-doctor"
DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"
DEMO_LOG = (DEMO / "qwen3.6-27b-awq-dtype-crash.log").read_bytes()
FILLER = b"".join(b"[2026-05-02 09:20:%02d] INFO:     172.17.0.9:4711 - \"POST /generate HTTP/1.1\" 200 OK\n"
                  % (i % 60) for i in range(10_000))  # ~0.8 MB

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX signals, pipes and ptys")


def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    e["SGLANG_DOCTOR_CACHE"] = str(tmp_path / "cache")
    return e


def big_log(tmp_path: Path, megabytes: int = 24) -> Path:
    p = tmp_path / "big.log"
    with open(p, "wb") as fh:
        fh.write(DEMO_LOG[:DEMO_LOG.index(b"[2026-05-02 09:14:33]")])
        for _ in range(max(1, megabytes * 1024 * 1024 // len(FILLER))):
            fh.write(FILLER)
        fh.write(DEMO_LOG[DEMO_LOG.index(b"[2026-05-02 09:14:33]"):])
    return p


def test_head_closes_the_pipe_on_a_big_log(tmp_path):
    big = big_log(tmp_path)
    t0 = time.perf_counter()
    p = subprocess.run(["bash", "-c", f'set -o pipefail; "{SCRIPT}" --no-color "{big}" | head -1; '
                                      'echo "status=${PIPESTATUS[0]}" >&2'],
                       cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True, timeout=120)
    assert time.perf_counter() - t0 < 60
    assert p.stdout.count("\n") == 1
    err = p.stderr.replace(p.stderr[p.stderr.rfind("status="):], "")
    assert err == "", err  # not a word: no traceback, no "Broken pipe"
    assert p.stderr.strip().endswith(("status=0", "status=1"))


@pytest.mark.parametrize("args", [["rules", "list"], ["rules", "show", "SGD401"], ["rules", "lint", "--only-user"]])
def test_rules_commands_exit_quietly_when_the_reader_goes_away(tmp_path, args):
    """`rules list | head -1`: a reader that is gone before the first line (`| true`) is a broken pipe
    on every write; the command ends without a word on stderr."""
    from rule_helpers import write_rule

    if "lint" in args:  # two findings to print: patterns without a literal
        for i in range(2):
            write_rule(tmp_path, f"id: rule-{i}\ncode: SGD{1990 + i}\ntitle: A rule for a pipe test\nseverity: warning\n"
                                 f"family: test\nmatch:\n  any:\n    - regex: 'a{i}'\nexplanation: x\nfix_none: nothing\n"
                                 "docs: {what: a, why: b, fix: c}\n", f"rule-{i}")
        args = [*args, "--rules", str(tmp_path / "rules")]
    p = subprocess.run(["bash", "-c", f'"{SCRIPT}" {" ".join(args)} | true; echo "status=${{PIPESTATUS[0]}}" >&2'],
                       cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True, timeout=120)
    err = p.stderr[:p.stderr.rfind("status=")]
    assert "error" not in err and "Traceback" not in err and "Broken pipe" not in err, err
    assert p.stderr.strip().endswith(("status=0", "status=1"))


def _interrupt_while_busy(tmp_path):
    """Feed a pipe faster than it is read, Ctrl-C once the tool is deep into it."""
    p = subprocess.Popen([str(SCRIPT), "--no-color"], cwd=tmp_path, env=env(tmp_path),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(DEMO_LOG)
    written = 0
    try:
        while written < 16 * 1024 * 1024:  # a pipe holds 64 KB: the tool has read the rest
            p.stdin.write(FILLER)
            written += len(FILLER)
        p.send_signal(signal.SIGINT)
        for _ in range(2000):
            p.stdin.write(FILLER)
    except (BrokenPipeError, OSError):
        pass
    return p


def _interrupt_while_waiting(tmp_path):
    """The writer goes quiet (a live container that stopped logging): Ctrl-C while read blocks."""
    p = subprocess.Popen([str(SCRIPT), "--no-color"], cwd=tmp_path, env=env(tmp_path),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(DEMO_LOG + FILLER * 2)  # more than a pipe holds: written only once the tool reads
    p.stdin.flush()
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    return p


@pytest.mark.parametrize("start", [_interrupt_while_busy, _interrupt_while_waiting], ids=["busy", "waiting"])
def test_ctrl_c_prints_the_summary_so_far_and_exits_130(tmp_path, start):
    p = start(tmp_path)
    try:
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    out, err = out.decode(), err.decode()
    assert p.returncode == 130, (out[-300:], err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1] == "sglang-doctor: interrupted: the report covers the input read before Ctrl-C"
    assert "SGD401" in out and "1 error" in out.splitlines()[0]  # the crash read before Ctrl-C is reported


def test_ctrl_c_stops_the_worker_processes_and_reports_the_files_done(tmp_path):
    """-j 2 over a finished log and two pipes whose writer went quiet: only Ctrl-C ends the run."""
    (tmp_path / "a.log").write_bytes(DEMO_LOG)
    writers = []
    for name in ("b.log", "c.log"):
        os.mkfifo(tmp_path / name)
        writers.append(os.open(tmp_path / name, os.O_RDWR))  # a writer that never writes
    # Warm the rule cache first: validating every rule file is the slow part of a first run,
    # and on a loaded machine it alone could outlast the wait below.
    subprocess.run([str(SCRIPT), "a.log"], cwd=tmp_path, env=env(tmp_path), capture_output=True, timeout=120)
    try:
        p = subprocess.Popen([str(SCRIPT), "--no-color", "-j", "2", "a.log", "b.log", "c.log"], cwd=tmp_path,
                             env=env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(3)  # workers started, a.log analysed, both blocked on the pipes
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=60)
        finally:
            p.kill()
    finally:
        for fd in writers:
            os.close(fd)
    out, err = out.decode(), err.decode()
    assert p.returncode == 130, (out[-300:], err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1] == "sglang-doctor: interrupted: the report covers the input read before Ctrl-C"
    assert "SGD401" in out and "1 error" in out.splitlines()[0]


def test_second_ctrl_c_or_one_outside_the_analysis_is_one_line_130(tmp_path, monkeypatch):
    """In-process (a real second Ctrl-C races with the exit): the handler lets a second one
    through, and a KeyboardInterrupt anywhere in a command becomes one line and status 130."""
    from click.testing import CliRunner

    import sglang_doctor.pipeline.run as doctor
    from sglang_doctor.cli.main import main

    intr = doctor.Interrupt()
    intr.handler(signal.SIGINT, None)
    assert intr.requested
    with pytest.raises(KeyboardInterrupt):
        intr.handler(signal.SIGINT, None)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(doctor, "diagnose", interrupted)
    for args in (["-"], ["explain", "RuntimeError: x"]):
        try:
            r = CliRunner(mix_stderr=False).invoke(main, args, input="x\n")  # type: ignore[call-arg]
        except TypeError:
            r = CliRunner().invoke(main, args, input="x\n")
        assert r.exit_code == 130 and r.stderr == "sglang-doctor: interrupted\n", (r.exit_code, r.stderr)


def _without_dac_override(cmd: list[str]) -> list[str]:
    """Root reads any file: drop the capabilities that let it, so chmod 000 means something."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: chmod 000 cannot be tested")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *cmd]


@pytest.mark.parametrize("clean_other, status", [(True, 2), (False, 1)], ids=["other-clean", "other-crashed"])
def test_unreadable_file_is_named_and_the_others_still_run(tmp_path, clean_other, status):
    secret = tmp_path / "secret.log"
    secret.write_bytes(DEMO_LOG)
    secret.chmod(0)
    other = tmp_path / "other.log"
    other.write_bytes(b"[2026-05-02 09:14:03] The server is fired up and ready to roll!\n" if clean_other else DEMO_LOG)
    r = subprocess.run(_without_dac_override([str(SCRIPT), "--format", "json", "secret.log", "missing.log",
                                              "other.log"]),
                       cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == status, r.stderr
    assert r.stderr.splitlines() == ["sglang-doctor: secret.log: permission denied",
                                     "sglang-doctor: missing.log: no such file"]
    rep = json.loads(r.stdout)
    assert [i["name"] for i in rep["inputs"]] == ["secret.log", "missing.log", "other.log"]
    assert rep["inputs"][2]["lines"] > 0 and ("SGD401" in {f["code"] for f in rep["findings"]}) != clean_other


def test_directory_is_walked_for_logs_and_gz(tmp_path):
    d = tmp_path / "logs"
    (d / "node0").mkdir(parents=True)
    (d / "node1").mkdir()
    (d / "node0" / "launch.log").write_bytes(DEMO_LOG)
    with gzip.open(d / "node1" / "rank1.log.gz", "wb") as fh:
        fh.write((DEMO / "qwen3.6-27b-mamba-mfs-0.80.log").read_bytes())
    (d / "node1" / "notes.txt").write_text("RuntimeError: Index put requires the source and destination dtypes match")
    (d / "node1" / "old.log.bak").write_bytes(DEMO_LOG)
    r = subprocess.run([str(SCRIPT), "--format", "json", "logs"], cwd=tmp_path, env=env(tmp_path),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    rep = json.loads(r.stdout)
    assert [i["name"] for i in rep["inputs"]] == [str(Path("logs/node0/launch.log")), str(Path("logs/node1/notes.txt")),
                                                  str(Path("logs/node1/rank1.log.gz"))]
    assert {"SGD401", "SGD104"} <= {f["code"] for f in rep["findings"]}

    (tmp_path / "empty").mkdir()
    r = subprocess.run([str(SCRIPT), "empty"], cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert r.stderr == "sglang-doctor: empty: is a directory without log files (*.log, *.log.N, *.txt, compressed or not)\n"


def test_terminal_on_stdin_prints_a_hint(tmp_path):
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    p = subprocess.Popen([str(SCRIPT), "--no-color"], cwd=tmp_path, env=env(tmp_path), stdin=slave,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(slave)
    try:
        time.sleep(1.0)
        os.write(master, b"\x04")  # Ctrl-D at the start of a line: end of input
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
        os.close(master)
    assert p.returncode == 2, err  # nothing was typed: an empty input
    assert "reading a log from standard input" in err.decode() and "Ctrl-D" in err.decode()
    assert "empty input" in err.decode()


def test_readme_reliability_rows_name_existing_tests():
    """Every row of README's Reliability table names tests that exist."""
    import re

    root = Path(__file__).resolve().parent
    readme = (root.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Reliability", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith(("| hostile", "|---"))]
    assert len(rows) >= 15
    for row in rows:
        cell = row.rstrip(" |").rsplit(" | ", 1)[1]
        names = re.findall(r"`(?:(test_\w+)\.py::)?(test_\w+)(?:\[[^\]]*\])?`", cell)
        assert names, row
        current = None
        for module, test in names:
            current = module or current
            assert current, row
            source = (root / f"{current}.py").read_text(encoding="utf-8")
            assert re.search(rf"^def {test}\(", source, re.M), f"{current}.py::{test}"
