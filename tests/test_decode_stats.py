"""Decode statistics are exact: every `Decode batch` line counts, the same on the line path, the block
path, a big file split over two processes and --follow; quantiles are linear between order statistics
(numpy's and polars' "linear"), the median their 0.5 quantile."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sglang_doctor.facts import decode
from sglang_doctor.facts.decode import DecodeStats, greater_than
from sglang_doctor.pipeline import split
from sglang_doctor.pipeline.follow import Follower
from sglang_doctor.pipeline.run import Options, diagnose


def _linear(values: list[float], q: float) -> float:
    """The reference: numpy's default percentile on the sorted values."""
    xs = sorted(values)
    h = (len(xs) - 1) * q
    lo = int(h)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (h - lo)


def _line(tp: str, ts: int = 0, usage: str = "0.42", queue: int | None = 0, graph: str = "True",
          shape: str = "plain", rank: str = " DP0 TP0") -> str:
    head = f"[2026-05-02 10:{ts // 60 % 60:02d}:{ts % 60:02d}{rank}] "
    pools = {"plain": f"#token: 9000, token usage: {usage}",
             "hybrid": f"#full token: 9000, full token usage: {usage}, mamba num: 5, mamba usage: 0.10",
             "swa": f"#full token: 9000, full token usage: {usage}, #swa token: 10, swa token usage: 0.99"}[shape]
    q = f", #queue-req: {queue}" if queue is not None else ""
    return f"{head}Decode batch, #running-req: 3, {pools}, cuda graph: {graph}, gen throughput (token/s): {tp}{q}, "


def _stats_by_lines(lines: list[str]) -> dict:
    s = DecodeStats()
    for i, ln in enumerate(lines, 1):
        s.add_line(ln, i)
    return {**s.summary(), "graph": dict(s.graph_line)}


def _stats_by_block(text: bytes, cuts: list[int]) -> dict:
    """The block path over `text`, cut at line starts into stretches of one block and several blocks."""
    s = DecodeStats()
    first, start = 1, 0
    for cut in [*cuts, len(text)]:
        block = text[start:cut]
        mid = block.find(b"\n", len(block) // 2) + 1 or len(block)
        s.add_block(block, first, 0, mid)  # (two stretches of one block)
        s.add_block(block, first, mid)
        first += block.count(b"\n")
        start = cut
    return {**s.summary(), "graph": dict(s.graph_line)}


def test_two_values_have_consistent_percentiles():
    s = DecodeStats()
    s.add_line(_line("0.11"), 1)
    s.add_line(_line("128.44"), 2)
    got = s.summary()
    assert (got["p10"], got["median"], got["p90"]) == (12.943, 64.275, 115.607)
    assert got["p10"] <= got["median"] <= got["p90"] and got["lines"] == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=300_00), min_size=1, max_size=300))
def test_quantiles_equal_the_linear_definition(cents):
    values = [c / 100 for c in cents]
    s = DecodeStats()
    for i, v in enumerate(values, 1):
        s.add_line(_line(f"{v:.2f}"), i)
    got = s.summary()
    for name, q in (("p10", 0.1), ("median", 0.5), ("p90", 0.9)):
        assert got[name] == pytest.approx(_linear(values, q), abs=1e-6), name
    assert got["lines"] == len(values)


