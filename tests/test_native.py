"""The compiled helpers (sglang_doctor/_speed/_native.c) equal the pure-Python code they stand in for: the
decode scan reads a block exactly as the pure path's regexes do (the same throughputs, peaks and first
CUDA-graph lines, on any text), the summary of a log is the same on both paths, and newline counts are
bytes.count's."""

from __future__ import annotations

import os
import random
import shutil
import sys
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sglang_doctor import _speed
from sglang_doctor.facts.decode import _CENTS_FORM, _QUEUE, _TP, _USAGE, GRAPH_LITERALS, DecodeStats, _number
from sglang_doctor.read import reader


def _compiled() -> object | None:
    """The compiled helpers this suite runs against: the imported package's, else (conftest puts the source
    tree first on sys.path, and a regular install builds them only into site-packages: CI) the install's."""
    try:
        from sglang_doctor._speed import _native as module

        return module
    except ImportError:
        pass
    import glob
    import importlib.util
    import sysconfig

    for lib in dict.fromkeys(sysconfig.get_paths()[k] for k in ("platlib", "purelib")):
        for path in sorted(glob.glob(os.path.join(lib, "sglang_doctor", "_speed", "_native*"))):
            if path.endswith((".so", ".pyd")):
                spec = importlib.util.spec_from_file_location("sglang_doctor._speed._native", path)
                module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
                spec.loader.exec_module(module)  # type: ignore[union-attr]
                return module
    return None  # (a build without a C compiler: the pure path alone)


_native = _compiled()
scan = getattr(_native, "decode_scan", None)

needs_scan = pytest.mark.skipif(scan is None, reason="the compiled decode scan is not built here")


def test_the_compiled_scan_is_built_where_a_compiler_is():
    """setup.py builds it optionally: a silently failed build would leave only the slow path."""
    if not sys.platform.startswith("linux") or not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here: the pure path is the product")
    if os.environ.get("SGLANG_DOCTOR_PURE"):
        pytest.skip("built pure on purpose")
    assert scan is not None


_NUMBERS = st.one_of(st.from_regex(r"[0-9]{1,3}\.[0-9]{2}", fullmatch=True), st.from_regex(r"[0-9.]{1,7}", fullmatch=True),
                    st.sampled_from(["0", "7", "00", "1.2.3", ".", "5.", ".5", "9" * 320, "0" * 40 + "7.25",
                                     "20971.52", "20971.51", "123456789012345678901.00"]))
_DIGITS = st.one_of(st.from_regex(r"[0-9]{1,4}", fullmatch=True), st.just(""), st.just("x"))


@st.composite
def _decode_line(draw: st.DrawFn) -> str:
    """A decode line of any release's shape, each part possibly changed or left out (a near miss)."""
    parts = ["Decode batch", draw(st.sampled_from(["", " [3]", " [", " []", " [3"])),
             draw(st.sampled_from([",", ".", ";"])), " #running-req: ", draw(_DIGITS), ", #",
             draw(st.sampled_from(["", "full ", "gpu ", "swa ", "fullgpu "])), "token: ", draw(_DIGITS), ", ",
             draw(st.sampled_from(["", "full ", "gpu ", "mamba "])), "token usage: ", draw(_NUMBERS),
             ", cuda graph: ", draw(st.sampled_from(["True", "False", "true"])), ", ",
             "gen throughput (token/s): ", draw(_NUMBERS), draw(st.sampled_from([", #queue-req: ", ", #queue-req:", ""])),
             draw(_DIGITS), ", "]
    for _ in range(draw(st.integers(0, 2))):
        del parts[draw(st.integers(0, len(parts) - 1))]
    return "".join(parts)


def _texts() -> st.SearchStrategy[bytes]:
    line = st.one_of(_decode_line(), _decode_line(), st.sampled_from(["", "x", "gen throughput (token/s): "]))
    return st.lists(line, max_size=12).flatmap(
        lambda xs: st.sampled_from(["\n", "", " "]).map(lambda sep: sep.join(xs).encode()))


def _reference(block: bytes, lo: int, hi: int, size: int) -> tuple[list[int], list[bytes], float | None,
                                                                      float | None, list[int]]:
    """What the pure path's regexes read from block[lo:hi]: counts by hundredths (those below `size`),
    the other throughput texts, the usage and queue peaks (as floats) and the graph literals' offsets."""
    counts, others = [0] * size, []
    for text in _TP.findall(block, lo, hi):
        cents = int(text.replace(b".", b"")) if _CENTS_FORM.fullmatch(text) else size
        if cents < size:
            counts[cents] += 1
        else:
            others.append(text)

    def peak(texts: list[bytes]) -> float | None:
        values = [v for t in texts if (v := _number(t)) is not None]
        return max(values) if values else None

    graphs = [block.find(GRAPH_LITERALS[flag], lo, hi) for flag in (False, True)]
    return counts, others, peak(_USAGE.findall(block, lo, hi)), peak(_QUEUE.findall(block, lo, hi)), graphs


