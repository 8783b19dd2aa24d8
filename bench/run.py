"""Speed benchmark: every figure beside a reference measured in the same run.

    .venv/bin/python bench/run.py                 # 256 MB and 1 GB logs (needs ~1.5 GB in --dir)
    .venv/bin/python bench/run.py --sizes 0.256 --quick

Prints, for this machine (and its load average, before and after: the machine may be shared):
  1. throughput: `sglang-doctor --format json big.log` vs `LC_ALL=C grep -E -c -f patterns50.txt big.log`
     (50 of the shipped rule regexes, evenly spread, translated to POSIX ERE), medians of --runs, wall and
     CPU (user + sys, both processes when a big file is split over two); peak RSS;
  2. exact decode statistics: the startup summary's decode numbers against SGLang's own
     `srt/debug_utils/log_parser.py` on the same log (polars in a virtualenv in --dir, the newest sglang
     wheel), and log_parser's own time and RSS;
  3. cold start on a 10 KB startup log vs `python -c "import click, rich.console, pydantic, yaml, regex"`;
  4. preflight on a 60-shard model directory (bench/preflight_accuracy.py --perf);
  2b. a 32 MB log of a server without CUDA graphs against the same log with graphs on;
  5. --follow: a finding's latency after its line is written, and a backlog (`cat big.log | sglang-doctor -f`)
     against the batch run of the same log;
  6. (not with --quick) 200 logs of 1 MB in one invocation vs one 200 MB log; rule-count scaling;
and checks that the findings on each big log are those of the same crash in the small log.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from genlog import demo_text, write_log  # noqa: E402

BIN = Path(sys.executable).parent
DOCTOR = str(BIN / "sglang-doctor")


WORK_DIR: list[str | None] = [None]  # set by main(): where the generated logs are


class Timing(tuple):
    """(wall s, peak RSS MB, stdout, CPU s)"""

    wall = property(lambda t: t[0])
    rss = property(lambda t: t[1])
    out = property(lambda t: t[2])
    cpu = property(lambda t: t[3])


def timed(cmd: list[str], env: dict[str, str] | None = None, stdin: str | None = None) -> Timing:
    """Wall seconds, peak RSS (MB, the largest process of the tree), stdout and CPU seconds
    (user + sys, with the processes it waited for) of one command."""
    t0 = time.perf_counter()
    # Run from the logs' directory, as a user would: not from this repository, whose own
    # pyproject.toml names the tool (and would be parsed looking for its settings).
    fin = open(stdin, "rb") if stdin else None
    proc = subprocess.Popen(cmd, stdin=fin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            cwd=WORK_DIR[0])
    out = proc.stdout.read().decode() if proc.stdout else ""
    _, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if fin:
        fin.close()
    return Timing((wall, int(usage.ru_maxrss / 1024), out, usage.ru_utime + usage.ru_stime))


def median_of(cmd: list[str], runs: int, env: dict[str, str] | None = None, stdin: str | None = None) -> Timing:
    results = [timed(cmd, env, stdin) for _ in range(runs)]
    return Timing((statistics.median(r.wall for r in results), max(r.rss for r in results), results[-1].out,
                   statistics.median(r.cpu for r in results)))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def report_of(out: str) -> dict:
    """The JSON report: the whole output, or its last line (--follow streams findings before it)."""
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        return json.loads(out.strip().splitlines()[-1])


def findings_of(out: str) -> list[tuple[str, str]]:
    data = report_of(out)
    return [(f["rule"], f["severity"]) for f in data["findings"]]


def decode_of(out: str) -> dict[str, float | int | None]:
    data = report_of(out)
    d = (data.get("startup") or {}).get("decode_throughput") or {}
    facts = data.get("context", {}).get("decode", {})
    return {"lines": d.get("lines"), "median": d.get("median"), "p10": d.get("p10"), "p90": d.get("p90"),
            "usage_peak": facts.get("token_usage_peak"), "queue_peak": facts.get("queue_peak")}


def write_patterns(path: Path, count: int | None = None) -> int:
    """The shipped rule regexes as POSIX ERE; `count` of them, evenly spread, when given."""
    from sglang_doctor.engine.ere import to_ere
    from sglang_doctor.engine.rules import load_rules

    pats = [e for r in load_rules() for p in r.match.any if (e := to_ere(p.regex))]
    if count is not None:
        pats = [pats[i * len(pats) // count] for i in range(count)]
    path.write_text("\n".join(pats) + "\n")
    return len(pats)


LOG_PARSER = "sglang/srt/debug_utils/log_parser.py"
LOG_PARSER_STATS = HERE.parent / "tools" / "log_parser_stats.py"  # (run with the polars venv's python)


def log_parser_setup(work: Path) -> tuple[str, str] | str:
    """(python with polars, SGLang's log_parser.py) in `work`, or why not."""
    venv, parser = work / "polars-venv", work / "log_parser.py"
    python = venv / "bin" / "python"
    try:
        if not (venv / "ok").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True)
            subprocess.run([str(python), "-m", "pip", "-q", "install", "polars"], check=True, capture_output=True)
            (venv / "ok").write_text("")
        if not parser.exists():
            wheels = work / "sglang-wheel"
            subprocess.run([str(python), "-m", "pip", "-q", "download", "--no-deps", "sglang", "-d", str(wheels)],
                           check=True, capture_output=True)
            wheel = next(p for p in wheels.iterdir() if p.suffix == ".whl")
            with zipfile.ZipFile(wheel) as z:
                parser.write_bytes(z.read(LOG_PARSER))
            (work / "log_parser.from").write_text(wheel.name)
    except (subprocess.CalledProcessError, StopIteration, KeyError, OSError) as e:
        return f"not available here ({type(e).__name__})"
    return str(python), str(parser)