def _mixed_log(rng: random.Random, n: int) -> list[str]:
    out = []
    for i in range(n):
        r = rng.random()
        tp = f"{rng.lognormvariate(6, 0.6):.2f}"
        if r < 0.6:
            out.append(_line(tp, i, f"{rng.uniform(0, 1):.2f}", rng.choice([0, 0, 0, rng.randrange(1, 300)]),
                             rng.choice(["True"] * 30 + ["False"]), rng.choice(["plain", "hybrid", "swa"])))
        elif r < 0.65:  # 0.4.x: `Decode batch.` and no graph field
            out.append(f"[2026-05-02 10:00:00] Decode batch. #running-req: 1, #token: 19, token usage: "
                       f"{rng.uniform(0, 1):.2f}, gen throughput (token/s): {tp}, #queue-req: {rng.randrange(5)}")
        elif r < 0.7:  # 0.5.23 with LOG_FORWARD_ITERS, no queue after the number on a cut line
            out.append(f"[2026-05-02 10:00:00 TP1] Decode batch [{i}], #running-req: 2, #token: 5, token usage: 0.50, "
                       f"cuda graph: True, gen throughput (token/s): {tp}")
        elif r < 0.75:
            out.append(f"[2026-05-02 10:00:00] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, "
                       f"token usage: 0.99, #running-req: 0, #queue-req: 999, cuda graph: False, input throughput "
                       f"(token/s): 1.00")
        elif r < 0.78:
            out.append("gen throughput (token/s): 1.2.3, #queue-req: 7")  # not a number: left out on both paths
        else:
            out.append(f'[2026-05-02 10:00:00] INFO:     172.17.0.3:4000 - "POST /generate HTTP/1.1" 200 OK')
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_block_path_equals_line_path(seed, monkeypatch):
    rng = random.Random(seed)
    lines = _mixed_log(rng, 3000)
    if seed > 1:  # the peak probe (a short input reads every line), then its fallback (many hits) too
        monkeypatch.setattr(decode, "PROBE_AFTER", 0)
    if seed == 2:
        monkeypatch.setattr(decode, "PROBE_HITS", 3)
    text = ("\n".join(lines) + "\n").encode()
    starts = [m.end() for m in re.finditer(b"\n", text)]
    cuts = sorted(rng.sample(starts[:-1], 7))
    assert _stats_by_block(text, cuts) == _stats_by_lines(lines)


def test_escapes_and_carriage_returns_read_as_the_line_reader_does():
    lines = [_line("10.00"), "\x1b[32m" + _line("20.00", queue=70) + "\x1b[0m", "progress\r" + _line("30.00"),
             _line("40.00") + "\r"]
    text = ("\n".join(lines) + "\n").encode()
    got = _stats_by_block(text, [])
    assert got["lines"] == 4 and got["queue_peak"] == 70 and got["median"] == 25.0


def test_peaks_are_the_decode_lines_own():
    lines = [_line("1.00", usage="0.30", queue=4), _line("2.00", usage="0.95", queue=2, shape="swa"),
             "[2026-05-02 10:00:00] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 1.00, "
             "#running-req: 0, #queue-req: 80, input throughput (token/s): 1.00"]
    text = ("\n".join(lines) + "\n").encode()
    for got in (_stats_by_lines(lines), _stats_by_block(text, [])):
        assert got["usage_peak"] == 0.95 and got["queue_peak"] == 4  # (not the prefill line's, not swa's 0.99)


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"\A(?:0|[1-9][0-9]{0,4})(?:\.[0-9]{1,4})?\Z"),
       st.from_regex(r"\A0{0,2}[0-9]{1,5}(?:\.[0-9]{0,4})?\Z"))
def test_greater_than_matches_exactly_the_larger_numbers(bound, number):
    assert (re.match(greater_than(bound).encode(), number.encode()) is not None) == (float(number) > float(bound))


def test_past_the_bound_a_sketch_within_half_a_percent(monkeypatch):
    monkeypatch.setattr(decode, "CENTS_CAP", 100_00)  # (values above 100 tok/s go to the keyed counter)
    monkeypatch.setattr(decode, "MAX_KEYS", 500)
    rng = random.Random(5)
    values = [round(rng.lognormvariate(6, 0.7), 2) for _ in range(20000)]
    s = DecodeStats()
    for i, v in enumerate(values, 1):
        s.add_line(_line(f"{v:.2f}"), i)
    got = s.summary()
    assert got["approximate"] and got["lines"] == len(values)
    for name, q in (("p10", 0.1), ("median", 0.5), ("p90", 0.9)):
        exact = _linear(values, q)
        assert abs(got[name] - exact) <= 0.005 * exact, name


