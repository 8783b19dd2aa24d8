"""Several files in worker processes give exactly the report of one process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers_cli import run
from sglang_doctor.pipeline import parallel
from sglang_doctor.pipeline.run import Options, diagnose

REAL = Path(__file__).resolve().parent / "data" / "real"


def _report(args):
    r = run(["--format", "json", "--no-baseline", *args])
    assert r.exit_code in (0, 1, 2), r.output
    return json.loads(r.stdout), r.exit_code


def test_workers_give_the_sequential_report(tmp_path):
    logs = sorted(REAL.glob("*.log"))[:24] + [tmp_path / "missing.log"]
    assert _report(["-j", "2", *logs]) == _report(["-j", "1", *logs])


def test_auto_jobs_only_for_several_big_files(tmp_path, monkeypatch):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("x\n")
    b.write_text("y\n")
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert parallel.auto_jobs([str(a)]) == 1
    assert parallel.auto_jobs([str(a), str(b)]) == 1  # too small to repay the workers
    assert parallel.auto_jobs([str(a), "-"]) == 1  # stdin is read here
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 2)
    assert parallel.auto_jobs([str(a), str(b)]) == 2
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 1)
    assert parallel.auto_jobs([str(a), str(b)]) == 1


def test_auto_jobs_by_measurement(tmp_path, monkeypatch):
    """Two 100 MB logs ran slower in two workers than in one (parallel.py has the figures): no workers
    below MIN_PARALLEL_BYTES, nor on cores other work keeps busy."""
    names = []
    for i, mb in enumerate((100, 100, 300, 300)):
        p = tmp_path / f"{i}.log"
        with open(p, "wb") as fh:
            fh.truncate(mb << 20)  # (sparse: the size without the bytes)
        names.append(str(p))
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    assert parallel.auto_jobs(names[:2]) == 1
    assert parallel.auto_jobs(names[2:]) == 2
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (1.8, 1.0, 1.0))  # one core busy elsewhere
    assert parallel.auto_jobs(names[2:]) == 1
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (4.2, 1.0, 1.0))
    assert parallel.auto_jobs(names) == 4


class _StopAfterFirst:
    """An Interrupt whose Ctrl-C arrives once the first input is reported."""

    def __init__(self) -> None:
        self.requested = False

    def wrap(self, chunks):
        return chunks


def test_ctrl_c_stops_the_workers_and_reports_what_was_done(rules, monkeypatch):
    logs = [str(p) for p in sorted(REAL.glob("*.log"))[:6]]
    stop = _StopAfterFirst()
    real = parallel.analyze_files

    def first_then_stop(*a, **kw):
        for outcome in real(*a, **kw):
            yield outcome
            stop.requested = True

    monkeypatch.setattr(parallel, "analyze_files", first_then_stop)
    result = diagnose(logs, rules, Options(jobs=2, interrupt=stop))
    assert result.interrupted and len(result.report.inputs) == 1


@pytest.mark.parametrize("jobs", [None, 2])
def test_pasted_text_and_stdin_stay_in_this_process(rules, jobs):
    result = diagnose(["<pasted>"], rules, Options(jobs=jobs), texts={"<pasted>": "hello\n"})
    assert len(result.report.inputs) == 1 and not result.errors


def test_spawned_workers_as_on_macos_and_windows_give_the_same_report(monkeypatch):
    logs = sorted(REAL.glob("*.log"))[:6]
    monkeypatch.setattr(parallel, "START_METHOD", "spawn")  # workers import the tool afresh
    assert _report(["-j", "2", *logs]) == _report(["-j", "1", *logs])