@needs_scan
@settings(max_examples=400, deadline=None)
@given(_texts(), st.integers(0, 70), st.integers(-40, 10), st.sampled_from([0, 1, 2000, 1 << 21]))
def test_the_scan_reads_any_text_as_the_regexes_do(block, lo, hi_from_end, size):
    lo = min(lo, len(block))
    hi = max(lo, len(block) + min(0, hi_from_end))
    cells = array("Q", bytes(8 * size))
    others, usage, queue, off, on = scan(block, lo, hi, cells)
    counts, want_others, want_usage, want_queue, graphs = _reference(block, lo, hi, size)
    assert list(cells) == counts
    assert others == want_others
    assert (_number(usage) if usage is not None else None) == want_usage
    assert (_number(queue) if queue is not None else None) == want_queue
    assert [off, on] == graphs


@needs_scan
def test_the_scan_refuses_a_counts_buffer_of_other_cells():
    with pytest.raises(ValueError, match="8-byte counts"):
        scan(b"gen throughput (token/s): 1.00", 0, 30, array("I", [0, 0]))


def _serving_log(rng: random.Random, n: int) -> bytes:
    lines = []
    for i in range(n):
        tp = f"{rng.lognormvariate(5, 1.2):.2f}" if rng.random() < 0.97 else rng.choice(["1e3", "12.5", "7"])
        pools = rng.choice(["#token: 90, token usage: 0.{:02d}", "#full token: 9, full token usage: 0.{:02d}"])
        dp = rng.choice(["", " [2]"])
        lines.append(f"[2026-05-02 10:00:00 TP0] Decode batch{dp}, #running-req: 3, "
                     + pools.format(rng.randrange(100))
                     + f", cuda graph: {rng.choice(['True', 'True', 'False'])}, gen throughput (token/s): {tp}, "
                     f"#queue-req: {rng.randrange(500)}, ")
        if rng.random() < 0.2:
            lines.append("[2026-05-02 10:00:00] Prefill batch, #new-seq: 1, token usage: 0.99, #queue-req: 999")
    return ("\n".join(lines) + "\n").encode()


def _summary(text: bytes, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setattr(_speed, "_NATIVE", [_native if compiled else None])
    s = DecodeStats()
    step, first = 1 << 14, 1
    pos = 0
    while pos < len(text):
        end = text.find(b"\n", pos + step) + 1 or len(text)
        s.add_block(text, first, pos, end)
        first += text.count(b"\n", pos, end)
        pos = end
    return {**s.summary(), "graph": dict(s.graph_line)}


@needs_scan
@pytest.mark.parametrize("seed", [1, 2])
def test_a_log_summarises_the_same_on_both_paths(seed, monkeypatch):
    text = _serving_log(random.Random(seed), 90_000 if seed == 1 else 400)  # (past DENSE_AFTER, and sparse)
    compiled = _summary(text, True, monkeypatch)
    assert compiled == _summary(text, False, monkeypatch)
    assert compiled["lines"] == text.count(b"Decode batch")


def _usage_line(usage: str, queue: str) -> str:
    return (f"Decode batch, #running-req: 3, #token: 9, token usage: {usage}, cuda graph: True, "
            f"gen throughput (token/s): 1.00, #queue-req: {queue}, ")


@needs_scan
@pytest.mark.parametrize("values", [["0.91", "0.95", "0.93"], ["0.95", "0.9500001", "0.95"], ["007", "7", "70"],
                                    ["9" * 320, "12"], ["9" * 300, "9" * 301], ["1" + "0" * 308, "5"],
                                    ["1.2.3", "0.5"], [".", "5."], ["0.10", "0.1"]])
def test_the_peaks_are_the_largest_numbers_float_reads(values):
    """Close fractions, leading zeros, float's overflow (a 309-digit value is finite, 320 digits are not)."""
    block = "\n".join(_usage_line(v, v.replace(".", "") or "0") for v in values).encode()
    _, usage, queue, _, _ = scan(block, 0, len(block), array("Q"))
    _, _, want_usage, want_queue, _ = _reference(block, 0, len(block), 0)
    assert (_number(usage) if usage is not None else None) == want_usage
    assert (_number(queue) if queue is not None else None) == want_queue


@needs_scan
def test_a_graph_literal_that_starts_before_the_stretch_is_not_in_it():
    block = b"x, cuda graph: True, gen throughput (token/s): 1.00\ncuda graph: True, gen throughput (token/s): 2.00\n"
    for lo in range(0, 30):
        assert list(scan(block, lo, len(block), array("Q"))[3:]) == _reference(block, lo, len(block), 0)[4]


@needs_scan
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_newline_counts_are_bytes_counts(block):
    assert _native.newlines(block) == block.count(b"\n") == reader.newlines(block)


@needs_scan
def test_the_reader_counts_lines_the_same_with_the_compiled_counter(tmp_path, monkeypatch):
    """Past the first block the reader counts with the compiled helper: block line numbers stay those of
    the pure count (blocks of whole lines, the last without a newline)."""
    import io

    text = b"".join(b"line %d " % i + b"x" * (i % 300) + b"\n" for i in range(40_000)) + b"tail"
    firsts = {}
    for compiled in (True, False):
        monkeypatch.setattr(_speed, "_NATIVE", [_native if compiled else None])
        firsts[compiled] = [first for first, _ in reader.iter_chunks(io.BufferedReader(io.BytesIO(text)))]
    assert len(firsts[True]) > 3 and firsts[True] == firsts[False]
