"""Speed benchmark: every figure beside a reference measured in the same run.

    .venv/bin/python bench/run.py                 # 100 MB, 1 GB and 2 GB logs (needs ~4 GB in --dir)
    .venv/bin/python bench/run.py --sizes 0.1,0.5 --quick

Prints, for this machine:
  1. throughput: `sglang-doctor --format json big.log` vs `LC_ALL=C grep -E -c -f patterns.txt big.log`
     (patterns.txt = every shipped rule regex translated to POSIX ERE);
  2. peak RSS per log size;
  3. cold start on a 10 KB startup log vs `python -c "import click, rich.console, pydantic, yaml, regex"`;
  4. 200 logs of 1 MB in one invocation vs one 200 MB log;
  5. rule-count scaling: the shipped rules vs 10x as many (synthetic extra rules);
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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from genlog import demo_text, write_log  # noqa: E402

BIN = Path(sys.executable).parent
DOCTOR = str(BIN / "sglang-doctor")


WORK_DIR: list[str | None] = [None]  # set by main(): where the generated logs are


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (MB) and stdout of one process."""
    t0 = time.perf_counter()
    # Run from the logs' directory, as a user would: not from this repository, whose own
    # pyproject.toml names the tool (and would be parsed looking for its settings).
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=WORK_DIR[0])
    out = proc.stdout.read().decode() if proc.stdout else ""
    _, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return wall, int(usage.ru_maxrss / 1024), out


def best(cmd: list[str], runs: int, env: dict[str, str] | None = None) -> tuple[float, int, str]:
    results = [timed(cmd, env) for _ in range(runs)]
    return min(r[0] for r in results), max(r[1] for r in results), results[-1][2]


def findings_of(out: str) -> list[tuple[str, str]]:
    data = json.loads(out)
    return [(f["rule"], f["severity"]) for f in data["findings"]]


def write_patterns(path: Path) -> int:
    from sglang_doctor.engine.ere import to_ere
    from sglang_doctor.engine.rules import load_rules

    pats = [e for r in load_rules() for p in r.match.any if (e := to_ere(p.regex))]
    path.write_text("\n".join(pats) + "\n")
    return len(pats)


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="0.1,1,2", help="big-log sizes in GB")
    ap.add_argument("--dir", default=None, help="where to write the logs (default: a temp dir)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the many-files and rule-scaling parts")
    a = ap.parse_args()
    work = Path(a.dir or tempfile.mkdtemp(prefix="sgd-bench-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    WORK_DIR[0] = str(work)
    env = dict(os.environ, LC_ALL="C")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}, load average "
          f"{os.getloadavg()[0]:.1f} (other work on the machine slows every figure, the references too)")
    from sglang_doctor.engine.scan import hyperscan_available

    print(f"stage-one scanner: {'hyperscan' if hyperscan_available() else 'none (pure Python path)'}")
    patterns = work / "patterns.txt"
    print(f"reference patterns: {write_patterns(patterns)} rule regexes as ERE")

    small = work / "small.log"
    small.write_text(demo_text())
    want = findings_of(timed([DOCTOR, "--format", "json", str(small)])[2])

    print("\n1-2. throughput and memory (best of runs; RSS = peak)")
    print(f"{'log':>8} {'doctor s':>9} {'grep s':>8} {'ratio':>6} {'MB/s':>7} {'RSS MB':>7}  findings = small log's")
    for gb in [float(x) for x in a.sizes.split(",")]:
        big = work / f"big-{gb:g}g.log"
        if not big.exists() or big.stat().st_size < gb * 1e9 * 0.99:
            write_log(big, int(gb * 1e9))
        size_mb = big.stat().st_size / 1e6
        d_s, d_rss, out = best([DOCTOR, "--format", "json", str(big)], a.runs)
        g_s, _, _ = best(["grep", "-E", "-c", "-f", str(patterns), str(big)], a.runs, env)
        same = findings_of(out) == want
        print(f"{size_mb:7.0f}M {d_s:9.2f} {g_s:8.2f} {d_s / g_s:6.2f} {size_mb / d_s:7.0f} {d_rss:7d}  {same}")

    # A pip install byte-compiles the package; an editable one (or PYTHONDONTWRITEBYTECODE)
    # may not have: compile it first, or the figure is the cost of compiling our sources.
    import sglang_doctor

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(sglang_doctor.__file__).parent)],
                   stdout=subprocess.DEVNULL, env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    timed([DOCTOR, str(small)])  # the validated-rules cache, as after any first run
    print("\n3. cold start (median of 25, the two commands alternating: a busy moment hits both)")
    doc, imp = [], []
    for _ in range(25):
        doc.append(timed([DOCTOR, str(small)])[0])
        imp.append(timed([sys.executable, "-c", "import click, rich.console, pydantic, yaml, regex"])[0])
    print(f"sglang-doctor small.log {statistics.median(doc) * 1000:.0f} ms; imports alone "
          f"{statistics.median(imp) * 1000:.0f} ms; ratio {statistics.median(doc) / statistics.median(imp):.2f}")
    if a.quick:
        return

    print("\n4. many files: 200 x 1 MB vs 1 x 200 MB")
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
    m_s, _, _ = best([DOCTOR, "--format", "json", *files], a.runs)
    m1_s, _, _ = best([DOCTOR, "--format", "json", "-j", "1", *files], a.runs)
    m2_s, _, _ = best([DOCTOR, "--format", "json", "-j", "2", *files], a.runs)
    o_s, _, _ = best([DOCTOR, "--format", "json", str(one)], a.runs)
    print(f"200 files {m_s:.2f} s (default -j), {m1_s:.2f} s with -j 1, {m2_s:.2f} s with -j 2; one file {o_s:.2f} s; "
          f"ratio {m_s / o_s:.2f} (-j 1: {m1_s / o_s:.2f}, -j 2: {m2_s / o_s:.2f})")

    print(f"\n5. rule-count scaling on the largest log (load average now {os.getloadavg()[0]:.1f})")
    syn = work / "rules-x10"
    if syn.exists():
        shutil.rmtree(syn)
    n = synthetic_rules(syn, 10)
    largest = max(work.glob("big-*.log"), key=lambda p: p.stat().st_size)
    base_s, _, _ = best([DOCTOR, "--format", "json", str(largest)], a.runs)
    x10_s, _, out = best([DOCTOR, "--format", "json", "--rules", str(syn), str(largest)], a.runs)
    print(f"shipped rules {base_s:.2f} s; +{n} synthetic rules {x10_s:.2f} s; growth {100 * (x10_s / base_s - 1):.0f} %"
          f"; findings unchanged: {findings_of(out) == want}")


if __name__ == "__main__":
    main()