def _restarted_log(path, decode_lines: int = 6000) -> None:
    """Two launches, decode lines (some without CUDA graphs) in both, a traceback in the middle."""
    rng = random.Random(9)
    out = []
    for launch in range(2):
        out.append(f"[2026-05-02 10:00:00] server_args=ServerArgs(model_path='/m{launch}', tp_size=1, "
                   f"mem_fraction_static=0.8{launch})")
        out.append("[2026-05-02 10:00:01] The server is fired up and ready to roll!")
        for i in range(decode_lines):
            out.append(_line(f"{rng.lognormvariate(5 + launch, 0.5):.2f}", i, f"{rng.uniform(0, 0.9):.2f}",
                             rng.randrange(3 + 40 * launch), "False" if i == 4000 else "True"))
            if launch == 0 and i == decode_lines // 2:
                out += ["[2026-05-02 10:00:00] Scheduler hit an exception: Traceback (most recent call last):",
                        '  File "/x/scheduler.py", line 1, in event_loop', "    f()",
                        "ValueError: boom"]
    path.write_text("\n".join(out) + "\n")


def _report(path, **opts):
    return diagnose([str(path)], _RULES[0], Options(**opts)).report.to_json_dict()


_RULES: list = []


@pytest.fixture(autouse=True)
def _rules(rules):
    _RULES[:] = [rules]


def test_a_file_split_over_two_processes_gives_the_single_pass_report(tmp_path, monkeypatch):
    log = tmp_path / "restarted.log"
    _restarted_log(log)
    one = _report(log)
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1)
    started = []
    real = split.Split
    monkeypatch.setattr(split, "Split", lambda *a: started.append(a) or real(*a))
    two = _report(log)
    assert started, "the file was not split"
    assert one == two
    slow = _report(log, fast=False)
    assert slow == one
    launches = one["launches"]
    assert len(launches) == 2 and all(la["startup"]["decode_throughput"]["lines"] == 6000 for la in launches)
    assert one["context"]["decode"]["cuda_graph_false_seen"] is True
    assert one["context"]["lines"]["decode.cuda_graph_false_seen"] == 2 + 6000 + 4 + 2 + 4000 + 1  # (the last launch: the report's context)


def test_follow_backlog_gives_the_batch_report(tmp_path):
    log = tmp_path / "restarted.log"
    _restarted_log(log)
    data = log.read_bytes()
    fol = Follower(_RULES[0], lambda f: None)
    for i in range(0, len(data), 300_000):  # a backlog: big pieces, cut anywhere
        fol.feed_bytes(data[i:i + 300_000])
    assert fol.analysis.slow < 1000  # (the block path: only hit lines were read one by one)
    got = fol.finish(log.name).report.to_json_dict()
    want = _report(log)
    got["inputs"] = want["inputs"] = None
    assert got == want


def test_values_past_the_array_or_with_other_decimals_stay_exact(monkeypatch):
    """Hundredths below the cap count in the array; values above it, or printed with one or three
    decimals, in the keyed counter; two stretches merged (arrays of different sizes) give the reference."""
    import pickle

    monkeypatch.setattr(decode, "CENTS_CAP", 5_000_00)
    rng = random.Random(11)
    texts = [f"{rng.uniform(0, 9000):.2f}" for _ in range(3000)] + ["12.5", "7.125", "6000.00", "0.00", "0099.99"]
    rng.shuffle(texts)
    first, second = DecodeStats(), DecodeStats()
    for i, t in enumerate(texts):
        (first if i < 40 else second).add_line(_line(t), i + 1)
    first = pickle.loads(pickle.dumps(first))  # (as a second process hands it over)
    first.merge(second)
    got = first.summary()
    values = [float(t) for t in texts]
    assert got["lines"] == len(values) and not got["approximate"]
    for name, q in (("p10", 0.1), ("median", 0.5), ("p90", 0.9)):
        assert got[name] == pytest.approx(_linear(values, q), abs=1e-6), name
    assert first._tp and len(first._cents) <= 5_000_00  # (both stores were used)


def _graphs_off_log(path, decode_lines: int = 4000) -> None:
    """A server without CUDA graphs: every decode line a decode-without-cuda-graph match, some with the
    pool full and a queue (kv-pool-saturated-queue), a traceback, a restart, and a decode line last."""
    rng = random.Random(4)
    out = []
    for launch in range(2):
        out.append(f"[2026-05-02 10:00:00] server_args=ServerArgs(model_path='/m{launch}', tp_size=1, "
                   f"disable_cuda_graph=True)")
        for i in range(decode_lines):
            full = rng.random() < 0.1
            out.append(_line(f"{rng.lognormvariate(4, 0.5):.2f}", i, "0.97" if full else "0.40",
                             rng.randrange(1, 9) if full else 0, "False"))
            if i % 700 == 5:
                out.append(f"[2026-05-02 10:00:00] INFO:     172.17.0.3:4000 - \"POST /generate HTTP/1.1\" 200 OK")
            if launch == 0 and i == decode_lines // 2:
                out += ["[2026-05-02 10:00:00] Scheduler hit an exception: Traceback (most recent call last):",
                        '  File "/x/scheduler.py", line 1, in event_loop', "    f()", "ValueError: boom"]
    path.write_text("\n".join(out) + "\n")


