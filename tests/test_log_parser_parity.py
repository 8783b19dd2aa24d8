"""The startup summary's decode statistics equal what SGLang's own tool gives on the same log.

SGLang ships `srt/debug_utils/log_parser.py`: `parse(text)` reads the `Decode batch` lines into a
polars DataFrame. This test takes that file from the newest sglang release on PyPI (`pip download
--no-deps sglang`), runs it with polars in a virtualenv of its own (kept in pytest's cache between
runs), and compares: line count, median, p10 and p90 (polars' `median()` and `quantile(q,
interpolation="linear")`), the peak token usage and queue. Marker `realconsumer`: it needs the
package registry (it is skipped, saying why, when pip cannot reach it).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.realconsumer

SCRIPT = Path(sys.executable).parent / "sglang-doctor"
LOG_PARSER = "sglang/srt/debug_utils/log_parser.py"
STATS = Path(__file__).resolve().parent.parent / "tools" / "log_parser_stats.py"


def _pip(python: Path, *args: str) -> None:
    out = subprocess.run([str(python), "-m", "pip", "-q", *args], capture_output=True, text=True, timeout=900)
    if out.returncode:
        pytest.skip(f"pip {args[0]} failed (no package registry here?): {out.stderr.strip()[-300:]}")


@pytest.fixture(scope="module")
def log_parser(request) -> tuple[Path, Path]:
    """(python with polars, SGLang's log_parser.py), built once and kept in pytest's cache."""
    cache = getattr(request.config, "cache", None)  # (None under -p no:cacheprovider)
    home = Path(cache.mkdir("log-parser")) if cache is not None else Path.home() / ".cache" / "sglang-doctor-tests" / "log-parser"
    home.mkdir(parents=True, exist_ok=True)
    venv = home / "venv"
    python = venv / "bin" / "python"
    if not (home / "venv.ok").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
        _pip(python, "install", "polars")
        (home / "venv.ok").write_text("")
    parser = home / "log_parser.py"
    if not parser.exists():
        wheels = home / "wheels"
        _pip(python, "download", "--no-deps", "sglang", "-d", str(wheels))
        archive = next(p for p in sorted(wheels.iterdir()) if p.name.startswith("sglang"))
        if archive.suffix == ".whl":
            with zipfile.ZipFile(archive) as z:
                parser.write_bytes(z.read(LOG_PARSER))
        else:  # an sdist: python/sglang/srt/debug_utils/log_parser.py under the top folder
            with tarfile.open(archive) as t:
                member = next(m for m in t.getmembers() if m.name.endswith(LOG_PARSER))
                parser.write_bytes(t.extractfile(member).read())  # type: ignore[union-attr]
        (home / "from.txt").write_text(archive.name)
    return python, parser


def _serving_log(path: Path, n: int, seed: int) -> None:
    """Decode lines as SGLang prints them (the comma after #queue-req that log_parser's pattern wants),
    with prefill and access lines between them, and stalls among the throughputs."""
    rng = random.Random(seed)
    out = ["[2026-05-02 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=2, dp_size=2)",
           "[2026-05-02 10:00:05] The server is fired up and ready to roll!"]
    for i in range(n):
        ts = f"2026-05-02 {10 + i // 3600 % 12:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        dp = rng.randrange(2)
        tp = rng.lognormvariate(6.1, 0.5) if rng.random() > 0.02 else rng.uniform(0.01, 3)
        usage = rng.uniform(0.01, 0.97)
        out.append(f"[{ts} DP{dp} TP{dp}] Decode batch, #running-req: {rng.randrange(1, 64)}, #token: "
                   f"{int(usage * 90000)}, token usage: {usage:.2f}, cuda graph: True, gen throughput (token/s): "
                   f"{tp:.2f}, #queue-req: {rng.choice([0, 0, 0, rng.randrange(1, 60)])}, ")
        if rng.random() < 0.3:
            out.append(f"[{ts} DP{dp} TP{dp}] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, "
                       f"token usage: 0.99, #running-req: 3, #queue-req: 99, cuda graph: False, "
                       f"input throughput (token/s): 4000.00")
        if rng.random() < 0.2:
            out.append(f'[{ts}] INFO:     172.17.0.2:41000 - "POST /v1/chat/completions HTTP/1.1" 200 OK')
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def _ours(log: Path) -> dict:
    out = subprocess.run([str(SCRIPT), "--format", "json", str(log)], capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr
    report = json.loads(out.stdout)
    d = report["startup"]["decode_throughput"]
    facts = report["context"]["decode"]
    return {"lines": d["lines"], "median": d["median"], "p10": d["p10"], "p90": d["p90"],
            "usage_peak": facts["token_usage_peak"], "queue_peak": facts["queue_peak"]}


def _theirs(log_parser: tuple[Path, Path], log: Path) -> dict:
    python, parser = log_parser
    out = subprocess.run([str(python), str(STATS), str(parser), str(log)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "POLARS_MAX_THREADS": "2"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("n, seed", [(2, 1), (2000, 2), (120_000, 3)])  # (the last: > 256 KB, the block path)
def test_decode_statistics_equal_sglang_log_parser(log_parser, tmp_path, n, seed):
    log = tmp_path / f"serving-{n}.log"
    _serving_log(log, n, seed)
    ours, theirs = _ours(log), _theirs(log_parser, log)
    assert ours["lines"] == theirs["lines"] == n
    for key in ("median", "p10", "p90", "usage_peak"):
        assert ours[key] == pytest.approx(theirs[key], abs=1e-6), key
    assert ours["queue_peak"] == theirs["queue_peak"]
