"""Stage one never drops a line that stage two would match, and the fast path equals the slow one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_doctor.engine import scan
from sglang_doctor.pipeline.run import Options, diagnose
from sglang_doctor.read.records import parse_header

pytestmark = pytest.mark.skipif(not scan.hyperscan_available(), reason="hyperscan wheel not importable")

WORDS = ["Not enough", "memory", "CUDA", "error", "graph", "TP0", "NCCL", "rank", "failed", "0.88", "=", ":", "(", ")"]
atom = st.one_of(
    st.sampled_from([regex.escape(w) for w in WORDS]),
    st.sampled_from([r"\d+", r"[0-9.]+", r"\w+", r"[^\n]*?", r"\s*", r".*?", r"(?:CUDA|NCCL)", r"(?P<n>\d+)"]),
)
patterns = st.lists(atom, min_size=1, max_size=5).map("".join)
lines = st.lists(st.sampled_from(WORDS + [" ", "12", "3.5", "x", "ÿ"]), min_size=0, max_size=12).map("".join)
headers = st.sampled_from(["", "[2025-01-01 10:00:00] ", "[2025-01-01 10:00:00 DP1 TP3] ",
                           "2025-01-01T10:00:00.123456789Z [2025-01-01 10:00:00 TP0] "])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pats=st.lists(patterns, min_size=1, max_size=6), body=st.lists(st.tuples(headers, lines), min_size=1, max_size=30))
def test_scanner_finds_every_line_a_full_regex_matches(pats, body):
    from sglang_doctor.read.reader import clean

    compiled = [regex.compile(p, regex.ASCII) for p in pats]  # as rules.Pattern compiles them
    sc = scan.Scanner(pats)
    raw_lines = [h + b for h, b in body]
    block = ("\n".join(raw_lines) + "\n").encode("utf-8")
    starts = set(sc.hits(block)[0])
    offset = 0
    for raw in raw_lines:
        text = clean(raw)
        h = parse_header(text)
        msg = h.message if h else text
        if any(rx.search(msg) for rx in compiled):
            assert offset in starts, (pats, raw)
        offset += len(raw.encode("utf-8")) + 1


def test_fast_path_equals_slow_path(tmp_path, rules):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from genlog import write_log

    big = tmp_path / "big.log"
    write_log(big, 3_000_000)
    fast = diagnose([str(big)], rules, Options(fast=True))
    slow = diagnose([str(big)], rules, Options(fast=False))
    key = lambda run: [(f.rule, f.severity, [(e.line, e.text) for e in f.evidence], f.occurrences)
                       for f in run.report.findings]
    assert key(fast) == key(slow)
    assert fast.results[0].slow_lines < slow.results[0].slow_lines / 2  # only the first block and the hits
    assert fast.report.findings[0].rule == "index-put-dtype-mismatch"


@settings(max_examples=200, deadline=None)
@given(lits=st.lists(st.text(alphabet="abcÿ€ \n-_.:0", min_size=1, max_size=6), min_size=1, max_size=20, unique=True),
       text=st.text(alphabet="abcÿ€ \n-_.:0xyz", max_size=200))
def test_literal_index_finds_exactly_the_literals_in_a_text(lits, text):
    assert scan.LiteralIndex(lits).present(text) == [i for i, lit in enumerate(lits) if lit in text]


def test_matcher_candidates_are_the_same_before_and_after_the_index(rules, demo_dir):
    from sglang_doctor.engine import analyze as engine

    texts = [ln for f in sorted(demo_dir.glob("*.log")) for ln in f.read_text().splitlines()]
    plain, indexed = engine.Matcher(rules), engine.Matcher(rules)
    plain._index = False  # as without Hyperscan: one `in` test per literal
    indexed._records = engine.INDEX_AFTER  # the next record builds the index
    for t in texts:
        assert [r.id for r in plain.candidates(t)] == [r.id for r in indexed.candidates(t)], t
    assert indexed._index


def test_an_anchored_pattern_without_a_literal_is_scanned_by_hyperscan_with_the_same_lines():
    """The package-version hint (facts/packages.py) has `^` alternatives and no required literal: it
    was scanned with `regex` over every byte (~0.3 s a MB); Hyperscan's multiline anchors on the raw
    block give the very lines that scan gave, on the real logs and on serving lines."""
    from sglang_doctor.facts.packages import HINT

    sc = scan.Scanner([HINT])
    assert sc.plan.hs_patterns == [HINT] and sc.plan.python_patterns == []
    root = Path(__file__).parent
    logs = sorted((root / "data" / "real").glob("*.log")) + sorted((root / "data" / "healthy").glob("*.log"))
    block = b"\n".join(p.read_bytes() for p in logs) + (
        b"[2026-05-02 00:00:01 DP0 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.04, "
        b"cuda graph: False, gen throughput (token/s): 451.20, #queue-req: 0, \n"
        b"Python: 3.10.12 (main)\nsgl_kernel: Module Not Found\nflashinfer-python        0.2.3\n")
    rx = regex.compile(HINT.encode(), regex.MULTILINE)
    want = sorted({block.rfind(b"\n", 0, m.end() - 1) + 1 if m.end() > 1 else 0 for m in rx.finditer(block)})
    assert len(want) > 200
    assert sc.hits(block)[0] == want