def test_lines_only_saturated_rules_read_are_counted_as_reading_them_would(tmp_path, monkeypatch):
    """Past its evidence a rule's further matches only add to its count: such lines are counted, not fed
    (a graphs-off server matches on every decode line); the report is the line-by-line one, whole file,
    split over two processes or followed."""
    from sglang_doctor.engine import analyze

    log = tmp_path / "graphs-off.log"
    _graphs_off_log(log)
    counted = []
    real = analyze._Analysis.count_line
    monkeypatch.setattr(analyze._Analysis, "count_line", lambda self, *a: counted.append(a[0]) or real(self, *a))
    one = _report(log)
    assert len(counted) > 7000
    slow = _report(log, fast=False)
    assert one == slow
    assert sorted(f["occurrences"] for f in one["findings"] if f["rule"] == "decode-without-cuda-graph") == [4000, 4000]
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1)
    assert _report(log) == slow
    fol = Follower(_RULES[0], lambda f: None)
    data = log.read_bytes()
    for i in range(0, len(data), 300_000):
        fol.feed_bytes(data[i:i + 300_000])
    got = fol.finish(log.name).report.to_json_dict()
    got["inputs"] = slow["inputs"] = None
    assert got == slow


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=0, max_value=(1 << 21) - 1), st.sampled_from([30, 5000, 1 << 21]),
       st.lists(st.tuples(st.integers(min_value=0, max_value=1 << 21), st.integers(0, 2)), min_size=1, max_size=300))
def test_merged_arrays_are_read_as_their_sum(base, spread, offsets):
    """Stretches merged keep their arrays apart; the summary read from them (chunk sums, one chunk added
    up where a quantile or a histogram edge falls) is the one of the sorted values."""
    # (a narrow spread puts many lines on each hundredth: a histogram edge then falls on counted ones)
    cents_and_part = [(min(base + o % spread, (1 << 21) - 1), k) for o, k in offsets]
    for sparse_max in (4, decode.SPARSE_MAX):  # arrays (and some stretches still sparse), or all sparse
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(decode, "SPARSE_MAX", sparse_max)
            _check_merged(cents_and_part)


def _check_merged(cents_and_part):
    parts = [DecodeStats() for _ in range(3)]
    for i, (c, k) in enumerate(cents_and_part):
        parts[k].add_line(_line(f"{c // 100}.{c % 100:02d}"), i + 1)
    merged = parts[0]
    merged.merge(parts[1])
    merged.merge(parts[2])
    got = merged.summary()
    values, cum = merged._sorted()
    listed = decode._Listed(values, cum)
    assert got["lines"] == len(cents_and_part) == listed.total
    for name, q in (("p10", 0.1), ("median", 0.5), ("p90", 0.9)):
        assert got[name] == round(decode.quantile(listed, q), 6)
        assert got[name] == pytest.approx(_linear([c / 100 for c, _ in cents_and_part], q), abs=1e-6)
    assert got["histogram"] == decode.histogram(listed, min(decode.HISTOGRAM_BINS, listed.total))


def test_few_decode_lines_hold_no_array():
    """A launch of a few decode lines at a high throughput (a crash-looping container: hundreds of them)
    keeps a handful of counts, not an array sized to the value."""
    import tracemalloc

    tracemalloc.start()
    launches = []
    for i in range(300):
        s = DecodeStats()
        for k in range(20):
            s.add_line(_line(f"{19000 + k}.{i % 100:02d}"), k + 1)
        launches.append(s)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * 1024 * 1024, peak  # (arrays sized to 19,000 tok/s: 300 x 16 MB)
    assert launches[7].summary()["lines"] == 20 and launches[7].summary()["median"] == 19009.57
