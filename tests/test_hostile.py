"""Hostile input: whatever bytes arrive, the tool ends 0/1 with findings (or 2 with one line).

Fuzzing with Hypothesis (bounded: every property here has an explicit example budget, all
of them together well under a minute) of the reader, the record segmenter and the whole
CLI in-process, plus the fast path (Hyperscan over raw blocks) against the slow one on
generated multi-block inputs, and a few fixed giants (a 50 MB line, UTF-16 logs).
"""

from __future__ import annotations

import io
import json
import re
import signal
import time
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from sglang_doctor.engine import analyze as engine, scan
from sglang_doctor.read import reader
from sglang_doctor.cli.main import main
from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.launch.command import parse_command, render
from sglang_doctor.pipeline.run import Options, diagnose
from sglang_doctor.read.reader import Line, clean, iter_chunks, iter_lines_from_binary, lines_of_chunk
from sglang_doctor.read.records import MAX_RECORD_LINES, Segmenter, segment
from sglang_doctor.report import FORMATS
from sglang_doctor.engine.rules import builtin_rules_dir, load_rules
from sglang_doctor.launch.server_args import parse_server_args

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "sglang_doctor" / "fixtures" / "demo"
DEMO_LOG = (DEMO / "qwen3.6-27b-awq-dtype-crash.log").read_text()


def fuzz(examples: int) -> settings:
    """An explicit example budget per property: together they stay well under a minute."""
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


class Hang(Exception):
    pass


