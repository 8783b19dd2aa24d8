"""Several log files at once: worker processes, each analysing whole files.

The analysis of one file is single-threaded Python (the GIL also serialises the scanner's
callbacks), so a run over many saved logs — the pre-commit and CI case — spreads its files
over processes. Results come back in input order, so the report is the one a sequential run
gives. Used only where it pays: two or more files adding up to MIN_PARALLEL_BYTES, idle cores
(idle_cores), no `--why` trace, no progress bar; `--jobs` overrides the choice.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterator

from sglang_doctor.engine.prefilter import ScannerCache
from sglang_doctor.engine.analyze import Matcher, analyze_chunks
from sglang_doctor.read.reader import InputError, iter_chunks, open_input
from sglang_doctor.facts.input_notes import input_warnings, is_empty
from sglang_doctor.engine.rules import Rule

# Below this, starting workers costs more than it saves. Measured (medians of 5 alternating runs,
# bench/genlog.py logs, this project's 2-core machine under a load average of ~10): two 100 MB
# logs -j 1 3.8 s, -j 2 4.7 s; two 500 MB logs 17.3 s and 17.0 s; 200 logs of 1 MB 8.7 s and 9.1 s.
MIN_PARALLEL_BYTES = 512 * 1024 * 1024
MAX_AUTO_JOBS = 8
POLL_S = 0.1  # how often the parent looks for a Ctrl-C while it waits
# fork shares the loaded rules for free; elsewhere (macOS, Windows) fork is unsafe or absent.
START_METHOD = "fork" if sys.platform.startswith("linux") else "spawn"

Outcome = tuple[int, "InputResult | None", "str | None"]  # (input index, result, read error)


def auto_jobs(names: list[str]) -> int:
    """How many workers a run over `names` should use when the user did not say: one per idle core
    for two or more files adding up to MIN_PARALLEL_BYTES, else none."""
    files = [n for n in names if n != "-"]
    cores = idle_cores()
    if len(files) < 2 or len(files) != len(names) or cores < 2:
        return 1
    total = 0
    for n in files:
        try:
            total += os.stat(n).st_size
        except OSError:
            pass  # the worker reports it
    return min(cores, len(files), MAX_AUTO_JOBS) if total >= MIN_PARALLEL_BYTES else 1


def idle_cores() -> int:
    """Cores not busy with other work, by the last minute's load average (a CI runner running other
    jobs has none to spare: workers there only add their start-up to the run)."""
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average (Windows)
        return cores
    return max(1, min(cores, int(cores - load + 0.5)))


_WORKER: tuple[Matcher, Any, str | None] | None = None


def _start_worker(rules: list[Rule], fast: bool, command: str | None) -> None:
    import signal


    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the workers
    global _WORKER
    _WORKER = (Matcher(rules), ScannerCache(rules, fast), command)


def _analyze_file(index: int, name: str) -> Outcome:
    assert _WORKER is not None
    matcher, scanner, command = _WORKER
    try:
        stream = open_input(name)
        try:
            result = analyze_chunks(iter_chunks(stream), matcher, index, scanner, command)
            result.warnings.extend(input_warnings(name, stream, result))
            if is_empty(result):
                return index, None, f"{name}: empty input (no log lines to diagnose)"
            return index, result, None
        finally:
            stream.close()
    except InputError as e:
        return index, None, str(e)


def analyze_files(names: list[str], rules: list[Rule], jobs: int, fast: bool, command: str | None,
                  interrupt: Any = None) -> Iterator[Outcome]:
    """Each file's outcome, in input order; a Ctrl-C (interrupt.requested) stops the workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, TimeoutError as FutureTimeout

    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(START_METHOD),
                               initializer=_start_worker, initargs=(rules, fast, command))
    stopped = False
    try:
        futures = [pool.submit(_analyze_file, i, n) for i, n in enumerate(names)]
        for fut in futures:
            while True:
                if interrupt is not None and interrupt.requested:
                    stopped = True
                    return
                try:
                    yield fut.result(timeout=POLL_S)
                    break
                except FutureTimeout:
                    continue
    finally:
        if stopped:
            _terminate(pool)
        pool.shutdown(wait=not stopped, cancel_futures=True)


def _terminate(pool: Any) -> None:
    """Stop workers mid-file (Python 3.14 has terminate_workers; before it, the process table)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.terminate()