def same_decode(ours: dict, theirs: dict) -> bool:
    return all(ours[k] == theirs[k] if k in ("lines", "queue_peak") else
               ours[k] is not None and abs(ours[k] - theirs[k]) <= 1e-6 for k in theirs)


def follow_latency(work: Path, runs: int = 3) -> list[float]:
    """Seconds from a crash's last line written to a followed file to its finding on stdout."""
    crash_at = demo_text().splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(crash_at) if "Scheduler hit an exception" in ln) - 1
    out = []
    for k in range(runs):
        log = work / f"live-{k}.log"
        log.write_text("".join(crash_at[:cut]))
        proc = subprocess.Popen([DOCTOR, "-f", "--format", "json", str(log)], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, cwd=work)
        seen: list[float] = []

        def watch() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                if '"rule": "index-put-dtype-mismatch"' in line and not seen:
                    seen.append(time.perf_counter())

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        time.sleep(3)  # up and following
        with open(log, "a") as fh:
            fh.write("".join(crash_at[cut:]))
        written = time.perf_counter()
        deadline = written + 10
        while not seen and time.perf_counter() < deadline:
            time.sleep(0.01)
        proc.terminate()
        proc.wait(timeout=30)
        out.append(seen[0] - written if seen else float("inf"))
    return out


def _prefixed(prefix: str, pattern: str) -> str:
    """prefix + pattern, keeping leading inline flags such as (?m) first."""
    import re

    m = re.match(r"\(\?[aiLmsux]+\)", pattern)
    return pattern[:m.end()] + prefix + pattern[m.end():] if m else prefix + pattern


def synthetic_rules(directory: Path, factor: int) -> int:
    """(factor-1) copies of every shipped rule with its literals changed: same shape, new text."""
    import yaml

    from sglang_doctor.engine.rules import load_rules

    n = 0
    code = 0
    for rule in load_rules():
        if rule.match.check:
            continue
        for k in range(1, factor):
            data = rule.to_data()
            rid = f"syn{k}-{rule.id}"[:60]
            data["id"] = rid
            data["code"] = f"SGD{1000 + code}"  # four digits: the range left to users' own rules
            code += 1
            data["match"]["any"] = [{"regex": _prefixed(f"SYN{k}X ", p["regex"]), "in": p.get("in", "text")}
                                    for p in data["match"]["any"]]
            d = directory / "syn"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{rid}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
            n += 1
    return n