@contextmanager
def time_limit(seconds: float):
    """Fail (instead of hanging the suite) when the body runs longer than `seconds`."""
    def fire(signum, frame):
        raise Hang(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module", autouse=True)
def _isolated(tmp_path_factory):
    """An empty working directory (no config or baseline) and the built-in rules loaded once."""
    import sglang_doctor.engine.rules as rules_mod

    real = rules_mod.load_rules
    builtin = real()

    def cached(extra_dirs=None, builtin_=True, **kw):
        return list(builtin) if not extra_dirs and builtin_ else real(extra_dirs, builtin_, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        mp.setattr(rules_mod, "load_rules", cached)
        for var in ("GITHUB_STEP_SUMMARY", "NO_COLOR"):
            mp.delenv(var, raising=False)
        yield


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def cli(args, input=None):
    try:
        r = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2 keeps stderr apart already
        r = CliRunner()
    return r.invoke(main, [str(a) for a in args], input=input, catch_exceptions=True)


OUR_FRAME = re.compile(r'File "[^"]*sglang_doctor[/\\][^"]*\.py", line \d+')


def test_clean_exit_check_catches_a_crash_but_not_a_quoted_traceback():
    class R:
        exception, exit_code, stderr = None, 1, ""
        stdout = "demo.log:3 │ Traceback (most recent call last):\n"
    assert_clean_exit(R())
    R.stdout += 'Traceback (most recent call last):\n  File "/x/sglang_doctor/report/text.py", line 9, in w\n'
    with pytest.raises(AssertionError):
        assert_clean_exit(R())
    R.stdout = '  File "/x/site-packages/sglang_doctor/cli/main.py", line 3, in main\n'
    with pytest.raises(AssertionError):
        assert_clean_exit(R())


def assert_clean_exit(r, allowed=(0, 1), why=False):
    """Ended by sys.exit with an allowed status, no traceback anywhere, stderr lines all ours."""
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code in allowed, (r.exit_code, r.stderr[-500:])
    # The report may quote the log's own traceback (evidence; Markdown in a code block); a crash of the
    # tool is a traceback on stderr, or a frame in sglang_doctor's own files anywhere.
    assert not any(ln.startswith("Traceback (most recent call last)") for ln in r.stderr.splitlines()), r.stderr[-800:]
    for text in (r.stdout, r.stderr):
        assert not OUR_FRAME.search(text), text[-800:]
    for line in ([] if why else r.stderr.splitlines()):
        assert line.startswith(("sglang-doctor:", "No rule", "  ")), line


# --- vocabulary: real lines from the rule fixtures, traceback parts, noise ------------------------


def _fixture_lines() -> list[str]:
    out: list[str] = []
    for p in sorted(builtin_rules_dir().rglob("fires-*.log"))[::3]:
        for ln in p.read_text(encoding="utf-8", errors="replace").splitlines():
            if 0 < len(ln) < 400 and "Decode batch" not in ln and ln not in out:
                out.append(ln)
    return out


FIXTURE_LINES = _fixture_lines()
TB_PARTS = [
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2810, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
    "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "[2026-05-02 09:14:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "[2026-05-02 09:14:40 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    "    ...",
    "",
    # the shapes pasted logs add: a frame without its line number, rank tags, faulthandler's report,
    # threading's head, the recursion marker, an exception's continuation, a gap marker
    '  File "/x/sglang/srt/multiplex/pdmux_context.py", in get_arch_constraints',
    '[rank0]:   File "/x/a.py", line 6, in <module>',
    "[rank1]: ValueError: boom",
    "[rank1]:[E0502 09:24:33.512345678 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught",
    "Fatal Python error: Segmentation fault",
    "Current thread 0x00007f3b8c9f5740 (most recent call first):",
    '  File "/x/threading.py", line 324 in wait',
    "Exception in thread Thread-2 (worker):",
    "  [Previous line repeated 996 more times]",
    "/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:350",
    "  ValueError: Weight output_partition_size = 320 is not divisible by 128.",
    "# [...]",
]
NOISE = ["\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "\x1b[", "\r", "\r\n", "\x00", "\xff", "\ufeff", "\u2028",
         "server_args=ServerArgs(", "server_args={'a': ", "[" * 50, ")" * 50, "'", '"', "\\", "\t", "é", "→"]
line_text = st.one_of(
    st.sampled_from(FIXTURE_LINES), st.sampled_from(TB_PARTS), st.sampled_from(NOISE),
    st.text(max_size=80),
    st.lists(st.sampled_from(NOISE + TB_PARTS[:3] + ["x", " ", "Error", ":"]), max_size=8).map("".join),
)
log_text = st.lists(line_text, max_size=60).map("\n".join)


def _encode(text: str, how: str) -> bytes:
    if how == "utf-16":
        return text.encode("utf-16")  # with its BOM
    if how == "utf-16-be":
        return b"\xfe\xff" + text.encode("utf-16-be")
    if how == "cp1252":
        return text.encode("cp1252", errors="replace")
    return text.encode("utf-8", errors="surrogatepass")


log_bytes = st.one_of(
    st.binary(max_size=2000),
    st.tuples(log_text, st.sampled_from(["utf-8", "utf-16", "utf-16-be", "cp1252"])).map(lambda t: _encode(*t)),
    st.tuples(log_text, st.binary(max_size=40), st.integers(0, 4000)).map(
        lambda t: (b := t[0].encode("utf-8", "surrogatepass"))[:t[2]] + t[1] + b[t[2]:]),  # junk spliced in
)


# --- reader ---------------------------------------------------------------------------------------


@fuzz(150)
@given(data=st.binary(max_size=3000), chunk=st.integers(4, 64), cap=st.integers(1, 40))
def test_reader_numbers_every_line_once_whatever_the_bytes(data, chunk, cap):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reader, "CHUNK_SIZE", chunk)
        mp.setattr(reader, "MAX_LINE_CHARS", cap)
        blocks = list(iter_chunks(io.BytesIO(data)))
        lines = [ln for first, block in blocks for ln in lines_of_chunk(first, block)]
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    if body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return  # UTF-16: transcoded first (checked below)
    expected = body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)
    assert [ln.number for ln in lines] == list(range(1, expected + 1))
    for first, block in blocks:
        assert block.endswith(b"\n") and len(block) <= chunk + max(chunk, cap) + cap + 1
    for ln in lines:
        assert len(ln.text) <= cap
        assert not any(c in ln.text for c in "\x00\x1b\r\n\x7f"), ln


@fuzz(150)
@given(st.text(max_size=300).map(lambda t: t.replace("\n", "")))
def test_clean_leaves_no_control_characters(text):
    out = clean(text)
    assert not any(ord(c) < 32 and c != "\t" or c in "\x7f\ufeff" for c in out), repr(out)
    assert clean(out) == clean(out.replace("\x1b", ""))


@fuzz(60)
@given(log_text, st.sampled_from(["utf-16", "utf-16-be"]))
def test_utf16_with_bom_reads_like_utf8(text, how):
    text = text.replace("\r", "").replace("\x00", "").replace("\u2028", "").lstrip("\ufeff")
    plain = [ln.text for ln in iter_lines_from_binary(io.BytesIO(text.encode("utf-8", "replace")))]
    wide = [ln.text for ln in iter_lines_from_binary(io.BytesIO(_encode(text, how)))]
    assert wide == plain


# --- records --------------------------------------------------------------------------------------


FLATTENED_RAY = ("20' is not defined for option 'gpu-name' (SGLangWorker pid=38138) (SGLangWorker pid=38138) Possible "
                 "solutions: (SGLangWorker pid=38138) 1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7) "
                 "(SGLangWorker pid=38138) 2. set --cuda-graph-max-bs to a smaller value (e.g., 16) (SGLangWorker "
                 "pid=38138) 3. disable t")


@fuzz(150)
@given(st.lists(st.one_of(st.sampled_from(TB_PARTS), st.sampled_from(FIXTURE_LINES), st.text(max_size=30)),
                max_size=80))
# A Ray log a web page flattened into one line: each record it holds is fed as the line it was (its number).
@example(texts=[FLATTENED_RAY])
def test_segmenter_puts_every_line_in_exactly_one_record(texts):
    from sglang_doctor.read.flattened import split_flattened

    lines = [Line(i + 1, clean(t)) for i, t in enumerate(texts)]
    records = list(segment(lines))
    seen = [ln.number for rec in records for ln in rec.lines]
    assert sorted(set(seen)) == [ln.number for ln in lines]
    for ln in lines:  # (only a flattened paste's line is in more than one record: at most one a piece)
        if seen.count(ln.number) > 1:
            pieces = split_flattened(ln.text)
            assert pieces is not None and seen.count(ln.number) <= len(pieces), ln
    for rec in records:
        assert rec.lines and len(rec.lines) <= MAX_RECORD_LINES + 1
        assert rec.kind in ("line", "traceback")
        assert [ln.number for ln in rec.lines] == sorted(ln.number for ln in rec.lines)
        rec.text, rec.exception  # noqa: B018 - properties must not raise


def test_traceback_cut_before_its_exception_line_is_one_truncated_record():
    lines = [Line(i + 1, t) for i, t in enumerate(TB_PARTS[:4])]
    (rec,) = list(segment(lines))
    assert rec.kind == "traceback" and rec.truncated and rec.exception == ""


def test_runaway_traceback_is_bounded():
    seg = Segmenter()
    out = seg.feed(Line(1, TB_PARTS[0]))
    for i in range(2, MAX_RECORD_LINES * 3):
        out += seg.feed(Line(i, TB_PARTS[1]))
    out += seg.finish()
    assert all(len(r.lines) <= MAX_RECORD_LINES for r in out) and len(out) >= 3


# --- server_args and the command rewriter: the gaps in their own property tests ------------------

_nest = st.lists(st.sampled_from(["(", "[", "{", "<", ")", "]", "}", ">", "'", '"', ",", "=", ":", "A(", "x=1"]),
                 max_size=40)


@fuzz(80)
@given(_nest, st.integers(1, 5000))
def test_server_args_deep_and_unbalanced_nesting(tokens, depth):
    body = "".join(tokens)
    for line in (f"server_args=ServerArgs(a={body * depth}", f"server_args={{'a': {body * depth}, 'b': 1}}",
                 "server_args=ServerArgs(tp_size=2, x=" + "[(" * depth + body):
        with time_limit(10):
            r = parse_server_args(line)
        assert isinstance(r.fields, dict)


@fuzz(60)
@given(st.lists(st.sampled_from(["$(", ")", "`", "'", '"', "\\", "{", "}", "(", " ", "--x", "=", "bash -c "]),
                max_size=30), st.integers(1, 400))
def test_command_rewriter_deep_and_unbalanced(tokens, depth):
    text = "".join(tokens) * depth + " python3 -m sglang.launch_server --model-path m --tp-size 2"
    with time_limit(10):
        cmd = parse_command(text)
        if cmd is not None:
            render(apply_fixes(cmd, [])[0])


# --- the whole CLI, in-process --------------------------------------------------------------------

_FORMATS = st.sampled_from(list(FORMATS))


def _check_output(fmt: str, out: str) -> None:
    if fmt in ("json", "sarif"):
        json.loads(out)
    elif fmt == "junit":
        ET.fromstring(out)


@fuzz(250)
@given(data=log_bytes, fmt=_FORMATS, why=st.booleans(), small_blocks=st.booleans(),
       command=st.sampled_from(["check", "check", "check", "explain"]))
def test_cli_on_any_input_ends_0_or_1_without_a_traceback(data, fmt, why, small_blocks, command):
    args = [command, "--format", fmt, "--no-color"] + (["--why"] if why else [])
    with time_limit(20), pytest.MonkeyPatch.context() as mp:
        if small_blocks:  # blocks of 512 bytes: the fast path (scanner) runs on these inputs too
            mp.setattr(reader, "CHUNK_SIZE", 512)
            mp.setattr(engine, "SMALL_INPUT_BYTES", 256)
        r = cli(args, input=data)
    if command == "explain" and not data.decode("utf-8", "replace").strip():
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "nothing to explain" in r.stderr
        return
    if r.exit_code == 2 and ("empty input" in r.stderr or "needs `pip install" in r.stderr):
        # nothing but blanks and control bytes (or a cut archive), or an archive whose module is not installed
        assert_clean_exit(r, allowed=(2,), why=why)
        return
    assert_clean_exit(r, why=why)
    _check_output(fmt, r.stdout)


@fuzz(40)
@given(st.integers(0, len(DEMO_LOG.encode())), st.sampled_from(["", "\n", "\x00\xff", "\x1b[0m"]))
def test_cli_on_a_traceback_cut_anywhere(cut, tail):
    data = DEMO_LOG.encode()[:cut] + tail.encode("latin-1")
    with time_limit(20):
        r = cli(["--format", "json"], input=data)
    if not re.search(rb"\w", data.replace(b"\x1b[0m", b"")):
        assert_clean_exit(r, allowed=(2,))  # no text left (no letter or digit, an ANSI code aside): an empty input
        return
    assert_clean_exit(r)
    found = {f["code"] for f in json.loads(r.stdout)["findings"]}
    if cut == len(DEMO_LOG.encode()):
        assert "SGD401" in found


@fuzz(25)
@given(st.integers(1, 20000), st.sampled_from(["[", "(", "{'k': ", "A(x=", "<", "'", "(["]), st.booleans())
def test_cli_on_deeply_nested_server_args(depth, opener, close):
    closer = {"[": "]", "(": ")", "{'k': ": "}", "A(x=": ")", "<": ">", "'": "'", "([": "])"}[opener]
    line = ("[2026-05-02 09:14:03] server_args=ServerArgs(tp_size=2, a=" + opener * depth + "1"
            + (closer * depth + ", mem_fraction_static=0.5)" if close else ""))
    with time_limit(20):
        r = cli(["--format", "json"], input=(line + "\n" + DEMO_LOG).encode())
    assert_clean_exit(r)
    assert json.loads(r.stdout)["findings"]


def test_traceback_without_its_exception_line(tmp_path):
    text = "\n".join(DEMO_LOG.splitlines()[:33]) + "\n"  # the demo up to its last frame
    r = cli(["--format", "json", "-"], input=text)
    assert_clean_exit(r)
    assert "SGD401" not in {f["code"] for f in json.loads(r.stdout)["findings"]}


@pytest.mark.parametrize("data", [b"", b"\n\n\n", b"\x00" * 1000, b"\r" * 1000, b"\xff\xfe", b"\xef\xbb\xbf"],
                         ids=["empty", "newlines", "nuls", "crs", "bom-only", "utf8-bom-only"])
def test_empty_and_blank_inputs(data):
    r = cli(["--no-color"], input=data)
    assert_clean_exit(r, allowed=(2,))
    assert "empty input" in r.stderr


def test_fifty_megabyte_single_line(tmp_path):
    import tracemalloc

    big = tmp_path / "one-line.log"
    with open(big, "wb") as fh:
        fh.write(DEMO_LOG.encode())
        fh.write(b"[2026-05-02 09:15:00] " + b"x" * (50 * 1024 * 1024) + b" RuntimeError: boom\n")
        fh.write(b"[2026-05-02 09:15:01] after the giant line\n")
    tracemalloc.start()
    t0 = time.perf_counter()
    with time_limit(60):
        r = cli(["--format", "json", big])
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert_clean_exit(r)
    rep = json.loads(r.stdout)
    assert "SGD401" in {f["code"] for f in rep["findings"]}
    assert rep["inputs"][0]["lines"] == DEMO_LOG.count("\n") + 2
    assert peak < 40 * 1024 * 1024, peak  # blocks of 1 MB and one cut line, never the 50 MB
    assert elapsed < 30, elapsed


# --- the fast path (Hyperscan over raw blocks) equals the slow one ------------------------------

needs_hs = pytest.mark.skipif(not scan.hyperscan_available(), reason="hyperscan wheel not importable")
FILLER = "[2026-05-02 09:20:{:02d}] INFO:     172.17.0.9:4711 - \"POST /generate HTTP/1.1\" 200 OK"


def _key(run):
    return [(f.rule, f.severity, [(e.line, e.text) for e in f.evidence], f.occurrences) for f in run.report.findings]


@needs_hs
@fuzz(150)
@given(st.lists(st.one_of(st.sampled_from(FIXTURE_LINES), st.sampled_from(TB_PARTS),
                          st.integers(1, 400).map(lambda n: "\n".join(FILLER.format(i % 60) for i in range(n)))),
                min_size=1, max_size=40).map("\n".join))
# a log that ends in a line no rule reads: both paths know it as the last line (a stall reads it)
@example(text="[2026-01-20 03:40:11] server_args=ServerArgs(model_path='Qwen/Qwen3-32B', tp_size=2, page_size=1)\n"
              "[rank1]: Killed")
# a sign of failure on a line no rule reads, in the middle of a block: the scanner lets it through
@example(text="[2026-01-20 03:40:11] server_args=ServerArgs(model_path='Qwen/Qwen3-32B', tp_size=2, page_size=1)\n"
              "[rank1]: Killed\n" + "\n".join(FILLER.format(i % 60) for i in range(60)))
@example(text="[2026-01-20 03:40:11] Capture target decode CUDA graph begin. backend=full, num_tokens_per_bs=1, "
              "bs=[1, 2, 4, 8, 12, 16, 24], avail mem=5.12 GB\nnvcc -O3 -c moe_kernel.cu (compiling the JIT kernel)")
@example(text="[2026-01-20 03:40:11] Capture target decode CUDA graph begin. backend=full, num_tokens_per_bs=1, "
              "bs=[1, 2, 4, 8, 12, 16, 24], avail mem=5.12 GB\nCompile with `TORCH_USE_HIP_DSA` to enable device-side assertions.")
def test_fast_path_equals_slow_path_on_generated_multi_block_logs(rules, tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fs") / "gen.log"
    path.write_text(text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:  # blocks of 8 KB: many block boundaries per example
        mp.setattr(reader, "CHUNK_SIZE", 8 * 1024)
        mp.setattr(engine, "SMALL_INPUT_BYTES", 2 * 1024)
        fast = diagnose([str(path)], rules, Options(fast=True))
        slow = diagnose([str(path)], rules, Options(fast=False))
    assert _key(fast) == _key(slow)
    if not slow.results:  # an empty input: an input error on both paths
        assert not fast.results and fast.errors == slow.errors
        return
    event("fast path" if fast.results[0].slow_lines < slow.results[0].slow_lines else "slow path only")


@needs_hs
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_fast_path_equals_slow_path_at_real_block_sizes(rules, tmp_path, encoding):
    """Over 256 KB: three blocks of 1 MB, and the crash traceback straddles the first boundary."""
    demo = DEMO_LOG.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(demo) if "Traceback" in ln)
    head, crash = "".join(demo[:at]), "".join(demo[at:])
    line = FILLER.format(7) + "\n"
    block = 1 << 20 if encoding == "utf-8" else 1 << 19  # UTF-16 is read 1 MB at a time, half that as UTF-8
    n = (block - len(head) - len(crash) // 2) // len(line)
    text = head + line * n + crash + line * (2 * block // len(line))
    assert len(head) + n * len(line) < block < len(head) + n * len(line) + len(crash)
    path = tmp_path / "big.log"
    path.write_bytes(text.encode(encoding))
    fast = diagnose([str(path)], rules, Options(fast=True))
    slow = diagnose([str(path)], rules, Options(fast=False))
    assert _key(fast) == _key(slow)
    assert fast.results[0].slow_lines < slow.results[0].slow_lines / 10
    assert fast.report.findings[0].code == "SGD401"


def test_a_bug_in_the_tool_is_one_line_unless_debugging(monkeypatch, demo_dir):
    import sglang_doctor.pipeline.run as doctor

    def broken(*a, **k):
        raise RuntimeError("something inside broke")

    monkeypatch.setattr(doctor, "diagnose", broken)
    r = cli([str(demo_dir / "qwen3.6-27b-awq-dtype-crash.log")])
    assert r.exit_code == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and "internal error: RuntimeError: something inside broke" in r.stderr
    monkeypatch.setenv("SGLANG_DOCTOR_DEBUG", "1")
    r = cli([str(demo_dir / "qwen3.6-27b-awq-dtype-crash.log")])
    assert isinstance(r.exception, RuntimeError)  # the real exception, for a bug report