def cold_start(small: Path, doctor: str, python: str, what: str) -> None:
    """Part 3: the command on a small log against the reference imports, in the same interpreter."""
    # A pip install byte-compiles the package; an editable one (or PYTHONDONTWRITEBYTECODE)
    # may not have: compile it first, or the figure is the cost of compiling our sources.
    found = subprocess.run([python, "-c", "import sglang_doctor, os; print(os.path.dirname(sglang_doctor.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", found], stdout=subprocess.DEVNULL,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    timed([doctor, str(small)])  # the validated-rules cache, as after any first run
    print(f"\n3. cold start, {what} (median of 25, the two commands alternating: a busy moment hits both)")
    doc, imp = [], []
    for _ in range(25):
        doc.append(timed([doctor, str(small)]).wall)
        imp.append(timed([python, "-c", "import click, rich.console, pydantic, yaml, regex"]).wall)
    pairs = sorted(d / i for d, i in zip(doc, imp))  # each run against the reference run next to it
    q1, q3 = pairs[len(pairs) // 4], pairs[3 * len(pairs) // 4]
    print(f"sglang-doctor small.log {statistics.median(doc) * 1000:.0f} ms; imports alone "
          f"{statistics.median(imp) * 1000:.0f} ms; ratio {statistics.median(doc) / statistics.median(imp):.2f} "
          f"(pairwise: median {statistics.median(pairs):.2f}, middle half {q1:.2f}-{q3:.2f})")


def cold_starts(small: Path, venvs: list[str]) -> None:
    cold_start(small, DOCTOR, sys.executable, "this install")
    for venv in venvs:
        cold_start(small, str(Path(venv) / "bin" / "sglang-doctor"), str(Path(venv) / "bin" / "python"), venv)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="0.256,1", help="big-log sizes in GB")
    ap.add_argument("--dir", default=None, help="where to write the logs (default: a temp dir)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the many-files and rule-scaling parts")
    ap.add_argument("--no-log-parser", action="store_true", help="skip SGLang's log_parser (polars)")
    ap.add_argument("--cold-only", action="store_true", help="only part 3 (cold start)")
    ap.add_argument("--also-venv", action="append", default=[], metavar="DIR",
                    help="also measure the cold start of the sglang-doctor installed in this virtualenv "
                         "(a regular install, say), against its own interpreter's imports")
    a = ap.parse_args()
    work = Path(a.dir or tempfile.mkdtemp(prefix="sgd-bench-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    WORK_DIR[0] = str(work)
    env = dict(os.environ, LC_ALL="C")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}; {load()}")
    from sglang_doctor.engine.scan import hyperscan_available

    print(f"stage-one scanner: {'hyperscan' if hyperscan_available() else 'none (pure Python path)'}")
    try:
        import sglang_doctor._speed._native  # noqa: F401
        native = "built (sglang_doctor/_speed/_native.c)"
    except ImportError:
        native = "not built (pure-Python decode statistics)"
    print(f"compiled block helpers: {native}")
    patterns = work / "patterns50.txt"
    print(f"reference: grep -E -c -f with {write_patterns(patterns, 50)} rule regexes as ERE "
          f"(of {write_patterns(work / 'patterns-all.txt')})")
    parser = None if a.no_log_parser else log_parser_setup(work)
    if isinstance(parser, str):
        print(f"SGLang log_parser: {parser}")
        parser = None
    elif parser:
        print(f"SGLang log_parser: {(work / 'log_parser.from').read_text()} with polars")

    small = work / "small.log"
    small.write_text(demo_text())
    if a.cold_only:
        cold_starts(small, a.also_venv)
        return
    want = findings_of(timed([DOCTOR, "--format", "json", str(small)]).out)

    print(f"\n1-2. throughput, memory, exact decode statistics (medians of {a.runs}; CPU = user + sys)")
    print(f"{'log':>6} {'doctor s':>9} {'cpu s':>6} {'grep s':>7} {'cpu s':>6} {'wall ratio':>10} {'MB/s':>5} "
          f"{'RSS MB':>6}  findings  decode = log_parser (its s, RSS MB)")
    largest = None
    for gb in [float(x) for x in a.sizes.split(",")]:
        big = work / f"big-{gb:g}g.log"
        if not big.exists() or big.stat().st_size < gb * 1e9 * 0.99:
            write_log(big, int(gb * 1e9))
        largest = big
        size_mb = big.stat().st_size / 1e6
        timed([DOCTOR, "--format", "json", str(big)])  # (the page cache, as for grep)
        d = median_of([DOCTOR, "--format", "json", str(big)], a.runs)
        g = median_of(["grep", "-E", "-c", "-f", str(patterns), str(big)], a.runs, env)
        same = findings_of(d.out) == want
        exact = "-"
        if parser:
            lp = timed([parser[0], str(LOG_PARSER_STATS), parser[1], str(big)])
            try:
                exact = f"{same_decode(decode_of(d.out), json.loads(lp.out))} ({lp.wall:.1f} s, {lp.rss} MB)"
            except (json.JSONDecodeError, KeyError):
                exact = "log_parser failed"
        print(f"{size_mb:5.0f}M {d.wall:9.2f} {d.cpu:6.2f} {g.wall:7.2f} {g.cpu:6.2f} {d.wall / g.wall:10.2f} "
              f"{size_mb / d.wall:5.0f} {d.rss:6d}  {same!s:8}  {exact}")
    print(f"   {load()}")

    print(f"\n2b. a server without CUDA graphs: every decode line is a decode-without-cuda-graph match "
          f"(medians of {a.runs})")
    pair = {}
    for graphs in (True, False):
        log = work / f"graphs-{'on' if graphs else 'off'}-32m.log"
        if not log.exists():
            write_log(log, 32_000_000, graphs=graphs)
        pair[graphs] = median_of([DOCTOR, "--format", "json", str(log)], a.runs)
    print(f"graphs off {pair[False].wall:.2f} s (CPU {pair[False].cpu:.2f} s) vs the same log with graphs on "
          f"{pair[True].wall:.2f} s (CPU {pair[True].cpu:.2f} s): {pair[False].wall / pair[True].wall:.2f} x")

    cold_starts(small, a.also_venv)

    from preflight_accuracy import perf

    print("\n4. preflight on a 60-shard model directory (headers only; best of 7, target 0.3 s)")
    for what, secs, ref, ref_secs in perf():
        print(f"{what} {secs:.3f} s; {ref} {ref_secs:.3f} s")

    print("\n5. --follow")
    lat = follow_latency(work)
    print(f"finding printed {statistics.median(lat):.2f} s after its last line was written (median of "
          f"{len(lat)}: {', '.join(f'{x:.2f}' for x in lat)}; target < 0.5 s)")
    if largest is not None:
        size_mb = largest.stat().st_size / 1e6
        f = median_of([DOCTOR, "-f", "--format", "json", "-"], a.runs, stdin=str(largest))
        b = median_of([DOCTOR, "--format", "json", str(largest)], a.runs)
        same = findings_of(f.out) == findings_of(b.out) and decode_of(f.out) == decode_of(b.out)
        print(f"backlog: `sglang-doctor -f - < {largest.name}` {f.wall:.2f} s ({size_mb / f.wall:.0f} MB/s, "
              f"RSS {f.rss} MB) vs the batch run {b.wall:.2f} s ({size_mb / b.wall:.0f} MB/s): "
              f"{b.wall / f.wall:.2f} x batch throughput; the same report: {same}")
    print(f"   {load()}")
    if a.quick:
        return

    print("\n6. many files: 200 x 1 MB vs 1 x 200 MB")
    many = work / "many"
    if not many.exists() or any(p.stat().st_size > 1_100_000 for p in many.glob("*.log")):
        shutil.rmtree(many, ignore_errors=True)
        many.mkdir()
        for i in range(200):
            write_log(many / f"{i:03d}.log", 1_000_000, seed=i)
    one = work / "one-200m.log"
    if not one.exists() or one.stat().st_size > 210_000_000:
        write_log(one, 200_000_000)
    files = sorted(str(p) for p in many.glob("*.log"))
    m_s = median_of([DOCTOR, "--format", "json", *files], a.runs).wall
    m1_s = median_of([DOCTOR, "--format", "json", "-j", "1", *files], a.runs).wall
    o_s = median_of([DOCTOR, "--format", "json", str(one)], a.runs).wall
    print(f"200 files {m_s:.2f} s (default: one worker per core), {m1_s:.2f} s with -j 1; one file {o_s:.2f} s; "
          f"ratio {m_s / o_s:.2f} (-j 1: {m1_s / o_s:.2f})")

    print("\n7. rule-count scaling on the largest log")
    syn = work / "rules-x10"
    if syn.exists():
        shutil.rmtree(syn)
    n = synthetic_rules(syn, 10)
    assert largest is not None
    base_s = median_of([DOCTOR, "--format", "json", str(largest)], a.runs).wall
    x10 = median_of([DOCTOR, "--format", "json", "--rules", str(syn), str(largest)], a.runs)
    print(f"shipped rules {base_s:.2f} s; +{n} synthetic rules {x10.wall:.2f} s; growth "
          f"{100 * (x10.wall / base_s - 1):.0f} %; findings unchanged: {findings_of(x10.out) == want}")
    print(f"   {load()}")


if __name__ == "__main__":
    main()
